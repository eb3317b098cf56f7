"""The runs dialect from event lists alone (no server): `/v1/runs/{id}/events` records and the `hermes.run` object
(WIRE.md §6.2, §6.3; W-6.2, W-6.3)."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_api_plugin.core.events import (
    Commentary,
    Compacted,
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
from hermes_api_plugin.dialects.runs import (
    RunEventsRenderer,
    run_object,
    run_usage,
    terminal_fields,
)

RUN = "run_" + "a" * 32
START = ToolStarted("call_1", "terminal", '{"command":"ls -la"}', "ls -la", "💻", 0.0)
DONE = ToolCompleted("call_1", "terminal", "README.md", False, 1234)
TURN: list[TurnEvent] = [
    StatusChanged(TurnStatus.RUNNING),
    ReasoningDelta("Look first."),
    START,
    DONE,
    Commentary("Listed the files.", False),
    ReasoningDelta("Two entries."),
    TextDelta("Your project "),
    TextDelta("has README.md."),
    TurnFinished(TurnStatus.COMPLETED, Usage(42, 17)),
]


def stamps(n: int, start: float = 1795971481.0) -> list[float]:
    return [start + i * 0.1234 for i in range(n)]


def rendered(events: list[TurnEvent], at: list[float] | None = None) -> list[tuple[int, dict[str, Any]]]:
    return RunEventsRenderer(RUN, at if at is not None else stamps(len(events))).render(events)


def test_records_are_numbered_from_one_and_carry_event_run_id_and_timestamp() -> None:
    """W-6.3, §6.3: ids 1…n in order; every payload has the event name, the run id and the journal time of its
    event (float, 3 decimals); status changes produce no record and leave no gap in the ids."""
    at = stamps(len(TURN))
    records = rendered(TURN, at)
    assert [rid for _, _, rid in records] == list(range(1, len(records) + 1))
    assert [p["event"] for _, p, _ in records] == [
        "reasoning.delta",
        "tool.started",
        "tool.completed",
        "message.interim",
        "reasoning.delta",
        "message.delta",
        "message.delta",
        "run.completed",
    ]
    assert all(p["run_id"] == RUN for _, p, _ in records)
    assert [p["timestamp"] for _, p, _ in records] == [round(t, 3) for t in at[1:]]


def test_incremental_rendering_continues_the_numbering() -> None:
    """W-6.3: rendering the journal in batches gives the same records as rendering it at once (the live case)."""
    at = stamps(len(TURN))
    whole = rendered(TURN, at)
    renderer = RunEventsRenderer(RUN, at)
    batched = renderer.render(TURN[:3]) + renderer.render(TURN[3:4]) + renderer.render(TURN[4:])
    assert batched == whole
    assert renderer.last_event == "run.completed"


def test_event_fields() -> None:
    """§6.3 table: reasoning/message deltas, message.interim with already_streamed, tool.started with preview,
    tool.completed with duration in seconds (3 decimals) and error, run.completed with output and usage."""
    payloads = {p["event"]: p for _, p, _ in rendered(TURN)}
    strip = {"event", "run_id", "timestamp"}
    view = {name: {k: v for k, v in p.items() if k not in strip} for name, p in payloads.items()}
    assert view["tool.started"] == {"tool": "terminal", "tool_call_id": "call_1", "preview": "ls -la"}
    assert view["tool.completed"] == {"tool": "terminal", "tool_call_id": "call_1", "duration": 1.234, "error": False}
    assert view["message.interim"] == {"text": "Listed the files.", "already_streamed": False}
    assert view["run.completed"] == {
        "output": "Your project has README.md.",
        "usage": {"input_tokens": 42, "output_tokens": 17, "total_tokens": 59},
    }


def test_reasoning_bursts_after_the_first_start_with_a_blank_line() -> None:
    """§6.3, W-3.14: every reasoning burst after the first starts with `\\n\\n`."""
    deltas = [p["delta"] for _, p, _ in rendered(TURN) if p["event"] == "reasoning.delta"]
    assert deltas == ["Look first.", "\n\nTwo entries."]


def test_output_is_the_text_after_the_last_tool() -> None:
    """§6.2, §3.2: `output` is the final answer: text before a tool is not part of it."""
    events: list[TurnEvent] = [
        TextDelta("Let me look. "),
        START,
        DONE,
        TextDelta("Found it."),
        TurnFinished(TurnStatus.COMPLETED),
    ]
    assert rendered(events)[-1][1]["output"] == "Found it."


def test_orphan_completion_is_dropped_and_a_stopped_tool_is_an_error() -> None:
    """§6.3, W-3.13: a completion without a started tool is never reported; a tool the end of the turn stopped is
    reported with error:true, and the answer written while it ran stands."""
    events: list[TurnEvent] = [
        ToolCompleted("call_orphan", "terminal", "x", False, 5),
        START,
        TextDelta("Partial answer."),
        ToolCompleted("call_1", "terminal", "[interrupted]", True, 2500, stopped=True),
        TurnFinished(TurnStatus.CANCELLED, Usage(1, 1), "cancelled"),
    ]
    records = rendered(events)
    assert [p["event"] for _, p, _ in records] == ["tool.started", "message.delta", "tool.completed", "run.cancelled"]
    assert records[2][1]["error"] is True and records[2][1]["duration"] == 2.5
    assert records[3][1]["output"] == "Partial answer."


@pytest.mark.parametrize(
    ("finished", "event", "extra"),
    [
        (TurnFinished(TurnStatus.COMPLETED, Usage(3, 4)), "run.completed", {}),
        (
            TurnFinished(TurnStatus.INCOMPLETE, Usage(3, 4), "iteration_budget_exhausted"),
            "run.incomplete",
            {"turn_exit_reason": "iteration_budget_exhausted"},
        ),
        (
            TurnFinished(TurnStatus.INCOMPLETE, Usage(3, 4), "output_truncated"),
            "run.incomplete",
            {"turn_exit_reason": "output_truncated"},
        ),
        (
            TurnFinished(TurnStatus.FAILED, Usage(3, 4), "agent_error", "Provider down"),
            "run.failed",
            {"error": {"code": "agent_error", "message": "Provider down"}},
        ),
        (
            TurnFinished(TurnStatus.FAILED, Usage(3, 4), "unknown_execution", "The gateway restarted"),
            "run.failed",
            {"error": {"code": "unknown_execution", "message": "The gateway restarted"}},
        ),
        (TurnFinished(TurnStatus.CANCELLED, Usage(3, 4), "cancelled"), "run.cancelled", {}),
    ],
    ids=["completed", "budget", "truncated", "failed", "unknown", "cancelled"],
)
def test_terminal_event_name_equals_the_status_and_the_run_object_agrees(
    finished: TurnFinished, event: str, extra: dict[str, Any]
) -> None:
    """W-6.2, §6.2, §6.3: the terminal event is `run.<status>` with output, usage and only its own extra field; the
    run object built from the same renderer reports the same status pieces (error / turn_exit_reason)."""
    renderer = RunEventsRenderer(RUN, stamps(2))
    records = renderer.render([TextDelta("Answer."), finished])
    terminal = records[-1][1]
    assert terminal["event"] == event == f"run.{finished.status.value}"
    assert {k: v for k, v in terminal.items() if k not in ("event", "run_id", "timestamp")} == {
        "output": "Answer.",
        "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        **extra,
    }
    obj = run_object(
        RUN,
        status=finished.status.value,
        created_at=1.23456,
        updated_at=2.5,
        session_id="s",
        model="hermes-agent",
        renderer=renderer,
    )
    assert obj == {
        "object": "hermes.run",
        "run_id": RUN,
        "status": finished.status.value,
        "created_at": 1.235,
        "updated_at": 2.5,
        "session_id": "s",
        "model": "hermes-agent",
        "last_event": event,
        "output": "Answer.",
        "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        "error": extra.get("error"),
        "turn_exit_reason": extra.get("turn_exit_reason"),
    }


def test_run_object_of_an_unsettled_run() -> None:
    """§6.2: before the terminal event there is no usage, error or exit reason; output is the answer so far and
    last_event the last record (None before any)."""
    empty = RunEventsRenderer(RUN, [])
    assert (
        run_object(RUN, status="queued", created_at=1.0, updated_at=1.0, session_id="s", model="m", renderer=empty)[
            "last_event"
        ]
        is None
    )
    renderer = RunEventsRenderer(RUN, stamps(3))
    renderer.render([StatusChanged(TurnStatus.RUNNING), ReasoningDelta("hm"), TextDelta("So far")])
    obj = run_object(
        RUN, status="running", created_at=1.0, updated_at=2.0, session_id="s", model="m", renderer=renderer
    )
    assert (obj["status"], obj["last_event"], obj["output"], obj["usage"], obj["error"], obj["turn_exit_reason"]) == (
        "running",
        "message.delta",
        "So far",
        None,
        None,
        None,
    )


def test_compaction_produces_no_run_record() -> None:
    """§6.3: compaction is not a runs event; the ids stay dense around it."""
    events: list[TurnEvent] = [TextDelta("a"), Compacted("summary"), TextDelta("b"), TurnFinished(TurnStatus.COMPLETED)]
    records = rendered(events)
    assert [(rid, p["event"]) for _, p, rid in records] == [
        (1, "message.delta"),
        (2, "message.delta"),
        (3, "run.completed"),
    ]


def test_missing_stamps_give_timestamp_zero() -> None:
    """A journal without stamps for its events (e.g. a bare replay) still renders; timestamps fall back to 0.0."""
    records = RunEventsRenderer(RUN, []).render([TextDelta("x"), TurnFinished(TurnStatus.COMPLETED)])
    assert [p["timestamp"] for _, p, _ in records] == [0.0, 0.0]


def test_terminal_fields_and_usage_helpers() -> None:
    """§6.2: error only on failed (default code agent_error), turn_exit_reason only on incomplete (default
    iteration_budget_exhausted); usage in input/output/total tokens."""
    assert terminal_fields(TurnFinished(TurnStatus.COMPLETED)) == {"error": None, "turn_exit_reason": None}
    assert terminal_fields(TurnFinished(TurnStatus.CANCELLED, error_code="cancelled")) == {
        "error": None,
        "turn_exit_reason": None,
    }
    assert terminal_fields(TurnFinished(TurnStatus.FAILED)) == {
        "error": {"code": "agent_error", "message": "failed"},
        "turn_exit_reason": None,
    }
    assert terminal_fields(TurnFinished(TurnStatus.INCOMPLETE)) == {
        "error": None,
        "turn_exit_reason": "iteration_budget_exhausted",
    }
    assert run_usage(Usage(5, 7)) == {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12}
