"""Chat Completions dialect: turn events → `chat.completion.chunk` records and the `chat.completion` body.

Pure: no aiohttp, no I/O. The stream and the JSON body come from the same fold, so they always agree
(WIRE.md §3).

A delivery ends where its turn suspends for the client (WIRE.md §15.2): an approval question or the agent's question as
the assistant message's text with `finish_reason: "stop"`, or the client tool calls as `tool_calls` with
`finish_reason: "tool_calls"` — the turn itself goes on once the client's next message answers. A renderer that
resumes a turn after such an answer is `prime`d with what the journal held before, so that the tools and approvals it
finishes are the ones it knows.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..core.events import (
    ApprovalRequested,
    ApprovalResponded,
    ClientRequest,
    QuestionAsked,
    ReasoningDelta,
    TextDelta,
    ToolCallRequested,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    TurnTranscript,
    Usage,
)
from .prompts import approval_prompt, question_prompt
from .record import SseRecord, Template

TOOL_PROGRESS_EVENT = "hermes.tool.progress"
APPROVAL_REQUEST_EVENT = "hermes.approval.request"  # WIRE.md §14.2
APPROVAL_RESPONDED_EVENT = "hermes.approval.responded"
# Chat `data:` payloads stay under 65 536 characters: even a delta of control characters (escaped
# as \uXXXX, six characters each) plus the chunk envelope fits when deltas are cut at 8 192.
MAX_DELTA_CHARS = 8192
_ERROR_TYPES = {
    "admission_conflict": "invalid_request_error",
    "unknown_execution": "conflict_error",
    "admission_expired": "conflict_error",
}


def usage_dict(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def _pieces(text: str) -> list[str]:
    if len(text) <= MAX_DELTA_CHARS:
        return [text]
    return [text[i : i + MAX_DELTA_CHARS] for i in range(0, len(text), MAX_DELTA_CHARS)]


def finish_fields(finished: TurnFinished, partial: bool) -> tuple[str, dict[str, Any]]:
    """finish_reason and the root fields (`hermes`, `error`) of a settled turn (WIRE.md §3.6)."""
    status = finished.status
    if status is TurnStatus.COMPLETED:
        return "stop", {}
    if status is TurnStatus.INCOMPLETE:
        code = finished.error_code or "iteration_budget_exhausted"
        return "length", {"hermes": {"completed": False, "partial": True, "failed": False, "error_code": code}}
    if status is TurnStatus.CANCELLED:
        return "cancelled", {
            "hermes": {"completed": False, "partial": partial, "failed": False, "error_code": "cancelled"}
        }
    code = finished.error_code or "agent_error"
    error = {
        "message": finished.error_message or code,
        "type": _ERROR_TYPES.get(code, "server_error"),
        "param": None,
        "code": code,
    }
    return "error", {
        "error": error,
        "hermes": {"completed": False, "partial": partial, "failed": True, "error_code": code},
    }


def _chunk(
    completion_id: str, created: int, model: str, delta: dict[str, Any], finish_reason: str | None = None
) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def _token_chunk(completion_id: str, created: int, model: str, field: str, text: str) -> dict[str, Any]:
    """A text or reasoning token's chunk (reasoning goes with an empty `content`, as clients expect)."""
    delta = {"content": text} if field == "content" else {"content": "", field: text}
    return _chunk(completion_id, created, model, delta)


class ChatRenderer:
    """Renders one turn for one chat request; feed it journal batches in order."""

    def __init__(self, *, completion_id: str, created: int, model: str, tool_progress: bool = True) -> None:
        self.completion_id = completion_id
        self.created = created
        self.model = model
        self.tool_progress = tool_progress
        self.transcript = TurnTranscript()
        # the two records a stream sends per token, encoded once (dialects/record.py `Template`), each made at the
        # stream's first token of its kind: until then an open stream holds neither (every full garbage collection
        # walks what an open stream holds; issue 25)
        self._text: Template | None = None
        self._reasoning: Template | None = None
        self._tools: dict[str, ToolStarted] = {}
        self._approvals: list[ApprovalRequested] = []  # waiting for their decision, oldest first
        self.run_id: str | None = None  # known once the turn is admitted or found; approval records carry it
        self.paused: ClientRequest | None = None  # the request this delivery ended at (WIRE.md §15.2)
        self._said = ""  # the request's text, after the answer so far (approval and question)
        self._calls: tuple[ToolCallRequested, ...] = ()  # the client tool calls it ended with

    def prime(self, events: list[TurnEvent]) -> None:
        """Know the tools and approvals of what the journal held before a resumed delivery, without rendering it."""
        for event in events:
            if isinstance(event, ToolStarted):
                self._tools[event.call_id] = event
            elif isinstance(event, ToolCompleted):
                self._tools.pop(event.call_id, None)
            elif isinstance(event, ApprovalRequested):
                self._approvals.append(event)
            elif isinstance(event, ApprovalResponded) and self._approvals:
                self._approvals.pop(0)

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return _chunk(self.completion_id, self.created, self.model, delta, finish_reason)

    def _template(self, field: str) -> Template:
        """The token record of `field`, made once. Built from the ids, not from the renderer: a closure over it would
        be a cycle left to the garbage collector (issue 25)."""
        template = Template(partial(_token_chunk, self.completion_id, self.created, self.model, field))
        if field == "content":
            self._text = template
        else:
            self._reasoning = template
        return template

    def role_chunk(self) -> SseRecord:
        return SseRecord(None, self._chunk({"role": "assistant", "content": ""}))

    def render(self, events: list[TurnEvent]) -> list[SseRecord]:
        records: list[SseRecord] = []
        for event in events:
            emitted = self.transcript.feed(event)
            if isinstance(event, ReasoningDelta):
                assert emitted is not None
                reasoning = self._reasoning or self._template("reasoning_content")
                records.extend(SseRecord(None, reasoning.fill(p)) for p in _pieces(emitted))
            elif isinstance(event, TextDelta):
                text = self._text or self._template("content")
                records.extend(SseRecord(None, text.fill(p)) for p in _pieces(event.text))
            elif isinstance(event, ToolStarted):
                self._tools[event.call_id] = event
                if self.tool_progress:
                    records.append(SseRecord(TOOL_PROGRESS_EVENT, self._progress(event, None)))
            elif isinstance(event, ToolCompleted):
                started = self._tools.pop(event.call_id, None)
                if self.tool_progress and started is not None:
                    records.append(SseRecord(TOOL_PROGRESS_EVENT, self._progress(started, event)))
            elif isinstance(event, ApprovalRequested):
                self._approvals.append(event)
                records.append(SseRecord(APPROVAL_REQUEST_EVENT, self._approval(event, None)))
                if event.suspended:
                    return self._pause(records, event, events)
            elif isinstance(event, (QuestionAsked, ToolCallRequested)):
                return self._pause(records, event, events)
            elif isinstance(event, ApprovalResponded) and self._approvals:
                asked = self._approvals.pop(0)
                records.append(SseRecord(APPROVAL_RESPONDED_EVENT, self._approval(asked, event.choice)))
                if event.choice != "deny" and self.tool_progress and self._tools:
                    # Open WebUI shows the newest status, and "Approved: …" is done: say again that the approved
                    # command runs now, or it looks finished while it works (checked in Open WebUI 0.12.4)
                    running = next(reversed(self._tools.values()))
                    records.append(SseRecord(TOOL_PROGRESS_EVENT, self._progress(running, None)))
            elif isinstance(event, TurnFinished):
                records.append(SseRecord(None, self.finish_chunk(event)))
        return records

    def _pause(self, records: list[SseRecord], asked: ClientRequest, events: list[TurnEvent]) -> list[SseRecord]:
        """End the delivery at a request to the client: its text, or the tool calls the agent made together."""
        self.paused = asked
        if isinstance(asked, ToolCallRequested):
            at = events.index(asked)
            self._calls = tuple(suspended_calls(events, at))
            for index, call in enumerate(self._calls):
                head = {"index": index, "id": call.call_id, "type": "function"}
                head["function"] = {"name": call.name, "arguments": ""}
                records.append(SseRecord(None, self._chunk({"tool_calls": [head]})))
                records.extend(
                    SseRecord(None, self._chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
                    for piece in _pieces(call.arguments)
                    if piece
                )
            reason = "tool_calls"
        else:
            text = approval_prompt(asked) if isinstance(asked, ApprovalRequested) else question_prompt(asked)
            self._said = ("\n\n" if self.transcript.answer.strip() else "") + text
            records.extend(SseRecord(None, self._chunk({"content": p})) for p in _pieces(self._said))
            reason = "stop"
        chunk = self._chunk({}, reason)
        chunk["usage"] = usage_dict(Usage())
        chunk["hermes"] = self._suspended_fields()
        records.append(SseRecord(None, chunk))
        return records

    def _suspended_fields(self) -> dict[str, Any]:
        """The root `hermes` object of a delivery that ended at a request: the turn waits for its answer."""
        asked = self.paused
        kind = "approval" if isinstance(asked, ApprovalRequested) else "question"
        if isinstance(asked, ToolCallRequested):
            kind = "client_tool"
        return {"completed": False, "suspended": kind, "run_id": self.run_id}

    def _approval(self, asked: ApprovalRequested, choice: str | None) -> dict[str, Any]:
        """A chunk-shaped approval record with the Open WebUI status object (WIRE.md §14.2, as §3.4)."""
        payload = self._chunk({"content": ""})
        payload.update(run_id=self.run_id, command=asked.command)
        if choice is None:
            # `choices` is the chunk's own array (the SDKs read it): the approval's choices get their own name
            payload.update(description=asked.description, approval_choices=list(asked.choices))
            # A suspended approval's reply ends with its question: a status left unfinished would shimmer on that
            # reply for good (Open WebUI 0.12.4); a held one's stream waits under it (§14.2)
            status, done = f"Waiting for approval: {asked.command}", asked.suspended
        else:
            payload["choice"] = choice
            status, done = f"{'Denied' if choice == 'deny' else 'Approved'}: {asked.command}", True
        payload["event"] = {"type": "status", "data": {"description": status, "done": done}}
        return payload

    def _progress(self, started: ToolStarted, completed: ToolCompleted | None) -> dict[str, Any]:
        payload = self._chunk({"content": ""})
        payload.update(tool=started.name, emoji=started.emoji, label=started.label, toolCallId=started.call_id)
        if completed is None:
            payload["status"] = "running"
            description, done = f"Running {started.name}: {started.label}", False
        else:
            verb = "Stopped" if completed.stopped else "Failed" if completed.is_error else "Ran"
            payload.update(status="completed", duration_ms=completed.duration_ms, is_error=completed.is_error)
            description, done = f"{verb} {started.name}: {started.label}", True
        payload["event"] = {"type": "status", "data": {"description": description, "done": done}}
        return payload

    def finish_chunk(self, finished: TurnFinished) -> dict[str, Any]:
        reason, extra = finish_fields(finished, self.transcript.any_text)
        chunk = self._chunk({}, reason)
        chunk["usage"] = usage_dict(finished.usage)
        chunk.update(extra)
        return chunk

    def fold(self, events: list[TurnEvent]) -> None:
        """Fold events into the JSON body, up to a request that ends the delivery (`paused`)."""
        for i, event in enumerate(events):
            self.transcript.feed(event)
            if isinstance(event, (QuestionAsked, ToolCallRequested)) or (
                isinstance(event, ApprovalRequested) and event.suspended
            ):
                self.paused = event
                if isinstance(event, ToolCallRequested):
                    self._calls = tuple(suspended_calls(events, i))
                else:
                    text = approval_prompt(event) if isinstance(event, ApprovalRequested) else question_prompt(event)
                    self._said = ("\n\n" if self.transcript.answer.strip() else "") + text
                return

    def is_paused(self) -> bool:
        return self.paused is not None

    @property
    def said(self) -> str:
        """The text this delivery ended with after the answer so far: the approval question or the agent's."""
        return self._said

    def paused_at(self, events: list[TurnEvent], start: int) -> int:
        """The journal position of the request this delivery ended at."""
        return next(i for i in range(start, len(events)) if events[i] is self.paused)

    def completion(self) -> dict[str, Any]:
        """The non-streaming `chat.completion` body; the turn must have settled, or suspended (`paused`)."""
        if self.paused is not None:
            return self._paused_completion()
        finished = self.transcript.finished
        assert finished is not None, "completion() needs a settled turn"
        reason, extra = finish_fields(finished, self.transcript.any_text)
        message: dict[str, Any] = {"role": "assistant", "content": self.transcript.answer}
        if self.transcript.reasoning is not None:
            message["reasoning_content"] = self.transcript.reasoning
        body: dict[str, Any] = {
            "id": self.completion_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": usage_dict(finished.usage),
        }
        body.update(extra)
        return body

    def _paused_completion(self) -> dict[str, Any]:
        """The body of a delivery that ended at a request to the client (WIRE.md §15.2)."""
        answer = self.transcript.answer
        message: dict[str, Any] = {"role": "assistant", "content": answer + self._said}
        reason = "stop"
        if self._calls:
            message["content"] = answer or None
            message["tool_calls"] = [
                {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self._calls
            ]
            reason = "tool_calls"
        if self.transcript.reasoning is not None:
            message["reasoning_content"] = self.transcript.reasoning
        return {
            "id": self.completion_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": usage_dict(Usage()),
            "hermes": self._suspended_fields(),
        }


def suspended_calls(events: list[TurnEvent], at: int) -> list[ToolCallRequested]:
    """The client tool calls the agent made together: the run of them starting at `events[at]`."""
    calls: list[ToolCallRequested] = []
    for event in events[at:]:
        if not isinstance(event, ToolCallRequested):
            break
        calls.append(event)
    return calls
