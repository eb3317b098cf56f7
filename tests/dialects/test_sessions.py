"""The session chat dialect from event lists alone (no server): `/api/sessions/{id}/chat/stream` records and the
`/chat` reply (WIRE.md §7.3, §7.4; W-7.2, W-7.3)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest

from hermes_api_plugin.core.events import (
    Commentary,
    ReasoningDelta,
    StatusChanged,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    Usage,
)
from hermes_api_plugin.dialects.sessions import SessionStreamRenderer
from tests.helpers import RUN

SESSION = "team-build"
START = ToolStarted("call_7", "terminal", '{"command":"tail build.log"}', "tail build.log", "💻", 0.0)
DONE = ToolCompleted("call_7", "terminal", "ld: cannot find -lssl", False, 380)
TURN: list[TurnEvent] = [
    StatusChanged(TurnStatus.RUNNING),
    ReasoningDelta("Need the last failing job."),
    START,
    DONE,
    Commentary("Found it.", False),
    Commentary("Already streamed.", True),
    TextDelta("The linker "),
    TextDelta("step failed."),
    TurnFinished(TurnStatus.COMPLETED, Usage(2102, 31)),
]


def renderer(n: int = len(TURN)) -> SessionStreamRenderer:
    return SessionStreamRenderer(SESSION, RUN, [1795971490.0 + i * 0.1 for i in range(n)])


def stream(events: list[TurnEvent]) -> list[tuple[int, str, dict[str, Any]]]:
    r = renderer(len(events))
    return r.head(1795971489.9996) + r.render(events)


def test_head_is_run_started_then_message_started() -> None:
    """§7.4: the head records are run.started and message.started (role assistant, a msg_ id derived from the run)."""
    r = renderer()
    head = r.head(1795971489.12345)
    assert [(seq, name) for name, _, seq in head] == [(1, "run.started"), (2, "message.started")]
    assert head[0].data == {
        "event": "run.started",
        "session_id": SESSION,
        "run_id": RUN,
        "seq": 1,
        "ts": 1795971489.123,
    }
    started = head[1].data
    assert started["role"] == "assistant"
    assert started["message_id"] == "msg_" + hashlib.sha256(RUN.encode()).hexdigest()[:24]
    assert re.fullmatch(r"msg_[0-9a-f]{24}", started["message_id"])
    assert r.message_id == SessionStreamRenderer(SESSION, RUN, []).message_id, "stable across renderers (replays)"


def test_records_are_numbered_and_named_in_order() -> None:
    """W-7.3, §7.4: seq 1…n with the event name in the payload; message.started once; every message_id equal;
    assistant.completed, then run.completed, then done, last."""
    records = stream(TURN)
    assert [seq for _, _, seq in records] == list(range(1, len(records) + 1))
    assert all(p["seq"] == seq and p["event"] == name for name, p, seq in records)
    assert [name for name, _, _ in records] == [
        "run.started",
        "message.started",
        "reasoning.delta",
        "tool.started",
        "tool.completed",
        "assistant.commentary",
        "assistant.delta",
        "assistant.delta",
        "assistant.completed",
        "run.completed",
        "done",
    ]
    assert len({p["message_id"] for _, p, _ in records if "message_id" in p}) == 1
    assert all(p["session_id"] == SESSION and p["run_id"] == RUN and isinstance(p["ts"], float) for _, p, _ in records)


def test_event_fields() -> None:
    """§7.4 table: tool.started/tool.completed fields (duration_ms, is_error), commentary only when not already
    streamed, assistant.completed with the answer and reasoning, the terminal event with status and usage."""
    strip = {"event", "session_id", "run_id", "seq", "ts"}
    by_name: dict[str, list[dict[str, Any]]] = {}
    for name, payload, _ in stream(TURN):
        by_name.setdefault(name, []).append({k: v for k, v in payload.items() if k not in strip})
    message_id = by_name["message.started"][0]["message_id"]
    assert by_name["tool.started"] == [{"tool_call_id": "call_7", "tool_name": "terminal", "preview": "tail build.log"}]
    assert by_name["tool.completed"] == [
        {"tool_call_id": "call_7", "tool_name": "terminal", "duration_ms": 380, "is_error": False}
    ]
    assert by_name["assistant.commentary"] == [{"message_id": message_id, "text": "Found it."}]
    assert by_name["reasoning.delta"] == [{"message_id": message_id, "delta": "Need the last failing job."}]
    assert by_name["assistant.completed"] == [
        {
            "message_id": message_id,
            "content": "The linker step failed.",
            "reasoning_content": "Need the last failing job.",
        }
    ]
    assert by_name["run.completed"] == [
        {"status": "completed", "usage": {"input_tokens": 2102, "output_tokens": 31, "total_tokens": 2133}}
    ]
    assert by_name["done"] == [{}]


@pytest.mark.parametrize(
    ("finished", "extra"),
    [
        (
            TurnFinished(TurnStatus.INCOMPLETE, Usage(1, 2), "iteration_budget_exhausted"),
            {"turn_exit_reason": "iteration_budget_exhausted"},
        ),
        (
            TurnFinished(TurnStatus.FAILED, Usage(1, 2), "agent_error", "Provider down"),
            {"error": {"code": "agent_error", "message": "Provider down"}},
        ),
        (TurnFinished(TurnStatus.CANCELLED, Usage(1, 2), "cancelled"), {}),
    ],
    ids=["incomplete", "failed", "cancelled"],
)
def test_assistant_completed_is_followed_by_the_real_outcome(finished: TurnFinished, extra: dict[str, Any]) -> None:
    """W-7.3, §7.4: assistant.completed is the closing frame, not a success signal: after it comes run.<status> of
    the real outcome with its turn_exit_reason or error; the /chat reply says the same."""
    r = renderer(2)
    records = r.head(1.0) + r.render([TextDelta("Partial."), finished])
    names = [name for name, _, _ in records]
    status = finished.status.value
    assert names[-3:] == ["assistant.completed", f"run.{status}", "done"]
    terminal = records[-2].data
    assert {k: v for k, v in terminal.items() if k not in ("event", "session_id", "run_id", "seq", "ts")} == {
        "status": status,
        "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        **extra,
    }
    reply = r.reply()
    assert (reply["status"], reply["error"], reply["turn_exit_reason"]) == (
        status,
        extra.get("error"),
        extra.get("turn_exit_reason"),
    )
    assert reply["message"] == {"role": "assistant", "content": "Partial."}


def test_no_assistant_completed_without_text_or_reasoning() -> None:
    """§7.4: a turn that produced no assistant message (a failure before any text or reasoning) has no
    assistant.completed: message.started is followed by run.failed and done."""
    events: list[TurnEvent] = [
        StatusChanged(TurnStatus.RUNNING),
        TurnFinished(TurnStatus.FAILED, Usage(), "agent_error", "auth failed"),
    ]
    assert [name for name, _, _ in stream(events)] == ["run.started", "message.started", "run.failed", "done"]


def test_reasoning_only_turn_still_closes_the_message() -> None:
    """§7.4: reasoning alone is an assistant message: assistant.completed carries empty content and the reasoning."""
    events: list[TurnEvent] = [ReasoningDelta("Thinking."), TurnFinished(TurnStatus.CANCELLED, Usage(), "cancelled")]
    records = stream(events)
    closing = [p for name, p, _ in records if name == "assistant.completed"]
    assert [(c["content"], c["reasoning_content"]) for c in closing] == [("", "Thinking.")]
    assert [name for name, _, _ in records][-2:] == ["run.cancelled", "done"]


def test_reasoning_bursts_and_stopped_tools() -> None:
    """§7.4, W-3.13, W-3.14: a second reasoning burst starts with `\\n\\n`; a tool the end of the turn stopped is
    reported with is_error:true; an orphan completion is not reported."""
    events: list[TurnEvent] = [
        ReasoningDelta("One."),
        TextDelta("x"),
        ReasoningDelta("Two."),
        ToolCompleted("call_orphan", "terminal", "", False, 1),
        START,
        ToolCompleted("call_7", "terminal", "[interrupted]", True, 9, stopped=True),
        TurnFinished(TurnStatus.CANCELLED, Usage(), "cancelled"),
    ]
    records = stream(events)
    assert [p["delta"] for name, p, _ in records if name == "reasoning.delta"] == ["One.", "\n\nTwo."]
    completed = [p for name, p, _ in records if name == "tool.completed"]
    assert [(c["tool_call_id"], c["is_error"]) for c in completed] == [("call_7", True)]


def test_reply_of_a_completed_turn() -> None:
    """W-7.2, §7.3: the /chat reply shape: object, status, session_id, run_id, message (reasoning_content only when
    reasoning was emitted), usage, error, turn_exit_reason."""
    r = renderer()
    r.render(TURN)
    assert r.reply() == {
        "object": "hermes.session.chat.completion",
        "status": "completed",
        "session_id": SESSION,
        "run_id": RUN,
        "message": {
            "role": "assistant",
            "content": "The linker step failed.",
            "reasoning_content": "Need the last failing job.",
        },
        "usage": {"input_tokens": 2102, "output_tokens": 31, "total_tokens": 2133},
        "error": None,
        "turn_exit_reason": None,
    }
    plain = renderer(2)
    plain.render([TextDelta("Hi."), TurnFinished(TurnStatus.COMPLETED)])
    assert plain.reply()["message"] == {"role": "assistant", "content": "Hi."}


def test_reply_needs_a_settled_turn() -> None:
    """§7.3: the reply is written when the turn settles; asking before is a programming error."""
    r = renderer()
    r.render(TURN[:3])
    with pytest.raises(AssertionError):
        r.reply()


def test_incremental_rendering_continues_seq() -> None:
    """§7.4: rendering in batches (the live stream) equals rendering at once (a replay)."""
    whole = stream(TURN)
    r = renderer()
    batched = r.head(1795971489.9996) + r.render(TURN[:2]) + r.render(TURN[2:5]) + r.render(TURN[5:])
    assert batched == whole
