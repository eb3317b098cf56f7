"""Traces of the real Hermes agent inside `hermes gateway run` (issue 24, part 2): a chat turn continuing the client's
`traceparent` is the request's SERVER span → `invoke_agent` → one `chat test-model` CLIENT span per provider call
(Hermes' `post_api_request` hook, in the agent's thread) and the real `terminal` tool's `execute_tool` span, all in
the client's trace, exported over OTLP/HTTP to the receiver of tests/otlp.py."""

from __future__ import annotations

import json
import secrets
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.live import TEST_KEY
from tests.otlp import ReceivedSpan, otlp_receiver, tracing_env

from .conftest import HomeFactory
from .provider import MODEL
from .support import PLUGINS, HermesGateway, listening


def named(spans: list[ReceivedSpan], prefix: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def test_a_hermes_turn_is_traced_with_its_provider_calls_and_its_tool(
    hermes_home: HomeFactory,
    run_hermes: Callable[[Path], HermesGateway],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trace_id, client_span = secrets.token_hex(16), secrets.token_hex(8)
    with otlp_receiver() as receiver:
        for name, value in tracing_env(receiver).items():
            monkeypatch.setenv(name, value)  # the gateway's environment is this process's (support.clean_env)
        gateway = run_hermes(hermes_home(env={"API_SERVER_PORT": "0"}, plugins=PLUGINS))
        port = listening(gateway)
        body = {"model": "hermes-agent", "messages": [{"role": "user", "content": "Inside hermes gateway: run it"}]}
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            data=json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {TEST_KEY}",
                "Content-Type": "application/json",
                "traceparent": f"00-{trace_id}-{client_span}-01",
            },
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            assert response.status == 200
            session_id = response.headers["X-Hermes-Session-Id"]
            json.loads(response.read())
        # Every span asserted on below: the request's SERVER span ends after the reply is written, so it may come in
        # an export batch after the turn's.
        spans = receiver.wait_for_spans(
            lambda s: (
                named(s, "POST /v1/chat/completions")
                and named(s, "invoke_agent")
                and len(named(s, "chat ")) >= 2
                and named(s, "execute_tool")
            ),
            timeout=30,
            what="the request's and the turn's spans",
        )
    [server] = named(spans, "POST /v1/chat/completions")
    [agent] = named(spans, "invoke_agent")
    chats = sorted(named(spans, "chat "), key=lambda s: s.start_ns)
    [tool] = named(spans, "execute_tool terminal")
    assert {s.trace_id for s in (server, agent, tool, *chats)} == {trace_id}
    assert server.parent_span_id == client_span and agent.parent_span_id == server.span_id
    assert tool.parent_span_id == agent.span_id
    assert agent.attributes["gen_ai.provider.name"] == "custom" and agent.attributes["gen_ai.request.model"] == MODEL
    assert agent.attributes["gen_ai.conversation.id"] == session_id
    assert len(chats) == 2  # the tool call, then the answer after the tool's result
    for chat in chats:
        assert chat.parent_span_id == agent.span_id and chat.kind == "CLIENT" and chat.name == f"chat {MODEL}"
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == MODEL
        assert chat.attributes["server.address"] == "127.0.0.1"
        assert agent.start_ns <= chat.start_ns <= chat.end_ns <= agent.end_ns
    assert chats[0].end_ns <= tool.start_ns and tool.end_ns <= chats[1].start_ns  # call → tool → call
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
