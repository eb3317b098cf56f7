"""The official OpenAI Python SDK against the real gateway process (WIRE.md §3, §3.6 client notes).

One gateway per module (`live_gateway`), scripted runtime, 1 s keepalive.
"""

from __future__ import annotations

import http.client
import json
import uuid
from collections.abc import Callable
from typing import Any

import openai
import pytest

from tests.helpers import EXHAUST_SUMMARY, USE_TOOL_ANSWER, USE_TOOL_REASONING
from tests.live import LiveGateway

from .compat import ROWS


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def reasoning_of(obj: Any) -> str | None:
    """`reasoning_content` is not in the SDK's types: read the attribute or model_extra."""
    value = getattr(obj, "reasoning_content", None)
    if value is None and obj.model_extra:
        value = obj.model_extra.get("reasoning_content")
    return value


def raw_stream(client: openai.OpenAI, text: str) -> tuple[list[Any], str, str]:
    chunks: list[Any] = []
    reasoning, content = [], []
    with client.chat.completions.create(model="hermes-agent", messages=user(text), stream=True) as stream:
        for chunk in stream:
            chunks.append(chunk)
            assert len(chunk.choices) == 1, chunk
            delta = chunk.choices[0].delta
            reasoning.append(reasoning_of(delta) or "")
            content.append(delta.content or "")
    return chunks, "".join(reasoning), "".join(content)


def test_raw_stream_yields_reasoning_content_and_usage(client: openai.OpenAI) -> None:
    """W-3.1–W-3.4 via the SDK: every chunk has one choice; reasoning, content, stop, usage on the finish chunk."""
    chunks, reasoning, content = raw_stream(client, "use tool")
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.choices[0].delta.role is None for c in chunks[1:])
    assert reasoning == USE_TOOL_REASONING
    assert content == USE_TOOL_ANSWER
    assert len({c.id for c in chunks}) == 1
    finish = chunks[-1]
    assert finish.choices[0].finish_reason == "stop"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])
    assert finish.usage is not None
    assert (finish.usage.prompt_tokens, finish.usage.completion_tokens, finish.usage.total_tokens) == (42, 17, 59)
    # Tool progress records reach the SDK as ordinary chunks with an empty delta (W-3.5).
    extras = [c.model_extra or {} for c in chunks]
    progress = [e for e in extras if e.get("status") in ("running", "completed")]
    assert [p["status"] for p in progress] == ["running", "completed"]
    assert all(p["tool"] == "terminal" for p in progress)


def test_stream_helper_final_completion_has_single_role_and_reasoning(client: openai.OpenAI) -> None:
    """W-3.1, W-3.14: `.stream().get_final_completion()` has role "assistant" exactly and the full reasoning."""
    _, raw_reasoning, _ = raw_stream(client, "use tool")
    with client.chat.completions.stream(model="hermes-agent", messages=user("use tool")) as stream:
        completion = stream.get_final_completion()
    message = completion.choices[0].message
    assert message.role == "assistant"
    assert message.content == USE_TOOL_ANSWER
    assert reasoning_of(message) == raw_reasoning == USE_TOOL_REASONING
    assert completion.choices[0].finish_reason == "stop"
    assert message.tool_calls is None or message.tool_calls == []


def test_non_stream_create_returns_content_reasoning_and_usage(client: openai.OpenAI) -> None:
    """W-3.8: the JSON reply (early head, §1.11) parses into a ChatCompletion with reasoning_content."""
    completion = client.chat.completions.create(model="hermes-agent", messages=user("use tool"))
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    message = completion.choices[0].message
    assert message.role == "assistant"
    assert message.content == USE_TOOL_ANSWER
    assert reasoning_of(message) == USE_TOOL_REASONING
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (
        42,
        17,
        59,
    )


def test_run_and_session_headers_visible_through_raw_response(client: openai.OpenAI) -> None:
    """§3.1: X-Hermes-Run-Id and X-Hermes-Session-Id reach SDK users through with_raw_response."""
    raw = client.chat.completions.with_raw_response.create(model="hermes-agent", messages=user("hello"))
    completion = raw.parse()
    assert completion.choices[0].message.content == "Hello from the scripted runtime."
    assert raw.headers["x-hermes-run-id"].startswith("run_")
    assert raw.headers["x-hermes-session-id"].startswith("api-")


def test_budget_exhausted_stream_helper_raises_length_error_with_summary(client: openai.OpenAI) -> None:
    """W-3.12 (chat): `.stream().get_final_completion()` raises LengthFinishReasonError carrying the summary,
    while raw iteration yields it normally."""
    with client.chat.completions.stream(model="hermes-agent", messages=user("exhaust")) as stream:
        with pytest.raises(openai.LengthFinishReasonError) as caught:
            stream.get_final_completion()
    partial = caught.value.completion
    assert partial.choices[0].finish_reason == "length"
    assert partial.choices[0].message.content == EXHAUST_SUMMARY
    chunks, _, content = raw_stream(client, "exhaust")
    assert content == EXHAUST_SUMMARY
    assert chunks[-1].choices[0].finish_reason == "length"
    hermes = (chunks[-1].model_extra or {}).get("hermes")
    assert hermes == {"completed": False, "partial": True, "failed": False, "error_code": "iteration_budget_exhausted"}


def test_failed_turn_raises_api_error_while_streaming(client: openai.OpenAI) -> None:
    """§3.6 notes: the root `error` of a failed turn's finish chunk makes the SDK raise APIError mid-stream."""
    seen: list[Any] = []
    with pytest.raises(openai.APIError) as caught:
        with client.chat.completions.create(model="hermes-agent", messages=user("fail early"), stream=True) as stream:
            for chunk in stream:
                seen.append(chunk)
    assert "Provider authentication failed" in str(caught.value)
    assert caught.value.body == {
        "message": "Provider authentication failed",
        "type": "server_error",
        "param": None,
        "code": "agent_error",
    }
    assert not isinstance(caught.value, openai.APIStatusError), "the head was 200; the failure is in-stream"
    assert seen and seen[0].choices[0].delta.role == "assistant"


def test_failed_turn_non_stream_returns_error_finish(client: openai.OpenAI) -> None:
    """W-3.8: a failed turn's JSON reply is 200 with finish_reason error (no SDK retry of a 5xx)."""
    completion = client.chat.completions.create(model="hermes-agent", messages=user("fail early"))
    assert completion.choices[0].finish_reason == "error"
    extra = completion.model_extra or {}
    assert extra["error"]["code"] == "agent_error"
    assert extra["hermes"]["failed"] is True


def test_wrong_key_raises_authentication_error(live_gateway: LiveGateway) -> None:
    """W-1.3: a wrong key → 401 gateway_auth_failed → openai.AuthenticationError."""
    sdk = openai.OpenAI(base_url=live_gateway.url + "/v1", api_key="wrong-key-0123456789abcdef", max_retries=0)
    try:
        with pytest.raises(openai.AuthenticationError) as caught:
            sdk.chat.completions.create(model="hermes-agent", messages=user("hello"))
    finally:
        sdk.close()
    assert caught.value.status_code == 401
    assert caught.value.code == "gateway_auth_failed"
    assert caught.value.type == "gateway_auth_error"


def test_invalid_request_raises_bad_request_error(client: openai.OpenAI) -> None:
    """W-3.9, W-1.7: an assistant message last → 400 missing_user_message → openai.BadRequestError."""
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="hermes-agent",
            messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        )
    assert caught.value.status_code == 400
    assert caught.value.code == "missing_user_message"
    assert caught.value.param == "messages"
    with pytest.raises(openai.BadRequestError) as empty:
        client.chat.completions.create(model="hermes-agent", messages=[])
    assert empty.value.code == "missing_required_parameter"


def test_idempotency_key_reused_with_other_input_raises_conflict_error(client: openai.OpenAI) -> None:
    """§5.3, W-1.7: the same Idempotency-Key with a different input → 409 admission_conflict →
    openai.ConflictError (nothing executed); an exact retry replays the first answer."""
    headers = {"Idempotency-Key": f"sdk-conflict-{uuid.uuid4().hex}"}
    first = client.chat.completions.create(model="hermes-agent", messages=user("hello"), extra_headers=headers)
    replay = client.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=user("hello"), extra_headers=headers
    )
    assert replay.headers["idempotency-replayed"] == "true"
    assert replay.parse().id == first.id
    with pytest.raises(openai.ConflictError) as caught:
        client.chat.completions.create(model="hermes-agent", messages=user("hello, other input"), extra_headers=headers)
    assert caught.value.status_code == 409
    assert caught.value.code == "admission_conflict"
    assert caught.value.type == "invalid_request_error"
    assert caught.value.body == {
        "message": "admission_conflict",
        "type": "invalid_request_error",
        "param": None,
        "code": "admission_conflict",
    }


def hold_a_turn(gateway: LiveGateway, path: str, body: dict[str, Any]) -> http.client.HTTPConnection:
    """Open a stream of the script's "hang" turn (a 600 s tool) and return once its head arrived: the turn is
    admitted and counts toward the cap until the connection closes (disconnect cancels it)."""
    conn = http.client.HTTPConnection(gateway.host, gateway.port, timeout=30)
    conn.request("POST", path, body=json.dumps(body), headers={**gateway.headers, "Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200
    return conn


def test_concurrency_cap_raises_rate_limit_error_with_retry_after(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    """§1.8, W-1.7: with api_server.max_concurrent_runs 1 and a turn running, a new turn → 429 rate_limit_exceeded
    with Retry-After: 1 → openai.RateLimitError carrying the header."""
    gateway = gateway_factory(config={"api_server": {"max_concurrent_runs": 1}})
    held = hold_a_turn(
        gateway, "/v1/chat/completions", {"model": "hermes-agent", "stream": True, "messages": user("hang")}
    )
    sdk = openai.OpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0, timeout=30.0)
    try:
        with pytest.raises(openai.RateLimitError) as caught:
            sdk.chat.completions.create(model="hermes-agent", messages=user("hello"))
    finally:
        sdk.close()
        held.close()
    error = caught.value
    assert error.status_code == 429
    assert error.response.headers["retry-after"] == "1"
    assert (error.code, error.type) == ("rate_limit_exceeded", "rate_limit_error")
    assert error.body == {
        "message": "Too many concurrent runs (max 1)",
        "type": "rate_limit_error",
        "param": None,
        "code": "rate_limit_exceeded",
    }


def test_readme_compat_row_matches_what_the_sdk_shows(client: openai.OpenAI) -> None:
    """README client table (tests/clients/compat.py, row openai-python): chat, Responses, reasoning and tool
    progress all reach Python SDK users."""
    row = ROWS["openai-python"]
    chunks, reasoning, content = raw_stream(client, "use tool")
    progress = [c for c in chunks if (c.model_extra or {}).get("status") in ("running", "completed")]
    response = client.responses.create(model="hermes-agent", input="use tool")
    summaries = [s.text for i in response.output if i.type == "reasoning" for s in i.summary]
    tools = [i.type for i in response.output if i.type.startswith("function_call")]
    assert row.chat.works is (content == USE_TOOL_ANSWER)
    assert row.responses.works is (response.status == "completed")
    assert row.reasoning.works is (reasoning == USE_TOOL_REASONING and len(summaries) == 2)
    assert row.tool_progress.works is (len(progress) == 2 and tools == ["function_call", "function_call_output"])
