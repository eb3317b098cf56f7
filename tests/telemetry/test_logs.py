"""Logs that correlate (issue 24, part 3): `api_server.logging.format: json` makes every line one JSON object, and a
line logged during a turn names its run, session, route and (tracing on) trace; secrets are masked in both formats.

The live tests make a turn log: the observer plugin (tests/gateway/observer_plugin.py) fails in its turn-start hook
with the turn's input in its error, and the gateway logs that from the turn's own task.
"""

from __future__ import annotations

import contextvars
import json
import logging
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_api_plugin.telemetry.log_context import bind_request, bind_trace, bind_turn
from hermes_api_plugin.telemetry.log_format import JsonFormatter, RedactingFormatter
from tests.gateway.observer_plugin import observer_env
from tests.helpers import chat_body, live_request
from tests.live import TEST_KEY, LiveGateway, start_gateway, write_home
from tests.otlp import otlp_receiver, tracing_env

SECRET = "sk-abcdefghijklmnopqrstuvwx"


def record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise RuntimeError(f"failed with {TEST_KEY}")
        except RuntimeError:
            exc_info = sys.exc_info()
    return logging.LogRecord("hermes_api_plugin", logging.WARNING, __file__, 1, message, args, exc_info)


def test_a_json_line_carries_the_fields_of_the_context_that_logged_it_and_masks_secrets() -> None:
    formatter = JsonFormatter([TEST_KEY])

    def in_a_turn() -> dict[str, Any]:
        bind_request("/v1/responses/{response_id}")
        bind_turn("run_1", "sess_1")
        bind_trace("0af7651916cd43dd8448eb211c80319c")
        return json.loads(formatter.format(record("key %s and Bearer %s", TEST_KEY, SECRET, exc=True)))

    line = contextvars.copy_context().run(in_a_turn)
    assert line.pop("ts").endswith("Z")
    assert line.pop("exception").endswith("RuntimeError: failed with ***")
    assert line == {
        "level": "WARNING",
        "logger": "hermes_api_plugin",
        "message": "key *** and Bearer ***",
        "route": "/v1/responses/{response_id}",
        "run_id": "run_1",
        "session_id": "sess_1",
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
    }
    # outside any request or turn: no correlation fields at all
    assert set(json.loads(formatter.format(record("plain")))) == {"ts", "level", "logger", "message"}


def test_a_text_line_is_the_message_alone_with_its_secrets_masked() -> None:
    text = RedactingFormatter([TEST_KEY]).format(record("token=%s key %s", "abc", TEST_KEY, exc=True))
    assert text.splitlines()[0] == "token=*** key ***"
    assert TEST_KEY not in text and text.endswith("RuntimeError: failed with ***")


def json_lines(live: LiveGateway) -> list[dict[str, Any]]:
    lines = []
    for line in live.lines:
        if line.startswith("{"):
            lines.append(json.loads(line))
    return lines


@pytest.mark.parametrize("traced", [False, True], ids=["logs", "logs-and-traces"])
def test_a_turn_logs_json_lines_with_its_run_session_route_and_trace(tmp_path: Path, traced: bool) -> None:
    config = {"api_server": {"sse_keepalive_seconds": 1, "logging": {"format": "json"}}}
    env, _ = observer_env(tmp_path, fail=True)
    trace_id = secrets.token_hex(16)
    headers = {"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01"}
    with otlp_receiver() as receiver:
        live = start_gateway(
            write_home(tmp_path / "home", config=config), {**env, **(tracing_env(receiver) if traced else {})}
        )
        try:
            text = f"use tool with {SECRET}"
            reply = live_request(live, "POST", "/v1/chat/completions", chat_body(text, stream=False), headers)
        finally:
            live.stop()
    assert reply.status == 200
    lines = json_lines(live)
    assert len(lines) == len([line for line in live.lines if line.strip()])  # every line is JSON
    run_id = reply.headers["X-Hermes-Run-Id"]
    [failed] = [line for line in lines if "hermes_api_agent_turn_start failed" in line["message"]]
    assert failed["message"] == f"[API Server] a plugin's hermes_api_agent_turn_start failed on turn {run_id}"
    assert failed["level"] == "ERROR"
    assert failed["run_id"] == run_id
    assert failed["session_id"] == reply.headers["X-Hermes-Session-Id"]
    assert failed["route"] == "/v1/chat/completions"
    assert failed.get("trace_id") == (trace_id if traced else None)
    # the plugin's error quoted the input: its key-like secret is masked in the traceback
    assert "RuntimeError: observer bug in hermes_api_agent_turn_start on 'use tool with ***'" in failed["exception"]
    assert SECRET not in live.output()
    [listening] = [line for line in lines if "API server listening" in line["message"]]
    assert listening["level"] == "INFO" and "run_id" not in listening and "route" not in listening
