"""Every Response object and every event the Responses renderer gives passes the Open Responses checker (WIRE.md §16,
tests/open_responses.py): text, reasoning, server tools in both modes, client tool calls, suspensions, every
terminal status; the echoed settings and `completed_at`; a head stored before the settings existed still loads."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_api_plugin.core.events import (
    ApprovalRequested,
    Commentary,
    QuestionAsked,
    ReasoningDelta,
    TextDelta,
    ToolCallRequested,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    Usage,
)
from hermes_api_plugin.dialects.response_objects import head_from_snapshot
from hermes_api_plugin.dialects.responses import ResponseHead, ResponsesRenderer, head_to_json
from tests.open_responses import assert_response_object, assert_stream

from .support import RUNNING, complete, finished, head, start

FINISHED_AT = 1700000042.75
TURNS: dict[str, list[TurnEvent]] = {
    "text": [RUNNING, TextDelta("Hello "), TextDelta("there."), finished(usage=Usage(3, 2))],
    "reasoning": [
        RUNNING,
        ReasoningDelta("Think."),
        TextDelta("a"),
        ReasoningDelta("More."),
        TextDelta("b"),
        finished(),
    ],
    "server tool": [
        RUNNING,
        ReasoningDelta("Look."),
        start(),
        complete(),
        Commentary("Listed."),
        TextDelta("Done."),
        finished(),
    ],
    "empty answer": [RUNNING, finished()],
    "failed": [RUNNING, TextDelta("part"), finished(TurnStatus.FAILED, code="agent_error", message="boom")],
    "incomplete": [RUNNING, TextDelta("half"), finished(TurnStatus.INCOMPLETE, code="output_truncated")],
    "tool stopped by failure": [RUNNING, start(), finished(TurnStatus.FAILED, code="agent_error", message="x")],
    "client tool calls": [
        RUNNING,
        TextDelta("Calling."),
        ToolCallRequested("call_a", "get_weather", '{"city":"Paris"}'),
    ],
    "question": [RUNNING, TextDelta("Sure."), QuestionAsked("Which branch?", ("main", "dev"))],
}


def events_of(records: list[Any]) -> list[dict[str, Any]]:
    return [payload for _, payload, _ in records]


def stream(events: list[TurnEvent], *, queued: bool = False, **options: Any) -> list[dict[str, Any]]:
    renderer = ResponsesRenderer(head(), **options)
    return events_of(renderer.created(queued) + renderer.render(events))


@pytest.mark.parametrize("name", sorted(TURNS))
def test_every_event_and_response_object_passes_the_spec(name: str) -> None:
    response = assert_stream(stream(TURNS[name]))
    assert_response_object(response)


@pytest.mark.parametrize("name", sorted(TURNS))
def test_a_queued_response_passes_the_spec(name: str) -> None:
    events = stream(TURNS[name], queued=True)
    assert events[0]["response"]["status"] == "queued"
    assert_stream(events)


def test_hosted_tools_and_approvals_pass_with_the_gateways_extensions() -> None:
    """§15.3: mcp_call and mcp_approval_request items are this gateway's own — valid with the extensions allowed,
    and a strict client is told so (they are never sent unless the request or gateway asks for hosted tools)."""
    asked = ApprovalRequested("rm -rf build/", "recursive delete", ("once", "deny"), suspended=True)
    hosted = stream([RUNNING, start(), complete(), TextDelta("ok"), finished()], hosted=True)
    approval = stream([RUNNING, start(), asked])
    for events in (hosted, approval):
        assert_stream(events, strict=False)
        with pytest.raises(AssertionError):
            assert_stream(events)


def test_a_cancelled_response_is_an_extension_terminal_with_a_valid_object() -> None:
    events = stream([RUNNING, TextDelta("so"), finished(TurnStatus.CANCELLED, code="cancelled")])
    assert events[-1]["type"] == "response.cancelled"
    response = assert_stream(events, strict=False)
    assert response["completed_at"] is None


def test_output_text_parts_carry_annotations_and_logprobs_everywhere() -> None:
    events = stream(TURNS["text"])
    parts = [e["part"] for e in events if e["type"].startswith("response.content_part.")]
    parts += [c for e in events if e["type"] == "response.output_item.done" for c in e["item"]["content"]]
    assert parts and all(p["annotations"] == [] and p["logprobs"] == [] for p in parts)
    texts = [e for e in events if e["type"].startswith("response.output_text.")]
    assert texts and all(e["logprobs"] == [] for e in texts)


def test_completed_at_is_the_terminal_records_time_and_null_before() -> None:
    """§16: null until completed; then the terminal record's journal time (whole seconds), so every replay of the
    journal renders the same object."""
    done = TurnFinished(TurnStatus.COMPLETED, at=FINISHED_AT)
    events = stream([RUNNING, TextDelta("x"), done])
    assert [e["response"]["completed_at"] for e in events if "response" in e] == [None, None, 1700000042]
    assert stream([RUNNING, TextDelta("x"), done]) == events
    failed = stream([RUNNING, TurnFinished(TurnStatus.FAILED, error_code="agent_error", at=FINISHED_AT)])
    assert failed[-1]["response"]["completed_at"] is None


def test_the_echoed_settings_are_the_heads() -> None:
    settings: dict[str, Any] = {
        "temperature": 0.2,
        "top_p": 0.9,
        "presence_penalty": 0.5,
        "frequency_penalty": -0.5,
        "top_logprobs": 3,
        "max_output_tokens": 500,
        "max_tool_calls": 4,
        "service_tier": "flex",
        "text": {"format": {"type": "json_object"}},
        "reasoning": {"effort": "low", "summary": "auto"},
        "safety_identifier": "user-1",
        "prompt_cache_key": "cache-1",
        "user": "u",
        "truncation": "auto",
    }
    renderer = ResponsesRenderer(head(**settings))
    records = renderer.created() + renderer.render(TURNS["text"])
    response = assert_stream(events_of(records))
    assert {k: response[k] for k in settings} == settings


def test_the_defaults_are_the_specs() -> None:
    response = assert_stream(stream(TURNS["text"]))
    assert {k: response[k] for k in ("temperature", "top_p", "presence_penalty", "frequency_penalty")} == {
        "temperature": 1.0,
        "top_p": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
    }
    assert response["text"] == {"format": {"type": "text"}} and response["truncation"] == "disabled"
    assert response["reasoning"] == {"effort": None, "summary": None} and response["service_tier"] == "default"
    assert response["max_output_tokens"] is None and response["top_logprobs"] == 0


def test_a_snapshot_stored_before_the_settings_loads_with_their_defaults() -> None:
    """Objects stored before §16 lack the settings: their head loads, and renders them with the defaults."""
    old = {
        "id": "resp_old",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "background": False,
        "model": "m",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "instructions": None,
        "metadata": {},
        "error": None,
        "incomplete_details": None,
        "previous_response_id": None,
        "store": True,
        "usage": None,
    }
    loaded = head_from_snapshot(old)
    assert loaded == ResponseHead("resp_old", 1, "m")
    renderer = ResponsesRenderer(loaded)
    assert_stream(events_of(renderer.created() + renderer.render(TURNS["text"])))
    full = ResponsesRenderer(head(temperature=0.5)).snapshot()
    assert head_from_snapshot(full) == head(temperature=0.5)


def test_a_keyed_reply_stores_only_the_settings_that_differ_from_the_defaults() -> None:
    assert head_to_json(head()) == {
        "id": head().id,
        "created_at": 1700000000,
        "model": "hermes-agent",
        "background": False,
        "store": True,
        "instructions": None,
        "metadata": {},
        "tools": [],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "previous_response_id": None,
    }
    custom = head(temperature=0.3, user="u")
    assert ResponseHead(**head_to_json(custom)) == custom
    assert {"temperature", "user"} <= set(head_to_json(custom))
