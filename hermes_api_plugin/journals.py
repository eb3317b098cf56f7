"""Durable turn journals: watched journals are written to the store in batches, never per event.

A journal marks itself dirty on append; one timer per saver flushes every dirty journal in one store
call per journal after `interval` seconds. A terminal record triggers an immediate flush.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Sequence

from .events import TurnEvent, event_from_json, event_to_json
from .store.base import Store
from .turns import Journal

log = logging.getLogger("hermes_api_plugin")


def encode_events(events: Sequence[TurnEvent]) -> list[str]:
    return [json.dumps(event_to_json(e), ensure_ascii=False, separators=(",", ":")) for e in events]


def decode_events(rows: Sequence[str]) -> list[TurnEvent]:
    return [event_from_json(json.loads(row)) for row in rows]


class JournalSaver:
    def __init__(self, store: Store, interval: float = 0.25) -> None:
        self.store = store
        self.interval = interval
        self._ids: dict[int, str] = {}  # id(journal) → turn id
        self._journals: dict[int, Journal] = {}
        self._written: dict[int, int] = {}
        self._dirty: set[int] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Task[None] | None = None

    def watch(self, turn_id: str, journal: Journal) -> None:
        key = id(journal)
        self._ids[key] = turn_id
        self._journals[key] = journal
        self._written[key] = 0
        journal.listener = self._on_extend
        if journal.events:
            self._on_extend(journal)

    def _on_extend(self, journal: Journal) -> None:
        self._dirty.add(id(journal))
        loop = asyncio.get_running_loop()
        if journal.finished is not None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_soon(self._kick)
        elif self._timer is None:
            self._timer = loop.call_later(self.interval, self._kick)

    def _kick(self) -> None:
        self._timer = None
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.ensure_future(self.flush())
        else:  # a flush is running: look again after it
            self._timer = asyncio.get_running_loop().call_later(self.interval, self._kick)

    async def flush(self) -> None:
        """Write every dirty journal's new events (one store call per journal)."""
        dirty, self._dirty = self._dirty, set()
        for key in dirty:
            journal = self._journals.get(key)
            if journal is None:
                continue
            start = self._written[key]
            events = journal.events[start:]
            if events:
                try:
                    await self.store.append_journal(self._ids[key], start, encode_events(events))
                except Exception:  # noqa: BLE001 - keep serving; the next flush retries these events
                    log.exception("[API Server] could not write the journal of %s", self._ids[key])
                    self._dirty.add(key)
                    continue
                self._written[key] = start + len(events)
            if journal.finished is not None and self._written[key] == len(journal.events):
                journal.listener = None
                for table in (self._ids, self._journals, self._written):
                    table.pop(key, None)

    async def write_now(self, turn_id: str, journal: Journal, extra: Sequence[TurnEvent] = ()) -> None:
        """Write a journal's unwritten events plus `extra` (numbered after them) right now."""
        key = id(journal)
        start = self._written.get(key, 0)
        events = [*journal.events[start:], *extra]
        if events:
            await self.store.append_journal(turn_id, start, encode_events(events))
        if key in self._written:
            self._written[key] = start + len(journal.events[start:])

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._flushing is not None:
            await asyncio.gather(self._flushing, return_exceptions=True)
        await self.flush()
