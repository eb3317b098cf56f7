"""The Response object of a stored response (WIRE.md §4.5–§4.7): rendered from the head its snapshot keeps and
its turn's events — live for read-back, or settled as its journal leaves it. Pure: no aiohttp, no I/O.

Shared by the Responses surface, its routes and recovery (which settles what a gone gateway left running)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..config.settings import Settings
from ..core.events import TurnEvent
from ..core.transcript import turn_messages
from ..store.base import StoredResponse
from .responses import HEAD_FIELDS, ResponseHead, ResponsesRenderer


def renderer(
    settings: Settings, head: ResponseHead, commentary: bool, tool_items: bool = True, *, hosted: bool = False
) -> ResponsesRenderer:
    """A renderer for one delivery. `tool_items` (X-Hermes-Tool-Items: off) filters this delivery only, never what
    is stored; `hosted` (the server's tools as `mcp_call` items, §15.3) is the response's own mode, fixed when it
    was created and stored with it (`StoredResponse.hosted`, `ResponsesReply.hosted`)."""
    return ResponsesRenderer(
        head,
        commentary=commentary,
        tool_output_max_chars=settings.tool_output_max_chars,
        tool_items=tool_items,
        hosted=hosted,
    )


def head_from_snapshot(snapshot: dict[str, Any]) -> ResponseHead:
    """The head a stored Response object keeps; the fields a snapshot stored before they existed lacks (WIRE.md §16's
    echoed settings) take their defaults."""
    return ResponseHead(**{name: value for name, value in snapshot.items() if name in HEAD_FIELDS})


def stored_renderer(settings: Settings, record: StoredResponse, tool_items: bool = True) -> ResponsesRenderer:
    """A renderer for one delivery of a stored response, primed for the journal before its start (WIRE.md §15.3): feed
    it the events from `record.start`."""
    r = renderer(settings, head_from_snapshot(record.snapshot), record.commentary, tool_items, hosted=record.hosted)
    return r


def render_from(r: ResponsesRenderer, events: Sequence[TurnEvent], start: int, queued: bool) -> ResponsesRenderer:
    """Render a Response's part of a turn's journal: `created`, then the events from `start` (a resumed Response's
    renderer primed with those before it, and its `in_progress` emitted as the turn already runs)."""
    r.created(queued)
    if start:
        r.prime(list(events[:start]))
        r.resumed()
    r.render(list(events[start:]))
    return r


def live_snapshot(
    settings: Settings, record: StoredResponse, events: Sequence[TurnEvent], tool_items: bool = True
) -> dict[str, Any]:
    """The Response object of a stored response whose turn is still running (here, or on another gateway)."""
    return render_from(stored_renderer(settings, record, tool_items), events, record.start, record.queued).snapshot()


def settled(
    settings: Settings, record: StoredResponse, head: ResponseHead, queued: bool, events: Sequence[TurnEvent]
) -> tuple[StoredResponse, list[dict[str, Any]]]:
    """A stored response as its turn's journal (terminal record included) leaves it: status, object and
    transcript, and every item (input and output) to store with it."""
    r = render_from(renderer(settings, head, record.commentary, hosted=record.hosted), events, record.start, queued)
    messages = turn_messages(record.messages, events)
    final = replace(record, status=r.status, snapshot=r.snapshot(), queued=queued, messages=messages)
    return final, [*record.input_items, *r.output]
