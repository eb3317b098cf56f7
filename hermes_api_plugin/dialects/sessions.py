"""Session chat dialect: the `/api/sessions/{id}/chat/stream` records and the `/chat` reply (WIRE.md §7.3–7.4).

Pure: no aiohttp. Records are named, numbered (`id:` = `seq`, 1…n) and end with the terminal `run.*`
event then `done`; `assistant.completed` is the assistant's closing frame, never a success signal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ..core.events import (
    Commentary,
    ReasoningDelta,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
)
from .record import CLIENT_EXCHANGES, NumberedFold, SseRecord, exchange_record
from .runs import run_usage, terminal_fields


class SessionStreamRenderer(NumberedFold):
    """Renders one session chat turn as named records with ids; `stamps[i]` is when event `i` was journaled."""

    def __init__(self, session_id: str, run_id: str, stamps: Sequence[float]) -> None:
        super().__init__(stamps)
        self.session_id = session_id
        self.run_id = run_id
        self.message_id = "msg_" + hashlib.sha256(run_id.encode()).hexdigest()[:24]

    def _record(self, records: list[SseRecord], name: str, at: float, /, **fields: Any) -> None:
        # positional-only: a client tool call's fields include its own `name` (WIRE.md §15.4)
        payload = {
            "event": name,
            "session_id": self.session_id,
            "run_id": self.run_id,
            "seq": self.last_id + 1,
            "ts": at,
            **fields,
        }
        self.emit(records, name, payload)

    def head(self, at: float) -> list[SseRecord]:
        """`run.started` and `message.started`: written with the response head."""
        records: list[SseRecord] = []
        self._record(records, "run.started", round(at, 3))
        self._record(records, "message.started", round(at, 3), message_id=self.message_id, role="assistant")
        return records

    def on_event(self, records: list[SseRecord], event: TurnEvent, emitted: str | None, at: float) -> None:
        if isinstance(event, ReasoningDelta):
            self._record(records, "reasoning.delta", at, message_id=self.message_id, delta=emitted)
        elif isinstance(event, TextDelta):
            self._record(records, "assistant.delta", at, message_id=self.message_id, delta=event.text)
        elif isinstance(event, ToolStarted):
            self._record(
                records, "tool.started", at, tool_call_id=event.call_id, tool_name=event.name, preview=event.label
            )
        elif isinstance(event, ToolCompleted):
            self._record(
                records,
                "tool.completed",
                at,
                tool_call_id=event.call_id,
                tool_name=event.name,
                duration_ms=event.duration_ms,
                is_error=event.is_error,
            )
        elif isinstance(event, Commentary):
            if not event.already_streamed:
                self._record(records, "assistant.commentary", at, message_id=self.message_id, text=event.text)
        elif isinstance(event, CLIENT_EXCHANGES):
            name, exchange = exchange_record(event)
            self._record(records, name, at, **exchange)
        elif isinstance(event, TurnFinished):
            self._finish(records, event, at)

    def _finish(self, records: list[SseRecord], finished: TurnFinished, at: float) -> None:
        transcript = self.transcript
        if transcript.any_text or transcript.reasoning is not None:
            closing: dict[str, Any] = {"message_id": self.message_id, "content": transcript.answer}
            if transcript.reasoning is not None:
                closing["reasoning_content"] = transcript.reasoning
            self._record(records, "assistant.completed", at, **closing)
        fields: dict[str, Any] = {"status": finished.status.value, "usage": run_usage(finished.usage)}
        extra = terminal_fields(finished)
        if extra["turn_exit_reason"] is not None:
            fields["turn_exit_reason"] = extra["turn_exit_reason"]
        if extra["error"] is not None:
            fields["error"] = extra["error"]
        self._record(records, f"run.{finished.status.value}", at, **fields)
        self._record(records, "done", at)

    def reply(self) -> dict[str, Any]:
        """The `/chat` JSON reply of the settled turn."""
        finished = self.transcript.finished
        assert finished is not None, "reply() needs a settled turn"
        message: dict[str, Any] = {"role": "assistant", "content": self.transcript.answer}
        if self.transcript.reasoning is not None:
            message["reasoning_content"] = self.transcript.reasoning
        return {
            "object": "hermes.session.chat.completion",
            "status": finished.status.value,
            "session_id": self.session_id,
            "run_id": self.run_id,
            "message": message,
            "usage": run_usage(finished.usage),
            **terminal_fields(finished),
        }
