"""Traces (issue 24, part 2): the real reference gateway exports OTLP/HTTP to a real receiver on loopback
(tests/otlp.py decodes the protobuf with the official `opentelemetry-proto` classes). A chat turn with a tool is the
request's SERVER span → `invoke_agent` → `execute_tool`, one trace continuing the client's `traceparent`; a
background turn stays the child of the request that created it; content only when asked, redacted; off by default,
with OpenTelemetry never imported."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import chat_body, live_request, wait_for
from tests.live import LiveGateway, start_gateway, write_home
from tests.otlp import OtlpReceiver, ReceivedSpan, otlp_receiver, tracing_env

SECRET = "sk-abcdefghijklmnopqrstuvwx"  # looks like a provider key: redacted wherever content is recorded


def traceparent() -> tuple[str, str, str]:
    """A client's W3C `traceparent` (sampled), with its trace id and span id."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id, span_id


def named(spans: list[ReceivedSpan], prefix: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def turn_spans_arrived(spans: list[ReceivedSpan]) -> bool:
    return bool(named(spans, "invoke_agent") and named(spans, "execute_tool") and named(spans, "POST "))


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with otlp_receiver() as running:
        yield running


def traced_gateway(tmp_path: Path, receiver: OtlpReceiver, **env: str) -> LiveGateway:
    return start_gateway(write_home(tmp_path / "home"), {**tracing_env(receiver), **env})


@pytest.fixture
def gateway(tmp_path: Path, receiver: OtlpReceiver) -> Iterator[LiveGateway]:
    live = traced_gateway(tmp_path, receiver)
    yield live
    live.stop()


def tool_call_id(raw: bytes) -> str:
    """The tool call id the chat stream's tool progress chunks name (WIRE.md §3.3)."""
    for line in raw.decode().splitlines():
        if line.startswith("data: {") and '"toolCallId"' in line:
            return str(json.loads(line[6:])["toolCallId"])
    raise AssertionError("no tool progress in the stream")


def test_a_chat_turn_with_a_tool_is_one_trace_request_agent_tool_continuing_the_traceparent(
    gateway: LiveGateway, receiver: OtlpReceiver
) -> None:
    header, trace_id, client_span = traceparent()
    headers = {"traceparent": header, "User-Agent": "frontend/1.0"}
    reply = live_request(gateway, "POST", "/v1/chat/completions", chat_body("use tool"), headers)
    assert reply.status == 200
    spans = receiver.wait_for_spans(turn_spans_arrived)
    [request] = named(spans, "POST /v1/chat/completions")
    [agent] = named(spans, "invoke_agent")
    [tool] = named(spans, "execute_tool")

    assert {s.trace_id for s in (request, agent, tool)} == {trace_id}  # the client's trace, continued
    assert request.parent_span_id == client_span and request.kind == "SERVER"
    assert agent.parent_span_id == request.span_id and agent.kind == "INTERNAL"
    assert tool.parent_span_id == agent.span_id and tool.kind == "INTERNAL"

    assert request.attributes == {
        "http.request.method": "POST",
        "http.route": "/v1/chat/completions",
        "url.path": "/v1/chat/completions",
        "url.scheme": "http",
        "server.address": "127.0.0.1",
        "server.port": gateway.port,
        "http.response.status_code": 200,
        "user_agent.original": "frontend/1.0",
    }
    assert agent.name == "invoke_agent hermes-agent"
    assert agent.attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "hermes-agent",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "hermes-agent",
        "gen_ai.conversation.id": reply.headers["X-Hermes-Session-Id"],
        "gen_ai.response.id": reply.headers["X-Hermes-Run-Id"],
        "gen_ai.usage.input_tokens": 42,
        "gen_ai.usage.output_tokens": 17,
        "gen_ai.response.finish_reasons": ("stop",),
        "hermes.turn.status": "completed",
    }
    assert tool.name == "execute_tool terminal"
    assert tool.attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "terminal",
        "gen_ai.tool.call.id": tool_call_id(reply.raw),
        "gen_ai.tool.type": "function",
    }
    assert tool.status == agent.status == request.status == "UNSET"
    # the script's tool runs 0.2 s, inside its turn, inside its request
    assert 0.15e9 <= tool.end_ns - tool.start_ns <= 1e9
    assert request.start_ns <= agent.start_ns <= tool.start_ns and tool.end_ns <= agent.end_ns <= request.end_ns
    assert agent.resource["service.name"] == "hermes-api-plugin" and agent.scope == "hermes_api_plugin"


def test_without_a_traceparent_the_request_starts_the_trace_and_capabilities_say_tracing(
    gateway: LiveGateway, receiver: OtlpReceiver
) -> None:
    assert live_request(gateway, "GET", "/v1/capabilities").json()["features"]["tracing"] is True
    assert live_request(gateway, "POST", "/v1/chat/completions", chat_body("use tool")).status == 200
    spans = receiver.wait_for_spans(turn_spans_arrived)
    [request] = named(spans, "POST /v1/chat/completions")
    [agent] = named(spans, "invoke_agent")
    assert request.parent_span_id == "" and agent.trace_id == request.trace_id
    [capabilities] = named(spans, "GET /v1/capabilities")
    assert capabilities.trace_id != request.trace_id  # one trace per request


def test_a_background_turn_stays_the_child_of_the_request_that_created_it(
    gateway: LiveGateway, receiver: OtlpReceiver
) -> None:
    """The turn outlives its request: POST /v1/responses (background) answers at once, the turn runs on; polls are
    requests of their own, and the turn's spans stay in the creating request's trace."""
    header, trace_id, _ = traceparent()
    body = {"model": "hermes-agent", "input": "use tool", "background": True}
    created = live_request(gateway, "POST", "/v1/responses", body, {"traceparent": header}).json()
    wait_for(
        lambda: live_request(gateway, "GET", f"/v1/responses/{created['id']}").json()["status"],
        until=lambda status: status == "completed",
    )
    spans = receiver.wait_for_spans(lambda s: named(s, "invoke_agent") and named(s, "POST /v1/responses"))
    [post] = named(spans, "POST /v1/responses")
    [agent] = named(spans, "invoke_agent")
    [tool] = named(spans, "execute_tool")
    assert agent.parent_span_id == post.span_id and agent.trace_id == post.trace_id == trace_id
    assert tool.parent_span_id == agent.span_id
    assert agent.end_ns > post.end_ns  # it ran on after its request had answered
    polls = named(spans, "GET /v1/responses/{response_id}")
    assert polls and all(p.trace_id != trace_id for p in polls)


def test_a_failed_turn_is_an_error_span_with_its_error_type(gateway: LiveGateway, receiver: OtlpReceiver) -> None:
    assert live_request(gateway, "POST", "/v1/chat/completions", chat_body("fail early", stream=False)).status == 200
    [agent] = named(receiver.wait_for_spans(lambda s: named(s, "invoke_agent")), "invoke_agent")
    assert agent.status == "ERROR"
    assert agent.attributes["error.type"] == "agent_error" and agent.attributes["hermes.turn.status"] == "failed"


def test_message_content_is_recorded_only_when_asked_and_redacted(tmp_path: Path, receiver: OtlpReceiver) -> None:
    """OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: the input, the answer, the tool's arguments and
    result, credentials masked as the logs mask them. (Off, the first test shows none of these attributes.)"""
    live = traced_gateway(tmp_path, receiver, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    try:
        text = f"use tool, my key is {SECRET}"
        assert live_request(live, "POST", "/v1/chat/completions", chat_body(text, stream=False)).status == 200
        spans = receiver.wait_for_spans(turn_spans_arrived)
    finally:
        live.stop()
    [agent] = named(spans, "invoke_agent")
    [tool] = named(spans, "execute_tool")
    assert json.loads(agent.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "use tool, my key is ***"}]}
    ]
    assert json.loads(agent.attributes["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Your project has README.md and src/."}],
            "finish_reason": "stop",
        }
    ]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"command": "ls -la"}
    assert tool.attributes["gen_ai.tool.call.result"] == "README.md\nsrc/"
    assert all(SECRET not in str(s.attributes) for s in spans)


def test_api_server_tracing_config_alone_turns_tracing_on_with_its_service_name_and_ratio(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    """config.yaml instead of the variables: `endpoint` (a base URL), `service_name`; `sample_ratio: 0` samples no
    new trace, while a sampled incoming `traceparent` is still followed (parent-based)."""
    tracing = {"endpoint": receiver.endpoint, "service_name": "team-gateway", "sample_ratio": 0}
    home = write_home(tmp_path / "home", config={"api_server": {"sse_keepalive_seconds": 1, "tracing": tracing}})
    live = start_gateway(home, {"OTEL_BSP_SCHEDULE_DELAY": "50"})
    try:
        assert live_request(live, "POST", "/v1/chat/completions", chat_body("use tool", stream=False)).status == 200
        header, trace_id, _ = traceparent()
        headers = {"traceparent": header}
        assert live_request(live, "POST", "/v1/chat/completions", chat_body("use tool"), headers).status == 200
        spans = receiver.wait_for_spans(turn_spans_arrived)
    finally:
        live.stop()
    assert {s.trace_id for s in spans} == {trace_id}  # the unsampled first request left nothing
    assert {s.resource["service.name"] for s in spans} == {"team-gateway"}


def imported_modules(live: LiveGateway) -> list[str]:
    """The modules the gateway imported, from its `-X importtime` lines (PYTHONPROFILEIMPORTTIME=1)."""
    return [line.rsplit("|", 1)[1].strip() for line in live.lines if line.startswith("import time:") and "|" in line]


@pytest.mark.parametrize("on", [False, True], ids=["off", "on"])
def test_tracing_is_off_by_default_and_then_never_imports_opentelemetry(
    tmp_path: Path, receiver: OtlpReceiver, on: bool
) -> None:
    """No OTEL_EXPORTER_OTLP_* and no api_server.tracing: no span is exported, capabilities say `tracing: false`, and
    the process never imports OpenTelemetry (each import it made, read from Python's import-time profile, after a
    turn). With the variables set the same check sees the SDK imported: the check can fail."""
    env = {"PYTHONPROFILEIMPORTTIME": "1", **(tracing_env(receiver) if on else {})}
    live = start_gateway(write_home(tmp_path / "home"), env)
    try:
        assert live_request(live, "GET", "/v1/capabilities").json()["features"]["tracing"] is on
        assert live_request(live, "POST", "/v1/chat/completions", chat_body("use tool", stream=False)).status == 200
        if on:
            receiver.wait_for_spans(turn_spans_arrived)
    finally:
        live.stop()
    otel = [name for name in imported_modules(live) if name.startswith("opentelemetry")]
    assert imported_modules(live)  # the profile was read
    if on:
        assert "opentelemetry.sdk.trace" in otel
    else:
        assert otel == [] and receiver.spans() == [] and receiver.exports == 0
