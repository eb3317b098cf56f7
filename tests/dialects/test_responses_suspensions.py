"""The Responses dialect at a suspension (WIRE.md §15.3), from event lists: the Response ends `completed` at the
request — an mcp_approval_request item, the question as the final message, client function_call items with their
argument deltas — renders nothing after it, and the Response that resumes the turn (`prime`d with the journal before)
finishes the server tool the approval held."""

from __future__ import annotations

from typing import Any

from hermes_api_plugin.core.events import (
    ApprovalRequested,
    ApprovalResponded,
    QuestionAsked,
    TextDelta,
    ToolCallRequested,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
)
from hermes_api_plugin.dialects.responses import ResponseHead, ResponsesRenderer

STARTED = ToolStarted("call_1", "terminal", '{"command":"rm -rf build/"}', "rm", "", 0.0)
ASKED = ApprovalRequested("rm -rf build/", "recursive delete", ("once", "session", "deny"), suspended=True)


def render(events: list[TurnEvent], *, hosted: bool = False, prime: list[TurnEvent] | None = None) -> ResponsesRenderer:
    r = ResponsesRenderer(ResponseHead("resp_x", 1, "m"), hosted=hosted)
    r.created()
    if prime is not None:
        r.prime(prime)
        r.resumed()
    r.render(events)
    return r


def types(r: ResponsesRenderer) -> list[str]:
    return [item["type"] for item in r.output]


def test_an_approval_ends_the_response_with_an_mcp_approval_request() -> None:
    r = render([TextDelta("Cleaning up."), STARTED, ASKED, ApprovalResponded("once"), TextDelta("later")])
    assert r.status == "completed" and r.paused is ASKED and r.terminal is not None
    assert types(r) == ["message", "function_call", "mcp_approval_request"]
    asked = r.output[-1]
    assert asked["id"].startswith("mcpr_") and r.approval_ids == {asked["id"]: ASKED}
    assert asked["name"] == "terminal" and asked["server_label"] == "hermes"
    assert r.render([TextDelta("more")]) == []  # the rest of the journal is the next Response's
    assert render([TextDelta("Cleaning up."), STARTED, ASKED]).output == r.output  # ids derive: a replay is identical


def test_the_resumed_response_finishes_the_held_tool() -> None:
    before: list[TurnEvent] = [STARTED, ASKED]
    after: list[TurnEvent] = [
        ApprovalResponded("once"),
        ToolCompleted("call_1", "terminal", "Ran", False, 1),
        TextDelta("Done."),
        TurnFinished(TurnStatus.COMPLETED),
    ]
    plain = render(after, prime=before)
    assert types(plain) == ["function_call_output", "message"] and plain.output[0]["call_id"] == "call_1"
    hosted = render(after, prime=before, hosted=True)
    assert types(hosted) == ["mcp_call", "message"] and hosted.output[0]["output"] == "Ran"
    paused = render(before, hosted=True)
    assert (paused.output[0]["type"], paused.output[0]["status"]) == ("mcp_call", "in_progress")


def test_a_question_is_the_final_message() -> None:
    r = render([TextDelta("Sure."), QuestionAsked("Which branch?", ("main", "dev"))])
    [message] = r.output
    assert message["phase"] == "final_answer"
    assert message["content"][0]["text"] == "Sure.\n\nWhich branch?\n\n1. main\n2. dev"


def test_client_tool_calls_stream_their_arguments() -> None:
    r = ResponsesRenderer(ResponseHead("resp_x", 1, "m"))
    r.created()
    calls = [ToolCallRequested("call_a", "f", '{"x":' + '"y' * 300 + '"}'), ToolCallRequested("call_b", "g", "{}")]
    records = r.render(list(calls))
    kinds: list[Any] = [record.event for record in records]
    assert kinds.count("response.function_call_arguments.delta") == 4  # 603 characters: three pieces, then one
    assert kinds.count("response.function_call_arguments.done") == 2 and kinds[-1] == "response.completed"
    assert [(i["call_id"], i["status"]) for i in r.output] == [("call_a", "completed"), ("call_b", "completed")]
    deltas = [rec.data["delta"] for rec in records if rec.event == "response.function_call_arguments.delta"]
    assert "".join(deltas[:3]) == calls[0].arguments
