"""Session chat dialect: the `/api/sessions/{id}/chat/stream` records and the `/chat` reply (WIRE.md §7.3–7.4).

Pure: no aiohttp. Records are named, numbered (`id:` = `seq`, 1…n) and end with the terminal `run.*`
event then `done`; `assistant.completed` is the assistant's closing frame, never a success signal.
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

from ..events import (
    Commentary,
    ReasoningDelta,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnTranscript,
)
from .runs import run_usage, terminal_fields

Record = tuple[int, str, dict[str, Any]]  # (seq, event name, payload)


class SessionStreamRenderer:
    """Renders one session chat turn; `stamps[i]` is when journal event `i` was journaled."""

    def __init__(self, session_id: str, run_id: str, stamps: Sequence[float]) -> None:
        self.session_id = session_id
        self.run_id = run_id
        self.stamps = stamps
        self.message_id = "msg_" + hashlib.sha256(run_id.encode()).hexdigest()[:24]
        self.transcript = TurnTranscript()
        self._position = 0
        self._seq = 0
        self._started = False
        self._tools: dict[str, ToolStarted] = {}

    def _record(self, records: list[Record], name: str, at: float, **fields: Any) -> None:
        self._seq += 1
        payload = {"event": name, "session_id": self.session_id, "run_id": self.run_id, "seq": self._seq,
                   "ts": round(at, 3), **fields}
        records.append((self._seq, name, payload))

    def head(self, at: float) -> list[Record]:
        """`run.started` and `message.started`: written with the response head."""
        records: list[Record] = []
        self._record(records, "run.started", at)
        self._record(records, "message.started", at, message_id=self.message_id, role="assistant")
        self._started = True
        return records

    def render(self, events: Sequence[TurnEvent]) -> list[Record]:
        records: list[Record] = []
        for event in events:
            at = self.stamps[self._position] if self._position < len(self.stamps) else 0.0
            self._position += 1
            emitted = self.transcript.feed(event)
            if isinstance(event, ReasoningDelta):
                self._record(records, "reasoning.delta", at, message_id=self.message_id, delta=emitted)
            elif isinstance(event, TextDelta):
                self._record(records, "assistant.delta", at, message_id=self.message_id, delta=event.text)
            elif isinstance(event, ToolStarted):
                self._tools[event.call_id] = event
                self._record(records, "tool.started", at, tool_call_id=event.call_id, tool_name=event.name,
                             preview=event.label)
            elif isinstance(event, ToolCompleted):
                if self._tools.pop(event.call_id, None) is not None:
                    self._record(records, "tool.completed", at, tool_call_id=event.call_id, tool_name=event.name,
                                 duration_ms=event.duration_ms, is_error=event.is_error)
            elif isinstance(event, Commentary):
                if not event.already_streamed:
                    self._record(records, "assistant.commentary", at, message_id=self.message_id, text=event.text)
            elif isinstance(event, TurnFinished):
                self._finish(records, event, at)
        return records

    def _finish(self, records: list[Record], finished: TurnFinished, at: float) -> None:
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
            "object": "hermes.session.chat.completion", "status": finished.status.value,
            "session_id": self.session_id, "run_id": self.run_id, "message": message,
            "usage": run_usage(finished.usage), **terminal_fields(finished),
        }
