"""Runs dialect: turn events → `/v1/runs/{id}/events` records and the `hermes.run` object (WIRE.md §6).

Pure: no aiohttp. Records carry their `id:` (1…n per run); payloads carry the event name, the run id
and the time the event was journaled. The settled status and the terminal event name always agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.events import (
    ApprovalRequested,
    ClientRequest,
    Commentary,
    ReasoningDelta,
    TextDelta,
    ToolCallRequested,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    Usage,
)
from .record import CLIENT_EXCHANGES, NumberedFold, SseRecord, exchange_record, request_fields


def run_usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def terminal_fields(finished: TurnFinished) -> dict[str, Any]:
    """`error` and `turn_exit_reason` of a settled turn, as runs and session chat report them."""
    error = None
    if finished.status is TurnStatus.FAILED:
        error = {"code": finished.error_code or "agent_error", "message": finished.error_message or "failed"}
    reason = None
    if finished.status is TurnStatus.INCOMPLETE:
        reason = finished.error_code or "iteration_budget_exhausted"
    return {"error": error, "turn_exit_reason": reason}


class RunEventsRenderer(NumberedFold):
    """Renders one run's journal as `data:` records with ids; `stamps[i]` is when event `i` was journaled."""

    def __init__(self, run_id: str, stamps: Sequence[float]) -> None:
        super().__init__(stamps)
        self.run_id = run_id
        self.last_event: str | None = None

    def _record(self, records: list[SseRecord], name: str, at: float, /, **fields: Any) -> None:
        # positional-only: a client tool call's fields include its own `name` (WIRE.md §15.4)
        self.emit(records, None, {"event": name, "run_id": self.run_id, "timestamp": at, **fields})
        self.last_event = name

    def on_event(self, records: list[SseRecord], event: TurnEvent, emitted: str | None, at: float) -> None:
        if isinstance(event, ReasoningDelta):
            self._record(records, "reasoning.delta", at, delta=emitted)
        elif isinstance(event, TextDelta):
            self._record(records, "message.delta", at, delta=event.text)
        elif isinstance(event, Commentary):
            self._record(records, "message.interim", at, text=event.text, already_streamed=event.already_streamed)
        elif isinstance(event, ToolStarted):
            self._record(records, "tool.started", at, tool=event.name, tool_call_id=event.call_id, preview=event.label)
        elif isinstance(event, ToolCompleted):
            self._record(
                records,
                "tool.completed",
                at,
                tool=event.name,
                tool_call_id=event.call_id,
                duration=round(event.duration_ms / 1000, 3),
                error=event.is_error,
            )
        elif isinstance(event, CLIENT_EXCHANGES):
            name, exchange = exchange_record(event)
            self._record(records, name, at, **exchange)
        elif isinstance(event, TurnFinished):
            fields: dict[str, Any] = {"output": self.transcript.answer, "usage": run_usage(event.usage)}
            extra = terminal_fields(event)
            if event.status is TurnStatus.INCOMPLETE:
                fields["turn_exit_reason"] = extra["turn_exit_reason"]
            elif event.status is TurnStatus.FAILED:
                fields["error"] = extra["error"]
            self._record(records, f"run.{event.status.value}", at, **fields)


def required_action_object(asked: ClientRequest) -> dict[str, Any]:
    """A suspended run's `required_action` (WIRE.md §15.1): `type` and what the request says."""
    kind = "approval" if isinstance(asked, ApprovalRequested) else "question"
    if isinstance(asked, ToolCallRequested):
        kind = "client_tool"
    return {"type": kind, **request_fields(asked)}


def run_object(
    run_id: str,
    *,
    status: str,
    created_at: float,
    updated_at: float,
    session_id: str,
    model: str,
    renderer: RunEventsRenderer,
    required_action: ClientRequest | None = None,
) -> dict[str, Any]:
    """The `hermes.run` object from a renderer that has seen the journal so far; `required_action`: the request a
    suspended run waits for (the field is there only while it is)."""
    finished = renderer.transcript.finished
    extra = terminal_fields(finished) if finished is not None else {"error": None, "turn_exit_reason": None}
    run: dict[str, Any] = {
        "object": "hermes.run",
        "run_id": run_id,
        "status": status,
        "created_at": round(created_at, 3),
        "updated_at": round(updated_at, 3),
        "session_id": session_id,
        "model": model,
        "last_event": renderer.last_event,
        "output": renderer.transcript.answer,
        "usage": run_usage(finished.usage) if finished is not None else None,
        **extra,
    }
    if required_action is not None:  # only while suspended: the object of §6.2 is unchanged otherwise
        run["required_action"] = required_action_object(required_action)
    return run
