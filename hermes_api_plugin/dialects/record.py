"""The one SSE record type every dialect returns and `sse.py` writes, and the fold the numbered dialects share.

Pure: no aiohttp. A record is what becomes one SSE message: an optional `event:` name, the `data:` payload,
an optional `id:`. `NumberedFold` walks a journal for the dialects whose records carry ids 1…n (runs
events, session chat streams): it stamps each event with its journal time, feeds the transcript and
drops the completion of a tool that never started.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from json.encoder import encode_basestring  # C: a string as json.dumps(ensure_ascii=False) writes it
from typing import Any, NamedTuple, get_args

from ..core.events import (
    ApprovalRequested,
    ApprovalResponded,
    ClientAnswer,
    ClientRequest,
    QuestionAnswered,
    QuestionAsked,
    ToolCallRequested,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnTranscript,
)
from ..core.json_text import compact

ClientExchange = ClientRequest | ClientAnswer
CLIENT_EXCHANGES = get_args(ClientRequest) + get_args(ClientAnswer)  # for isinstance: the requests and answers


class SseRecord(NamedTuple):
    """One SSE message. A NamedTuple: records are built per event on the hot path."""

    event: str | None
    data: dict[str, Any]
    id: int | None = None


def wire_json(payload: Any) -> str:
    """A payload as every record is written: compact, raw UTF-8 (http/sse.py, the WebSocket's text frames)."""
    if type(payload) is Encoded:
        return payload.json
    return compact(payload)


class Encoded(dict[str, Any]):
    """A payload whose JSON text is made already (`json`: exactly what `wire_json` of the mapping would write): a chat
    delta is its stream's one template with the text escaped into it, not a whole chunk encoded per token (issue 25).
    Still the mapping, for everything that reads records."""

    __slots__ = ("json",)

    json: str


class Template:
    """The JSON text of one record payload around its single varying string, made at its first use: `fill(text)` is
    that payload with `text` in place of the marker, as an `Encoded`. A payload whose other values hold the marker
    (a client may name its model anything) cannot be split so: `fill` then returns the plain mapping."""

    MARK = "\ue000\ue001"  # private-use characters: no id or field name the gateway makes holds them

    __slots__ = ("_after", "_before", "_build")

    def __init__(self, build: Callable[[str], dict[str, Any]]) -> None:
        self._build = build
        self._before: str | None = None  # None: not made yet (a stream may never send this kind of record)
        self._after: str | None = None

    def fill(self, text: str) -> dict[str, Any]:
        payload = self._build(text)
        if self._before is None:
            parts = wire_json(self._build(self.MARK)).split(encode_basestring(self.MARK))
            self._before = parts[0]
            self._after = parts[1] if len(parts) == 2 else None
        if self._after is None:
            return payload
        encoded = Encoded(payload)
        encoded.json = self._before + encode_basestring(text) + self._after
        return encoded


def after_id(records: Sequence[SseRecord], last_seen: int) -> list[SseRecord]:
    """The records a client that saw ids up to `last_seen` has not seen yet."""
    return [r for r in records if r.id is None or r.id > last_seen]


def request_fields(asked: ClientRequest) -> dict[str, Any]:
    """What a request to the client says: an approval's command, description and choices (WIRE §14.2), a question
    and its options, a client tool call's id, name and arguments (§15.4)."""
    if isinstance(asked, ApprovalRequested):
        return {"command": asked.command, "description": asked.description, "choices": list(asked.choices)}
    if isinstance(asked, ToolCallRequested):
        return {"call_id": asked.call_id, "name": asked.name, "arguments": asked.arguments}
    return {"question": asked.question, "choices": list(asked.choices)}


def exchange_record(event: ClientExchange) -> tuple[str, dict[str, Any]]:
    """The named-event form of a request to the client or its answer, the same on run events and session streams
    (WIRE §14.2, §15.4)."""
    if isinstance(event, ApprovalRequested):
        return "approval.request", request_fields(event)
    if isinstance(event, QuestionAsked):
        return "question.request", request_fields(event)
    if isinstance(event, ToolCallRequested):
        return "tool_call.request", request_fields(event)
    if isinstance(event, ApprovalResponded):
        return "approval.responded", {"choice": event.choice}
    if isinstance(event, QuestionAnswered):
        return "question.responded", {"answer": event.answer}
    return "tool_call.responded", {"call_id": event.call_id, "output": event.output}


class NumberedFold:
    """The shared walk over a journal; subclasses turn each event into records with `emit`. A subclass that ends its
    delivery at a request to the client sets `paused`: the rest of the batch is not rendered."""

    def __init__(self, stamps: Sequence[float], start: int = 0) -> None:
        self.stamps = stamps  # stamps[i]: when journal event i was journaled
        self.transcript = TurnTranscript()
        self.last_id = 0
        self._position = start  # the journal position of the next event (a resumed delivery begins after 0)
        self._tools: dict[str, ToolStarted] = {}
        self.paused: ClientRequest | None = None

    def render(self, events: Sequence[TurnEvent]) -> list[SseRecord]:
        records: list[SseRecord] = []
        for event in events:
            at = self.stamps[self._position] if self._position < len(self.stamps) else 0.0
            self._position += 1
            emitted = self.transcript.feed(event)
            if isinstance(event, ToolStarted):
                self._tools[event.call_id] = event
            elif isinstance(event, ToolCompleted) and self._tools.pop(event.call_id, None) is None:
                continue  # an orphan completion is never reported
            self.on_event(records, event, emitted, round(at, 3))
            if self.paused is not None:
                break
        return records

    def prime(self, events: Sequence[TurnEvent]) -> None:
        """Know the tools of what the journal held before a resumed delivery, without rendering it."""
        for event in events:
            if isinstance(event, ToolStarted):
                self._tools[event.call_id] = event
            elif isinstance(event, ToolCompleted):
                self._tools.pop(event.call_id, None)

    def is_paused(self) -> bool:
        return self.paused is not None

    def on_event(self, records: list[SseRecord], event: TurnEvent, emitted: str | None, at: float) -> None:
        """Append the records of one event (`emitted`: what the transcript added, e.g. a reasoning delta)."""
        raise NotImplementedError

    def emit(self, records: list[SseRecord], event: str | None, payload: dict[str, Any]) -> int:
        """Append a record with the next id; returns that id."""
        self.last_id += 1
        records.append(SseRecord(event, payload, self.last_id))
        return self.last_id
