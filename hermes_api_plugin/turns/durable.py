"""Durable turn journals with group commit: never one disk write per event.

Watched journals are written to the store in one transaction per flush, covering every journal with
new events. A stream that must not show an event before it is durable awaits `durable(journal)`,
which joins the next group commit; otherwise a timer flushes `interval` seconds after the first
unsaved append, and a terminal record flushes at once — so does a request to the client (WIRE.md
§15.1): a suspended turn may wait many minutes, and a restart or another gateway must see what it
waits for. A flush the store fails keeps its events unsaved and is retried, backing off, even when
no event follows (a journal that ended while the database was down).
On a shared store the interval is shorter (SHARED_INTERVAL_S): gateways following a turn another one runs
read its rows when they commit. A turn another gateway follows (`followed`, told through the store's feed) does not
wait out the interval at all: each append schedules a commit at once, and one commit at a time still batches what
arrives meanwhile — so a follower sees an event a commit and a NOTIFY after its owner's clients (issue 25).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from ..core.events import (
    ApprovalRequested,
    QuestionAsked,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
)
from ..store.base import StoreError
from ..store.roles import JournalStore
from .journal import Journal, decode_journal, encode_events, encode_journal
from .meter import CommitMeter

log = logging.getLogger("hermes_api_plugin")

MAX_RETRY_S = 5.0  # the longest pause between retries of a failed flush
INTERVAL_S = 0.25  # one gateway: a stream waiting on durability joins the next commit at once anyway
SHARED_INTERVAL_S = 0.05  # a shared store: followers on other gateways see events this much later at most


class JournalSaver:
    """Writes watched journals to the store by group commit; `durable()` lets a stream wait for its events."""

    def __init__(self, store: JournalStore, interval: float = INTERVAL_S, meter: CommitMeter | None = None) -> None:
        self.store = store
        self.interval = interval
        self.meter = meter  # group commit sizes and durations (turns/meter.py); None: metrics off
        self._watched: dict[int, tuple[str, Journal]] = {}  # id(journal) → (turn id, journal)
        self._keys: dict[str, int] = {}  # turn id → id(journal) of the watched ones
        self._followed: set[int] = set()  # watched journals another gateway follows: committed as they come
        self._written: dict[int, int] = {}
        self._dirty: set[int] = set()
        self._waiters: list[asyncio.Future[None]] = []
        self._timer: asyncio.Handle | None = None
        self._flushing: asyncio.Future[None] | None = None
        self._again = False
        self._failures = 0  # flushes failed in a row: the retry backs off
        self._closed = False

    def watch(self, turn_id: str, journal: Journal) -> None:
        key = id(journal)
        self._watched[key] = (turn_id, journal)
        self._keys[turn_id] = key
        self._written[key] = 0
        journal.listener = self._on_extend
        if journal.events:
            self._on_extend(journal)

    def watching(self, journal: Journal) -> bool:
        return id(journal) in self._watched

    def followed(self, turn_id: str) -> None:
        """Another gateway follows `turn_id`: its events are committed as they come from now on, until it ends."""
        key = self._keys.get(turn_id)
        if key is None:
            return
        self._followed.add(key)
        if key in self._dirty:
            self._schedule(0.0)

    def _on_extend(self, journal: Journal) -> None:
        key = id(journal)
        self._dirty.add(key)
        if (
            key in self._followed
            or journal.finished is not None
            or isinstance(journal.events[-1], (ApprovalRequested, QuestionAsked))
        ):
            self._schedule(0.0)
        elif self._timer is None:
            self._schedule(self.interval)

    def _schedule(self, delay: float) -> None:
        loop = asyncio.get_running_loop()
        if self._timer is not None:
            if delay > 0:
                return
            self._timer.cancel()
        self._timer = loop.call_later(delay, self._kick) if delay > 0 else loop.call_soon(self._kick)

    def _kick(self) -> None:
        self._timer = None
        if self._flushing is not None and not self._flushing.done():
            self._again = True  # one group commit at a time; another runs right after this one
            return
        self._flushing = asyncio.ensure_future(self._flush_loop())

    async def _flush_loop(self) -> None:
        while True:
            self._again = False
            await self.flush()
            if not self._again:
                return

    async def durable(self, journal: Journal) -> None:
        """Return once every event now in `journal` is in the store (joins the next group commit)."""
        key = id(journal)
        if key not in self._watched or self._written[key] >= len(journal.events):
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._dirty.add(key)
        self._schedule(0.0)
        await waiter

    async def flush(self) -> None:
        """One transaction for every watched journal with unsaved events; wakes the waiters it covers."""
        dirty, self._dirty = self._dirty, set()
        waiters, self._waiters = self._waiters, []
        batches: list[tuple[str, int, list[str]]] = []
        ends: dict[int, int] = {}
        for key in dirty:
            if key not in self._watched:
                continue
            turn_id, journal = self._watched[key]
            start, end = self._written[key], len(journal.events)
            if end > start:
                batches.append((turn_id, start, encode_journal(journal, start, end)))
                ends[key] = end
        try:
            if batches:
                began = time.perf_counter()
                await self.store.append_journals(batches, awaited=bool(waiters))
                if self.meter is not None:
                    self.meter.committed(sum(len(b[2]) for b in batches), time.perf_counter() - began)
        except Exception as exc:
            if isinstance(exc, StoreError):  # the database is down: one line, not a traceback per flush
                log.warning("[API Server] could not write turn journals, will retry: %s", exc)
            else:
                log.exception("[API Server] could not write turn journals")
            self._dirty |= set(ends)
            # Retried even if no event follows (a finished journal): sooner while the store keeps failing would
            # only queue attempts behind the one waiting for a connection.
            self._failures += 1
            if not self._closed:  # after close() the store is closed too: nothing to wait for
                self._schedule(min(self.interval * 2**self._failures, MAX_RETRY_S))
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
            return
        self._failures = 0
        for key, end in ends.items():
            self._written[key] = end
            turn_id, journal = self._watched[key]
            if journal.finished is not None and end == len(journal.events):
                journal.listener = None
                del self._watched[key], self._written[key]
                if self._keys.get(turn_id) == key:
                    del self._keys[turn_id]
                self._followed.discard(key)
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def write_now(
        self, turn_id: str, journal: Journal, extra: Sequence[TurnEvent] = (), at: float | None = None
    ) -> None:
        """Write a journal's unsaved events plus `extra` (numbered after them, journaled at `at`) right now."""
        key = id(journal)
        start = self._written.get(key, 0)
        pending = journal.events[start:]
        events = [*pending, *extra]
        if events:
            when = time.time() if at is None else at
            stamps = [*journal.stamps[start:], *(when for _ in extra)]
            await self.store.append_journals([(turn_id, start, encode_events(events, stamps))])
        if key in self._written:
            self._written[key] = max(self._written[key], start + len(pending))

    async def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._flushing is not None:
            await asyncio.gather(self._flushing, return_exceptions=True)
        await self.flush()


async def stored_journal(store: JournalStore, turn_id: str) -> Journal:
    """A turn's journal as the store holds it (settled when it ends with the terminal record)."""
    return decode_journal(await store.load_journal(turn_id))


RESTART_MESSAGE = "The gateway restarted before this turn settled."


async def close_journal(store: JournalStore, turn_id: str) -> tuple[Journal, list[TurnEvent]]:
    """Load a stored journal; if a gone process left it open, close it (running tools stopped, then a
    failed/unknown_execution terminal record, WIRE.md §5.4). Returns the journal and what was added."""
    journal = await stored_journal(store, turn_id)
    if journal.finished is not None:
        return journal, []
    running = {e.call_id: e for e in journal.events if isinstance(e, ToolStarted)}
    for event in journal.events:
        if isinstance(event, ToolCompleted):
            running.pop(event.call_id, None)
    closing: list[TurnEvent] = [
        ToolCompleted(s.call_id, s.name, "[interrupted]", True, 0, stopped=True) for s in running.values()
    ]
    closing.append(TurnFinished(TurnStatus.FAILED, error_code="unknown_execution", error_message=RESTART_MESSAGE))
    start = len(journal.events)
    stamps = [time.time()] * len(closing)
    await store.append_journals([(turn_id, start, encode_events(closing, stamps))])
    return Journal.settled([*journal.events, *closing], [*journal.stamps, *stamps]), closing
