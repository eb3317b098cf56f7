"""Responses dialect: turn events → Responses stream events with items, sequence numbers and snapshots.

Pure: no aiohttp, no I/O. Item ids derive from the response id and the item's *stored* index (its place
among every item of the turn), so rendering the same journal again (replay, resume, GET) yields the same
ids and sequence numbers (WIRE.md §4.2–§4.5). A delivery may leave the server's tool items out
(`X-Hermes-Tool-Items: off`, §1.6): the renderer still tracks them, so the other items keep their stored
ids, and only what it emits is renumbered — `output_index` and `sequence_number` dense per delivery.

The server's own tools render in one of two modes, fixed per response when it is created (§15.3): as a
`function_call` + `function_call_output` pair (the default, §4.2), or `hosted`, as one `mcp_call` item
(`server_label: "hermes"`) streamed with OpenAI's MCP call events, which no agent loop executes.

A Response ends where its turn suspends for the client (WIRE.md §15.3), `status: "completed"` while the turn waits:
an approval as an `mcp_approval_request` item, the agent's question as the final message, the client tool calls as
`function_call` items (their arguments streamed as deltas). The Response that carries the answer is a new one over
the rest of the same journal: its renderer is `prime`d with what the journal held before, so that a server tool
started before the suspension and completed after it is finished there — as the `function_call_output` of the
`function_call` the suspended Response closed, or as a whole `mcp_call` item in hosted mode. Everything after the
suspension belongs to the next Response: a paused renderer renders nothing more.


Long because every Responses stream event is built here, in one numbering: reasoning, text, both tool modes and
the §15.3 suspensions."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..core.events import (
    ApprovalRequested,
    ClientRequest,
    Commentary,
    QuestionAsked,
    ReasoningDelta,
    StatusChanged,
    TextDelta,
    ToolCallRequested,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    Usage,
)
from ..core.json_text import compact
from ..protocol.response_settings import ResponseSettings
from .prompts import question_prompt
from .record import SseRecord

TERMINAL_EVENTS = {
    TurnStatus.COMPLETED: "response.completed",
    TurnStatus.INCOMPLETE: "response.incomplete",
    TurnStatus.FAILED: "response.failed",
    TurnStatus.CANCELLED: "response.cancelled",
}
_INCOMPLETE_REASONS = {"output_truncated": "max_output_tokens"}
# what X-Hermes-Tool-Items: off hides: the server's tools in either mode
_TOOL_ITEM_TYPES = frozenset({"function_call", "function_call_output", "mcp_call"})
SERVER_LABEL = "hermes"  # the `server_label` of the server's own tools rendered as `mcp_call` items (§15.3)
MAX_ARGUMENT_DELTA = 256  # a client tool call's arguments stream in pieces of at most this many characters
APPROVAL_TOOL = "terminal"  # the tool an approval request names when no server tool is open (Hermes guards commands)


@dataclass(frozen=True)
class ResponseHead(ResponseSettings):
    """The request-derived fields of a Response object, fixed at admission: its ids and request fields here, and the
    settings every Response object echoes (WIRE.md §16), keyword-only, from `ResponseSettings`."""

    id: str
    created_at: int
    model: str
    background: bool = False
    store: bool = True
    instructions: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tools: list[Any] = field(default_factory=list)
    tool_choice: Any = "auto"
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None


HEAD_FIELDS = frozenset(f.name for f in fields(ResponseHead))
_ECHOED_DEFAULTS = asdict(ResponseSettings())  # the §16 echoed settings' defaults


def head_to_json(head: ResponseHead) -> dict[str, Any]:
    """A head as a keyed reply stores it: the §16 echoed settings only where they differ from their defaults, so
    that a head written before they existed is written back as it was (`ResponseHead(**…)` reads both)."""
    return {k: v for k, v in asdict(head).items() if k not in _ECHOED_DEFAULTS or v != _ECHOED_DEFAULTS[k]}


def usage_object(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def item_id(prefix: str, response_id: str, index: int) -> str:
    return f"{prefix}_" + hashlib.sha256(f"{response_id}:{index}".encode()).hexdigest()[:24]


def without_tool_items(response: dict[str, Any]) -> dict[str, Any]:
    """A stored Response object as a delivery with `X-Hermes-Tool-Items: off` shows it (WIRE.md §1.6): the
    same object and item ids, the server's tool items left out of `output`."""
    return {**response, "output": [i for i in response["output"] if i.get("type") not in _TOOL_ITEM_TYPES]}


def truncate_output(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"…[truncated {len(text) - limit} chars]"


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


@dataclass
class _Open:
    id: str
    index: int
    parts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts)


class ResponsesRenderer:
    """Renders one turn as one Response; feed it journal batches in order."""

    def __init__(
        self,
        head: ResponseHead,
        *,
        commentary: bool = True,
        tool_output_max_chars: int = 16000,
        tool_items: bool = True,
        hosted: bool = False,
    ) -> None:
        self.head = head
        self.commentary = commentary
        # False: this delivery leaves server tools out (X-Hermes-Tool-Items: off); they are still tracked so
        # every other item keeps its stored index and id.
        self.tool_items = tool_items
        # True: the server's tools are `mcp_call` items (§15.3); chosen once per response, never per delivery.
        self.hosted = hosted
        self.tool_output_max_chars = tool_output_max_chars
        self.sequence = 0
        self.status = "in_progress"
        self._done: dict[int, dict[str, Any]] = {}  # by stored index
        self._shown: dict[int, int] = {}  # stored index → this delivery's output_index (items it shows)
        self._next_index = 0
        self._reasoning: _Open | None = None
        self._message: _Open | None = None
        self._tools: dict[str, tuple[dict[str, Any], int]] = {}
        self._usage: Usage | None = None
        self._error: dict[str, Any] | None = None
        self._incomplete: dict[str, Any] | None = None
        self.terminal: SseRecord | None = None
        self.completed_at: int | None = None  # epoch seconds the Response completed: its terminal record's time
        self._primed: dict[str, ToolStarted] = {}  # server tools a resumed Response finishes, started before it
        self.paused: ClientRequest | None = None  # the request this Response ended at (WIRE.md §15.3)
        self.approval_ids: dict[str, ApprovalRequested] = {}  # mcp_approval_request item id → its request

    def prime(self, events: list[TurnEvent]) -> None:
        """Know the server tools still running at the start of a resumed Response (WIRE.md §15.3), without rendering
        anything: the journal before `start` belongs to the Responses before it."""
        for event in events:
            if isinstance(event, ToolStarted):
                self._primed[event.call_id] = event
            elif isinstance(event, ToolCompleted):
                self._primed.pop(event.call_id, None)

    def is_paused(self) -> bool:
        return self.paused is not None

    # -- object ------------------------------------------------------------------------------------
    @property
    def output(self) -> list[dict[str, Any]]:
        return [self._done[i] for i in sorted(self._done) if i in self._shown]

    def snapshot(self, status: str | None = None, *, with_output: bool = True) -> dict[str, Any]:
        h = self.head
        return {
            "id": h.id,
            "object": "response",
            "created_at": h.created_at,
            "status": status or self.status,
            "background": h.background,
            "model": h.model,
            "output": self.output if with_output else [],
            "parallel_tool_calls": h.parallel_tool_calls,
            "tool_choice": h.tool_choice,
            "tools": h.tools,
            "instructions": h.instructions,
            "metadata": h.metadata,
            "error": self._error,
            "incomplete_details": self._incomplete,
            "previous_response_id": h.previous_response_id,
            "store": h.store,
            "usage": usage_object(self._usage) if self._usage is not None else None,
            "completed_at": self.completed_at if (status or self.status) == "completed" else None,
            "truncation": h.truncation,
            "text": h.text,
            "temperature": h.temperature,
            "top_p": h.top_p,
            "presence_penalty": h.presence_penalty,
            "frequency_penalty": h.frequency_penalty,
            "top_logprobs": h.top_logprobs,
            "reasoning": h.reasoning,
            "max_output_tokens": h.max_output_tokens,
            "max_tool_calls": h.max_tool_calls,
            "service_tier": h.service_tier,
            "safety_identifier": h.safety_identifier,
            "prompt_cache_key": h.prompt_cache_key,
            "user": h.user,
        }

    # -- events ------------------------------------------------------------------------------------
    def _emit(self, records: list[SseRecord], kind: str, **fields: Any) -> None:
        """The one place events are numbered. Callers pass an item's stored index as `output_index`; in a
        delivery that hides tool items it becomes this delivery's index, and an event about a hidden item is
        dropped before it takes a sequence number (a full delivery's indexes are the stored ones)."""
        if not self.tool_items and "output_index" in fields:
            shown = self._shown.get(fields["output_index"])
            if shown is None:
                return
            fields["output_index"] = shown
        records.append(SseRecord(kind, {"type": kind, "sequence_number": self.sequence, **fields}))
        self.sequence += 1

    def created(self, queued: bool = False) -> list[SseRecord]:
        """`response.created` (sequence 0): `queued` while an earlier turn on the session runs."""
        records: list[SseRecord] = []
        self.status = "queued" if queued else "in_progress"
        self._emit(records, "response.created", response=self.snapshot(with_output=False))
        return records

    def resumed(self) -> list[SseRecord]:
        """`response.in_progress` of a Response that resumes a running turn (WIRE.md §15.3): its turn started long
        before, so no event of the journal says so."""
        records: list[SseRecord] = []
        self.status = "in_progress"
        self._emit(records, "response.in_progress", response=self.snapshot(with_output=False))
        return records

    def warmed(self) -> list[SseRecord]:
        """What follows `created` for a Response that runs no turn (WebSocket mode's `generate: false`, WIRE.md §16):
        in progress, then completed with no output and no usage."""
        records = self.resumed()
        self.status = "completed"
        self._usage = Usage()
        self._emit(records, "response.completed", response=self.snapshot())
        self.terminal = records[-1]
        return records

    def render(self, events: list[TurnEvent]) -> list[SseRecord]:
        records: list[SseRecord] = []
        if self.paused is not None:
            return records  # the rest of the journal is the next Response's
        for at, event in enumerate(events):
            if isinstance(event, ReasoningDelta):
                self._on_reasoning(records, event.text)
            elif isinstance(event, TextDelta):
                self._on_text(records, event.text)
            elif isinstance(event, ToolStarted):
                self._close_open(records, "completed")
                self._on_tool_started(records, event)
            elif isinstance(event, ToolCompleted):
                self._on_tool_completed(records, event)
            elif isinstance(event, (QuestionAsked, ToolCallRequested)) or (
                isinstance(event, ApprovalRequested) and event.suspended
            ):
                self._pause(records, event, events, at)
                return records
            elif isinstance(event, Commentary):
                self._close_open(records, "completed")
                if self.commentary and not event.already_streamed:
                    self._on_commentary(records, event.text)
            elif isinstance(event, StatusChanged) and event.status is TurnStatus.RUNNING:
                self.status = "in_progress"
                self._emit(records, "response.in_progress", response=self.snapshot(with_output=False))
            elif isinstance(event, TurnFinished):
                self._on_finished(records, event)
        return records

    def _add(self, records: list[SseRecord], index: int, item: dict[str, Any]) -> None:
        if self.tool_items or item["type"] not in _TOOL_ITEM_TYPES:
            self._shown[index] = len(self._shown)
        self._emit(records, "response.output_item.added", output_index=index, item=item)

    def _finish_item(self, records: list[SseRecord], index: int, item: dict[str, Any]) -> None:
        self._done[index] = item
        self._emit(records, "response.output_item.done", output_index=index, item=item)

    def _new_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index

    def _on_reasoning(self, records: list[SseRecord], text: str) -> None:
        self._close_message(records, "completed")
        if self._reasoning is None:
            index = self._new_index()
            self._reasoning = _Open(item_id("rs", self.head.id, index), index)
            self._add(
                records, index, {"id": self._reasoning.id, "type": "reasoning", "status": "in_progress", "summary": []}
            )
            self._emit(
                records,
                "response.reasoning_summary_part.added",
                item_id=self._reasoning.id,
                output_index=index,
                summary_index=0,
                part={"type": "summary_text", "text": ""},
            )
        self._reasoning.parts.append(text)
        self._emit(
            records,
            "response.reasoning_summary_text.delta",
            item_id=self._reasoning.id,
            output_index=self._reasoning.index,
            summary_index=0,
            delta=text,
        )

    def _close_reasoning(self, records: list[SseRecord], status: str) -> None:
        open_item, self._reasoning = self._reasoning, None
        if open_item is None:
            return
        text, rid, index = open_item.text, open_item.id, open_item.index
        self._emit(
            records, "response.reasoning_summary_text.done", item_id=rid, output_index=index, summary_index=0, text=text
        )
        self._emit(
            records,
            "response.reasoning_summary_part.done",
            item_id=rid,
            output_index=index,
            summary_index=0,
            part={"type": "summary_text", "text": text},
        )
        self._finish_item(
            records,
            index,
            {"id": rid, "type": "reasoning", "status": status, "summary": [{"type": "summary_text", "text": text}]},
        )

    def _open_message(self, records: list[SseRecord]) -> _Open:
        index = self._new_index()
        message = _Open(item_id("msg", self.head.id, index), index)
        self._message = message
        self._add(
            records,
            index,
            {"id": message.id, "type": "message", "status": "in_progress", "role": "assistant", "content": []},
        )
        self._emit(
            records,
            "response.content_part.added",
            item_id=message.id,
            output_index=index,
            content_index=0,
            part=_text_part(""),
        )
        return message

    def _on_text(self, records: list[SseRecord], text: str) -> None:
        self._close_reasoning(records, "completed")
        message = self._message or self._open_message(records)
        message.parts.append(text)
        self._emit(
            records,
            "response.output_text.delta",
            item_id=message.id,
            output_index=message.index,
            content_index=0,
            delta=text,
            logprobs=[],
        )

    def _close_message(self, records: list[SseRecord], status: str, phase: str | None = None) -> None:
        open_item, self._message = self._message, None
        if open_item is None:
            return
        text, mid, index = open_item.text, open_item.id, open_item.index
        self._emit(
            records,
            "response.output_text.done",
            item_id=mid,
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        )
        self._emit(
            records,
            "response.content_part.done",
            item_id=mid,
            output_index=index,
            content_index=0,
            part=_text_part(text),
        )
        item: dict[str, Any] = {"id": mid, "type": "message", "status": status, "role": "assistant"}
        if phase is not None:
            item["phase"] = phase
        item["content"] = [_text_part(text)]
        self._finish_item(records, index, item)

    def _close_open(self, records: list[SseRecord], status: str) -> None:
        self._close_reasoning(records, status)
        self._close_message(records, status)

    def _on_commentary(self, records: list[SseRecord], text: str) -> None:
        index = self._new_index()
        item = {
            "id": item_id("msg", self.head.id, index),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "phase": "commentary",
            "content": [_text_part(text)],
        }
        self._add(records, index, item)
        self._finish_item(records, index, item)

    def _on_tool_started(self, records: list[SseRecord], event: ToolStarted) -> None:
        if self.hosted:
            self._on_hosted_started(records, event)
            return
        index = self._new_index()
        item = {
            "id": item_id("fc", self.head.id, index),
            "type": "function_call",
            "status": "in_progress",
            "call_id": event.call_id,
            "name": event.name,
            "arguments": event.arguments,
        }
        self._tools[event.call_id] = (item, index)
        self._add(records, index, item)
        self._emit(
            records,
            "response.function_call_arguments.done",
            item_id=item["id"],
            output_index=index,
            arguments=event.arguments,
        )

    def _on_tool_completed(self, records: list[SseRecord], event: ToolCompleted) -> None:
        entry = self._tools.pop(event.call_id, None)
        if entry is None:
            primed = self._primed.pop(event.call_id, None)
            if primed is not None:  # started before this resumed Response
                self._on_primed_completed(records, primed, event)
            return  # a completion without a start is never shown
        started, index = entry
        if self.hosted:
            self._on_hosted_completed(records, event, started, index)
            return
        self._finish_item(records, index, {**started, "status": "completed"})
        self._tool_output(records, event)

    def _tool_output(self, records: list[SseRecord], event: ToolCompleted) -> None:
        out_index = self._new_index()
        output = "[interrupted]" if event.stopped else truncate_output(event.result, self.tool_output_max_chars)
        item = {
            "id": item_id("fco", self.head.id, out_index),
            "type": "function_call_output",
            "status": "completed",
            "call_id": event.call_id,
            "output": output,
        }
        self._add(records, out_index, item)
        self._finish_item(records, out_index, item)

    def _on_hosted_started(self, records: list[SseRecord], event: ToolStarted) -> None:
        """One `mcp_call` item, streamed as OpenAI streams an MCP call: added (arguments still empty), in_progress,
        the arguments as one delta, their done; its end comes with the tool's completion."""
        index = self._new_index()
        mid = item_id("mcp", self.head.id, index)
        item = {
            "id": mid,
            "type": "mcp_call",
            "status": "in_progress",
            "server_label": SERVER_LABEL,
            "name": event.name,
            "arguments": "",
            "output": None,
            "error": None,
        }
        self._tools[event.call_id] = ({**item, "arguments": event.arguments}, index)
        self._add(records, index, item)
        self._emit(records, "response.mcp_call.in_progress", item_id=mid, output_index=index)
        self._emit(records, "response.mcp_call_arguments.delta", item_id=mid, output_index=index, delta=event.arguments)
        self._emit(
            records, "response.mcp_call_arguments.done", item_id=mid, output_index=index, arguments=event.arguments
        )

    def _on_hosted_completed(
        self, records: list[SseRecord], event: ToolCompleted, started: dict[str, Any], index: int
    ) -> None:
        """`response.mcp_call.completed` (or `.failed` for a tool that reported an error or was stopped by the end
        of the turn), then the item done with its output: status completed, failed or incomplete."""
        if event.stopped:
            status, output, error = "incomplete", "[interrupted]", None
        else:
            output = truncate_output(event.result, self.tool_output_max_chars)
            status, error = ("failed", output) if event.is_error else ("completed", None)
        kind = "response.mcp_call.completed" if status == "completed" else "response.mcp_call.failed"
        self._emit(records, kind, item_id=started["id"], output_index=index)
        self._finish_item(records, index, {**started, "status": status, "output": output, "error": error})

    def _on_finished(self, records: list[SseRecord], finished: TurnFinished) -> None:
        for call_id in list(self._tools):
            self._on_tool_completed(records, ToolCompleted(call_id, "", "", True, 0, stopped=True))
        answered = finished.status in (TurnStatus.COMPLETED, TurnStatus.INCOMPLETE)
        self._close_reasoning(records, "completed" if answered else "incomplete")
        if answered:
            if self._message is None:
                self._open_message(records)  # the turn always ends with a (possibly empty) final message
            self._close_message(records, "completed", phase="final_answer")
        else:
            self._close_message(records, "completed" if finished.status is TurnStatus.FAILED else "incomplete")
        self.status = finished.status.value
        self._usage = finished.usage
        # the terminal record's journal time: a replay renders the same second (a record without one: creation)
        self.completed_at = int(finished.at) if finished.at is not None else self.head.created_at
        if finished.status is TurnStatus.FAILED:
            self._error = {"code": finished.error_code or "agent_error", "message": finished.error_message or "failed"}
        elif finished.status is TurnStatus.INCOMPLETE:
            code = finished.error_code or "iteration_budget_exhausted"
            self._incomplete = {"reason": _INCOMPLETE_REASONS.get(code, code)}
        kind = TERMINAL_EVENTS[finished.status]
        self._emit(records, kind, response=self.snapshot())
        self.terminal = records[-1]

    # -- turn-taking (WIRE.md §15.3) ------------------------------------------------------------------
    def _on_primed_completed(self, records: list[SseRecord], started: ToolStarted, event: ToolCompleted) -> None:
        """A server tool the suspended Response before this one started (e.g. the command an approval held): its
        `function_call` is done there, so only its output item comes here; hosted, the whole `mcp_call`."""
        self._close_open(records, "completed")
        if self.hosted:
            self._on_hosted_started(records, started)
            mcp, index = self._tools.pop(started.call_id)
            self._on_hosted_completed(records, event, mcp, index)
        else:
            self._tool_output(records, event)

    def _pause(self, records: list[SseRecord], asked: ClientRequest, events: list[TurnEvent], at: int) -> None:
        """End the Response at a request to the client, `completed` while the turn waits for the answer."""
        self.paused = asked
        self._close_reasoning(records, "completed")
        if isinstance(asked, QuestionAsked):
            self._close_tools_waiting(records)
            message = self._message or self._open_message(records)
            text = ("\n\n" if message.text.strip() else "") + question_prompt(asked)
            self._on_text(records, text)
            self._close_message(records, "completed", phase="final_answer")
        elif isinstance(asked, ApprovalRequested):
            self._close_message(records, "completed")
            name = self._waiting_tool_name()
            self._close_tools_waiting(records)
            index = self._new_index()
            item = {
                "id": item_id("mcpr", self.head.id, index),
                "type": "mcp_approval_request",
                "server_label": SERVER_LABEL,
                "name": name,
                "arguments": compact({"command": asked.command, "description": asked.description}),
            }
            self.approval_ids[item["id"]] = asked
            self._add(records, index, item)
            self._finish_item(records, index, item)
        else:
            self._close_message(records, "completed")
            self._close_tools_waiting(records)
            for event in events[at:]:
                if not isinstance(event, ToolCallRequested):
                    break
                self._client_call(records, event)
        self.status = "completed"
        self._usage = Usage()
        # No journal time reaches the renderer for a suspension: the Response's creation time keeps replays identical
        self.completed_at = self.head.created_at
        self._emit(records, "response.completed", response=self.snapshot())
        self.terminal = records[-1]

    def _waiting_tool_name(self) -> str:
        """The server tool an approval holds: the latest one still running."""
        if self._tools:
            started, _ = list(self._tools.values())[-1]
            return str(started["name"])
        return APPROVAL_TOOL

    def _close_tools_waiting(self, records: list[SseRecord]) -> None:
        """Server tools still running when the Response ends at a request: their call item is done here (a
        `function_call` completed: it was made; an `mcp_call` in_progress, without output), their result comes with
        the Response that resumes the turn."""
        for call_id in list(self._tools):
            started, index = self._tools.pop(call_id)
            if self.hosted:
                self._finish_item(records, index, {**started, "status": "in_progress"})
            else:
                self._finish_item(records, index, {**started, "status": "completed"})

    def _client_call(self, records: list[SseRecord], call: ToolCallRequested) -> None:
        """A client tool call as OpenAI streams a function call: added with empty arguments, the arguments in one or
        more deltas, their done, the item done `completed`."""
        index = self._new_index()
        fid = item_id("fc", self.head.id, index)
        item = {
            "id": fid,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": "",
        }
        self._shown[index] = len(self._shown)  # the client's own tool: shown whatever X-Hermes-Tool-Items says
        self._emit(records, "response.output_item.added", output_index=index, item=item)
        arguments = call.arguments
        for start in range(0, max(len(arguments), 1), MAX_ARGUMENT_DELTA):
            piece = arguments[start : start + MAX_ARGUMENT_DELTA]
            self._emit(records, "response.function_call_arguments.delta", item_id=fid, output_index=index, delta=piece)
        self._emit(
            records, "response.function_call_arguments.done", item_id=fid, output_index=index, arguments=arguments
        )
        self._finish_item(records, index, {**item, "status": "completed", "arguments": arguments})
