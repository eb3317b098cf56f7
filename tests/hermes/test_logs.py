"""Logs that correlate on the real Hermes agent (issue 24, part 3): the reference gateway with the `hermes` runtime and
`api_server.logging.format: json`. The agent runs in a thread of its own, in a copy of its turn's context
(runtimes/hermes.py): what hermes-agent logs there carries the turn's run, session and route."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers import chat_body, live_request
from tests.live import start_gateway

from .conftest import HomeFactory


def test_lines_the_agent_logs_in_its_thread_carry_the_turn(hermes_home: HomeFactory) -> None:
    home = hermes_home(api_server={"logging": {"format": "json"}})
    live = start_gateway(home, timeout=60)
    try:
        body = chat_body("Logged: run it", stream=False)
        reply = live_request(live, "POST", "/v1/chat/completions", body, timeout=120)
    finally:
        live.stop()
    assert reply.status == 200
    lines: list[dict[str, Any]] = [json.loads(line) for line in live.lines if line.startswith("{")]
    turn = {
        "route": "/v1/chat/completions",
        "run_id": reply.headers["X-Hermes-Run-Id"],
        "session_id": reply.headers["X-Hermes-Session-Id"],
    }
    # hermes-agent's own lines from the agent's thread: the turn it starts, each provider call it made
    [started] = [line for line in lines if line["message"].startswith("conversation turn:")]
    calls = [line for line in lines if line["message"].startswith("API call #")]
    assert started["logger"] == "agent.turn_context" and len(calls) == 2
    for line in (started, *calls):
        assert {key: line.get(key) for key in turn} == turn, line
    # before the turn, nothing names one
    [listening] = [line for line in lines if "API server listening" in line["message"]]
    assert not set(turn) & set(listening)
