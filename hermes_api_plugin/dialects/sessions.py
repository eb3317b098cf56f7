"""Session chat dialect: the `/api/sessions/{id}/chat/stream` records and the `/chat` reply (WIRE.md §7.3–7.4).

Pure: no aiohttp. Records are named, numbered (`id:` = `seq`, 1…n) and end with the terminal `run.*`
event then `done`; `assistant.completed` is the assistant's closing frame, never a success signal.

A delivery that `pauses` (WIRE.md §15.2: ask mode) ends at a request to the client instead: the request's event, the
assistant's message closing with the approval question or the agent's question (dialects/prompts.py), then
`run.requires_action` with the run's `required_action`, then `done`. The session's next message answers it, and its
delivery — a message of its own — resumes the same run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ..core.events import (
    ApprovalRequested,
    ClientRequest,
    Commentary,
    QuestionAsked,
    ReasoningDelta,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    Usage,
    suspends,
)
from .prompts import approval_prompt, question_prompt
from .record import CLIENT_EXCHANGES, NumberedFold, SseRecord, exchange_record
from .runs import required_action_object, run_usage, terminal_fields


class SessionStreamRenderer(NumberedFold):
    """Renders one session chat turn as named records with ids; `stamps[i]` is when event `i` was journaled."""

    def __init__(
        self, session_id: str, run_id: str, stamps: Sequence[float], *, start: int = 0, pauses: bool = False
    ) -> None:
        super().__init__(stamps, start)
        self.session_id = session_id
        self.run_id = run_id
        self.pauses = pauses  # the delivery ends at a request to the client (§15.2)
        seed = run_id if not start else f"{run_id}:{start}"  # a resumed delivery is a message of its own
        self.message_id = "msg_" + hashlib.sha256(seed.encode()).hexdigest()[:24]
        self._said = ""  # the question a paused delivery ended with

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
            if self.pauses and suspends(event):
                self._pause(records, event, at)
        elif isinstance(event, TurnFinished):
            self._finish(records, event, at)

    def _pause(self, records: list[SseRecord], asked: ClientRequest, at: float) -> None:
        """End the delivery at a request: the assistant's message with the question, the run's required action."""
        self.paused = asked
        if isinstance(asked, (ApprovalRequested, QuestionAsked)):
            text = approval_prompt(asked) if isinstance(asked, ApprovalRequested) else question_prompt(asked)
            self._said = ("\n\n" if self.transcript.answer.strip() else "") + text
        closing: dict[str, Any] = {"message_id": self.message_id, "content": self.transcript.answer + self._said}
        if self.transcript.reasoning is not None:
            closing["reasoning_content"] = self.transcript.reasoning
        self._record(records, "assistant.completed", at, **closing)
        required = required_action_object(asked)
        self._record(records, "run.requires_action", at, status="requires_action", required_action=required)
        self._record(records, "done", at)

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
        """The `/chat` JSON reply of the settled turn, or of a delivery that ended at a request to the client."""
        if self.paused is not None:
            return self._paused_reply(self.paused)
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

    def _paused_reply(self, asked: ClientRequest) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.transcript.answer + self._said}
        if self.transcript.reasoning is not None:
            message["reasoning_content"] = self.transcript.reasoning
        return {
            "object": "hermes.session.chat.completion",
            "status": "requires_action",
            "session_id": self.session_id,
            "run_id": self.run_id,
            "message": message,
            "usage": run_usage(Usage()),
            "error": None,
            "turn_exit_reason": None,
            "required_action": required_action_object(asked),
        }
