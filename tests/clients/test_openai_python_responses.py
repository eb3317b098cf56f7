"""The official OpenAI Python SDK against the real gateway process: the Responses API (WIRE.md §4, §3.6 notes).

One gateway per module (`live_gateway`), scripted runtime (tests/scripts/chat.yaml), 1 s keepalive.
The "use tool" turn is: reasoning, terminal tool ("ls -la" → "README.md\\nsrc/"), commentary, reasoning,
answer text, usage 42/17.
"""

from __future__ import annotations

import http.client
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import openai
import pytest

from tests.helpers import (
    COMMENTARY,
    DEFAULT_ANSWER,
    ERROR_KEYS,
    EXHAUST_SUMMARY,
    MODEL,
    TOOL_RESULT,
    USE_TOOL_ANSWER,
    USE_TOOL_TYPES,
    execution_for,
)
from tests.live import LiveGateway

FIRST_REASONING = "I should look at the files first."
SECOND_REASONING = "Two entries."
TOOL_ARGUMENTS = '{"command":"ls -la"}'


def phase_of(item: Any) -> str | None:
    """`phase` is typed on recent SDK message items; older ones keep it in model_extra."""
    value = getattr(item, "phase", None)
    if value is None and item.model_extra:
        value = item.model_extra.get("phase")
    return value


def message_text(item: Any) -> str:
    return "".join(part.text for part in item.content)


def final_answer(response: Any) -> str:
    """What WIRE §4.2 tells clients to show: message items that are not commentary."""
    return "".join(message_text(i) for i in response.output if i.type == "message" and phase_of(i) != "commentary")


def assert_use_tool_output(response: Any) -> str:
    """The §4.2/§4.3 item structure of the "use tool" turn; returns the tool's call_id."""
    output = response.output
    assert [item.type for item in output] == USE_TOOL_TYPES
    first, call, result, commentary, second, answer = output
    assert first.summary[0].type == "summary_text"
    assert first.summary[0].text == FIRST_REASONING
    assert first.status == "completed"
    assert second.summary[0].text == SECOND_REASONING
    assert (call.name, call.arguments, call.status) == ("terminal", TOOL_ARGUMENTS, "completed")
    assert call.call_id
    assert result.call_id == call.call_id
    assert result.output == TOOL_RESULT
    assert result.status == "completed"
    assert phase_of(commentary) == "commentary"
    assert message_text(commentary) == COMMENTARY
    assert phase_of(answer) == "final_answer"
    assert (answer.role, answer.status) == ("assistant", "completed")
    assert message_text(answer) == USE_TOOL_ANSWER
    assert [phase_of(i) for i in output if i.type == "message"].count("final_answer") == 1
    for item, prefix in zip(output, ("rs", "fc", "fco", "msg", "rs", "msg")):
        assert re.fullmatch(prefix + r"_[0-9a-f]{24}", item.id), item.id
    assert len({item.id for item in output}) == len(output)
    assert all(part.annotations == [] for part in answer.content)
    # The SDK's output_text concatenates every message item, commentary included (§4.2);
    # filtering on phase yields the answer.
    assert response.output_text == COMMENTARY + USE_TOOL_ANSWER
    assert final_answer(response) == USE_TOOL_ANSWER
    return call.call_id


def history_view(history: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(role, text, tool calls, tool_call_id) of each message the agent received as history."""
    view = []
    for message in history:
        text = "".join(p.get("text", "") for p in message.get("content") or [] if isinstance(p, dict))
        calls = tuple(
            (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []
        )
        view.append((message["role"], text, calls, message.get("tool_call_id")))
    return view


def expected_chain_history(call_id: str, second_input: str) -> list[tuple[Any, ...]]:
    return [
        ("user", "use tool", (), None),
        ("assistant", "", ((call_id, "terminal", TOOL_ARGUMENTS),), None),
        ("tool", TOOL_RESULT, (), call_id),
        ("assistant", USE_TOOL_ANSWER, (), None),
        ("user", second_input, (), None),
        ("assistant", DEFAULT_ANSWER, (), None),
    ]


# -- W-4.1–W-4.8, W-4.18: the stream helper ----------------------------------------------------------------


def test_stream_helper_final_response_has_reasoning_tool_pair_commentary_and_final_answer(
    client: openai.OpenAI,
) -> None:
    """W-4.1, W-4.2, W-4.6, W-4.7, W-4.8, W-4.18: `responses.stream()` iterates the whole stream without error and
    `get_final_response()` carries the reasoning item, the function_call + function_call_output pair, the commentary
    and the final answer with phase final_answer."""
    with client.responses.stream(model=MODEL, input="use tool") as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[0].response.output == []
    assert events[-1].type == "response.completed"
    assert sum(e.type in ("response.completed", "response.failed", "response.incomplete") for e in events) == 1
    assert len({e.response.id for e in events if hasattr(e, "response")}) == 1
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == USE_TOOL_ANSWER
    reasoning_deltas = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    assert reasoning_deltas == FIRST_REASONING + SECOND_REASONING
    assert final.status == "completed"
    assert re.fullmatch(r"resp_[0-9a-f]{32}", final.id)
    assert final.id == events[0].response.id
    assert_use_tool_output(final)
    assert final.model_dump(warnings=False) == events[-1].response.model_dump(warnings=False)


def test_hosted_tools_parse_into_the_sdk_mcp_call_types(client: openai.OpenAI) -> None:
    """W-15.3 through the SDK: with a client function tool declared, no server tool is rendered as a function_call —
    `responses.stream()` yields the typed MCP call events and the final response's server tool is an `McpCall`
    (server_label "hermes"), which the SDK's tool loop helpers never treat as a call to run."""
    from openai.types.responses import (
        ResponseMcpCallArgumentsDeltaEvent,
        ResponseMcpCallArgumentsDoneEvent,
        ResponseMcpCallCompletedEvent,
        ResponseMcpCallInProgressEvent,
    )
    from openai.types.responses.response_output_item import McpCall

    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    with client.responses.stream(model=MODEL, input="use tool", tools=[tool]) as stream:
        events = list(stream)
        final = stream.get_final_response()
    typed = [
        type(e)
        for e in events
        if isinstance(
            e,
            ResponseMcpCallInProgressEvent
            | ResponseMcpCallArgumentsDeltaEvent
            | ResponseMcpCallArgumentsDoneEvent
            | ResponseMcpCallCompletedEvent,
        )
    ]
    assert typed == [
        ResponseMcpCallInProgressEvent,
        ResponseMcpCallArgumentsDeltaEvent,
        ResponseMcpCallArgumentsDoneEvent,
        ResponseMcpCallCompletedEvent,
    ]
    assert [item.type for item in final.output] == ["reasoning", "mcp_call", "message", "reasoning", "message"]
    call = final.output[1]
    assert isinstance(call, McpCall)
    assert (call.server_label, call.name, call.arguments, call.output, call.status) == (
        "hermes",
        "terminal",
        TOOL_ARGUMENTS,
        TOOL_RESULT,
        "completed",
    )
    assert final_answer(final) == USE_TOOL_ANSWER


def test_non_stream_create_returns_the_same_structure_with_usage(client: openai.OpenAI) -> None:
    """W-4.9, §4.5: a non-streaming create returns a completed Response with the same items and usage 42/17;
    `responses.retrieve()` returns the stored object unchanged (W-4.12)."""
    response = client.responses.create(model=MODEL, input="use tool")
    assert response.object == "response"
    assert response.status == "completed"
    assert response.model == MODEL
    assert response.error is None and response.incomplete_details is None
    assert response.previous_response_id is None
    assert_use_tool_output(response)
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (42, 17, 59)
    assert response.usage.input_tokens_details.cached_tokens == 0
    assert response.usage.output_tokens_details.reasoning_tokens == 0
    stored = client.responses.retrieve(response.id)
    assert stored.model_dump(warnings=False) == response.model_dump(warnings=False)


def test_stream_resume_through_the_sdk_yields_only_later_events(client: openai.OpenAI) -> None:
    """W-4.12, W-2.2: `responses.stream(response_id=…, starting_after=N)` replays exactly the events after N of a
    stored response, and its final response equals the stored object."""
    response = client.responses.create(model=MODEL, input="use tool")
    with client.responses.stream(response_id=response.id) as stream:
        everything = list(stream)
    assert [e.sequence_number for e in everything] == list(range(len(everything)))
    cut = len(everything) // 2
    with client.responses.stream(response_id=response.id, starting_after=cut) as stream:
        rest = list(stream)
        final = stream.get_final_response()
    assert [e.model_dump(warnings=False) for e in rest] == [e.model_dump(warnings=False) for e in everything[cut + 1 :]]
    assert (final.id, final.status) == (response.id, "completed")
    assert [item.id for item in final.output] == [item.id for item in response.output]
    assert_use_tool_output(final)


# -- W-4.10, §4.7: chaining --------------------------------------------------------------------------------


def test_previous_response_id_chain_gives_the_agent_the_whole_transcript(
    client: openai.OpenAI, live_gateway: LiveGateway
) -> None:
    """W-4.10, §4.1, §4.7 row 1: a three-turn previous_response_id chain runs on one session and the third turn's
    agent history holds turn one's user message, the assistant tool call, the tool result and both earlier answers."""
    tag = uuid.uuid4().hex[:8]
    second, third = f"second turn {tag}", f"third turn {tag}"
    first = client.responses.create(model=MODEL, input="use tool")
    call_id = assert_use_tool_output(first)
    middle = client.responses.create(model=MODEL, input=second, previous_response_id=first.id)
    assert middle.previous_response_id == first.id
    assert final_answer(middle) == DEFAULT_ANSWER
    last = client.responses.create(model=MODEL, input=third, previous_response_id=middle.id)
    assert last.previous_response_id == middle.id
    assert last.status == "completed"
    execution = execution_for(live_gateway, third)
    assert history_view(execution["history"]) == expected_chain_history(call_id, second)
    assert execution_for(live_gateway, second)["session_id"] == execution["session_id"]


def test_conversation_name_chain_gives_the_agent_the_whole_transcript(
    client: openai.OpenAI, live_gateway: LiveGateway
) -> None:
    """W-4.10, §4.7 rows 2–3: three turns on `conversation="proj-…"` each continue the latest one
    (previous_response_id is reported), and the third turn's history holds the whole transcript."""
    tag = uuid.uuid4().hex[:8]
    name = f"proj-{tag}"
    second, third = f"second conv turn {tag}", f"third conv turn {tag}"
    first = client.responses.create(model=MODEL, input="use tool", conversation=name)
    assert first.previous_response_id is None
    call_id = assert_use_tool_output(first)
    middle = client.responses.create(model=MODEL, input=second, conversation=name)
    assert middle.previous_response_id == first.id
    last = client.responses.create(model=MODEL, input=third, conversation={"id": name})
    assert last.previous_response_id == middle.id
    assert last.status == "completed"
    execution = execution_for(live_gateway, third)
    assert history_view(execution["history"]) == expected_chain_history(call_id, second)


# -- W-4.10, W-1.7: errors -----------------------------------------------------------------------------------


def test_unknown_previous_response_id_raises_not_found(client: openai.OpenAI, live_gateway: LiveGateway) -> None:
    """W-4.10, §4.1: an unknown previous_response_id → 404 response_not_found → openai.NotFoundError; nothing runs."""
    before = len(live_gateway.executions())
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model=MODEL, input="hello", previous_response_id="resp_" + "0" * 32)
    assert caught.value.status_code == 404
    assert caught.value.code == "response_not_found"
    assert caught.value.param == "previous_response_id"
    assert caught.value.type == "not_found_error"
    assert isinstance(caught.value.body, dict) and set(caught.value.body) == ERROR_KEYS
    with pytest.raises(openai.NotFoundError) as missing:
        client.responses.retrieve("resp_" + "f" * 32)
    assert missing.value.code == "response_not_found"
    assert len(live_gateway.executions()) == before


BAD_REQUESTS = [
    pytest.param({"input": ""}, "missing_user_message", "input", id="empty-string-input"),
    pytest.param({"input": []}, "missing_user_message", "input", id="empty-array-input"),
    pytest.param(
        {"input": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
        "missing_user_message",
        "input",
        id="assistant-last",
    ),
    pytest.param(
        {"input": "hi", "previous_response_id": "resp_" + "1" * 32, "conversation": "proj-x"},
        "conflicting_parameters",
        None,
        id="conversation-with-previous",
    ),
    pytest.param(
        {"input": "hi", "background": True, "store": False},
        "invalid_parameter",
        "background",
        id="background-without-store",
    ),
    pytest.param(
        {"input": [{"type": "item_reference", "id": "msg_" + "0" * 24}]},
        "item_reference_not_found",
        "input[0]",
        id="unknown-item-reference",
    ),
    pytest.param(
        {"input": [{"type": "computer_call", "id": "x"}]}, "invalid_parameter", "input[0]", id="unsupported-item"
    ),
    pytest.param(
        {"input": "hi", "reasoning": {"effort": "enormous"}}, "invalid_parameter", None, id="invalid-reasoning-effort"
    ),
]


@pytest.mark.parametrize(("kwargs", "code", "param"), BAD_REQUESTS)
def test_invalid_requests_raise_bad_request(
    client: openai.OpenAI, live_gateway: LiveGateway, kwargs: dict[str, Any], code: str, param: str | None
) -> None:
    """W-1.7, W-4.10, W-4.15, §4.1, §10.2: validation failures are 400 invalid_request_error → openai.BadRequestError
    with the §1.7 code (and param where §4.1 names it); nothing is executed."""
    before = len(live_gateway.executions())
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=MODEL, **kwargs)
    error = caught.value
    assert error.status_code == 400
    assert error.code == code
    assert error.type == "invalid_request_error"
    if param is not None:
        assert error.param == param
    assert isinstance(error.body, dict) and set(error.body) == ERROR_KEYS
    assert len(live_gateway.executions()) == before


def test_missing_input_raises_bad_request(client: openai.OpenAI) -> None:
    """W-1.7, §4.1: a body without `input` → 400 missing_required_parameter, param input."""
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=MODEL)
    assert caught.value.code == "missing_required_parameter"
    assert caught.value.param == "input"


# -- W-3.12 (Responses part), W-4.16: budget exhaustion ---------------------------------------------------------


def assert_incomplete_with_summary(response: Any) -> None:
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "iteration_budget_exhausted"
    assert response.error is None
    last = response.output[-1]
    assert last.type == "message"
    assert phase_of(last) == "final_answer"
    assert message_text(last) == EXHAUST_SUMMARY
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (90210, 4012)


def test_budget_exhausted_stream_helper_raises_while_terminal_event_carries_the_summary(
    client: openai.OpenAI,
) -> None:
    """W-3.12 (Responses part), W-4.16, §3.6 notes: `responses.stream().get_final_response()` raises on
    `response.incomplete`, while the terminal event of the stream — via the helper and via raw iteration —
    carries status incomplete, reason iteration_budget_exhausted and the closing summary."""
    with client.responses.stream(model=MODEL, input="exhaust") as stream:
        events = list(stream)  # iteration itself does not raise
        with pytest.raises(RuntimeError, match="response.completed"):
            stream.get_final_response()
    assert events[-1].type == "response.incomplete"
    assert_incomplete_with_summary(events[-1].response)

    with client.responses.create(model=MODEL, input="exhaust", stream=True) as raw:
        raw_events = list(raw)
    assert [e.sequence_number for e in raw_events] == list(range(len(raw_events)))
    terminal = raw_events[-1]
    assert terminal.type == "response.incomplete"
    assert_incomplete_with_summary(terminal.response)
    assert "".join(e.delta for e in raw_events if e.type == "response.output_text.delta") == EXHAUST_SUMMARY
    assert not any(e.type in ("response.completed", "response.failed") for e in raw_events)


def test_budget_exhausted_non_stream_create_returns_incomplete_with_summary(client: openai.OpenAI) -> None:
    """W-4.9, W-4.16: the non-streaming reply of a budget-exhausted turn is 200 with status incomplete and the
    closing summary as its final_answer message (no exception, no retry)."""
    response = client.responses.create(model=MODEL, input="exhaust")
    assert_incomplete_with_summary(response)
    assert final_answer(response) == EXHAUST_SUMMARY


# -- §5.3, §1.8: idempotency conflicts and the concurrency cap -------------------------------------------------------


def test_idempotency_key_reused_with_other_input_raises_conflict_error(
    client: openai.OpenAI, live_gateway: LiveGateway
) -> None:
    """§5.3: the same Idempotency-Key with another input → 409 admission_conflict → openai.ConflictError and
    nothing runs; an exact retry returns the stored response (same id, Idempotency-Replayed)."""
    headers = {"Idempotency-Key": f"sdk-conflict-{uuid.uuid4().hex}"}
    first = client.responses.create(model=MODEL, input="hello", extra_headers=headers)
    replay = client.responses.with_raw_response.create(model=MODEL, input="hello", extra_headers=headers)
    assert replay.headers["idempotency-replayed"] == "true"
    assert replay.parse().id == first.id
    before = len(live_gateway.executions())
    with pytest.raises(openai.ConflictError) as caught:
        client.responses.create(model=MODEL, input="hello, other input", extra_headers=headers)
    error = caught.value
    assert error.status_code == 409
    assert (error.code, error.type) == ("admission_conflict", "invalid_request_error")
    assert isinstance(error.body, dict) and set(error.body) == ERROR_KEYS
    assert error.body["message"] == "admission_conflict"
    assert len(live_gateway.executions()) == before


def test_concurrency_cap_raises_rate_limit_error_with_retry_after(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    """§1.8: with api_server.max_concurrent_runs 1 and a turn running, `responses.create()` → 429
    rate_limit_exceeded with Retry-After: 1 → openai.RateLimitError carrying the header."""
    gateway = gateway_factory(config={"api_server": {"max_concurrent_runs": 1}})
    held = http.client.HTTPConnection(gateway.host, gateway.port, timeout=30)
    held.request(
        "POST",
        "/v1/responses",
        body=json.dumps({"model": MODEL, "input": "hang", "stream": True}),
        headers={**gateway.headers, "Content-Type": "application/json"},
    )
    assert held.getresponse().status == 200  # the head follows the admission: the turn holds the only slot
    sdk = openai.OpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0, timeout=30.0)
    try:
        with pytest.raises(openai.RateLimitError) as caught:
            sdk.responses.create(model=MODEL, input="hello")
    finally:
        sdk.close()
        held.close()
    error = caught.value
    assert error.status_code == 429
    assert error.response.headers["retry-after"] == "1"
    assert (error.code, error.type) == ("rate_limit_exceeded", "rate_limit_error")
