"""The journal of one turn: an append-only list of events with wake-ups for its followers, and its stored form.

Every HTTP surface is a view of a journal: live streams follow it, replays and resumes read a stored copy
(`decode_journal`) through the same interface.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import replace
from typing import overload

from ..core.events import ReasoningDelta, TextDelta, TurnEvent, TurnFinished, event_from_json, event_to_json


class Journal:
    """Append-only event list with wake-ups for any number of followers.

    `stamps[i]` is the wall-clock time event `i` was journaled (runs and session streams show it). Once settled and
    kept for reading, its events may be `pack`ed: the same sequence, held in a form the garbage collector skips.
    """

    __slots__ = ("_offers", "_waiters", "events", "finished", "listener", "stamps")

    def __init__(self) -> None:
        self.events: list[TurnEvent] | PackedEvents = []
        self.stamps: list[float] = []
        self.finished: TurnFinished | None = None
        self.listener: Callable[[Journal], None] | None = None  # e.g. the durable journal saver
        self._waiters: list[asyncio.Future[bool]] = []
        self._offers: list[Callable[[], bool]] = []  # parked followers that take what is appended in place

    @classmethod
    def settled(cls, events: Sequence[TurnEvent], stamps: Sequence[float] | None = None) -> Journal:
        """A journal holding recorded events (a replay); settled when they end with the terminal record."""
        journal = cls()
        events = list(events)
        if events and isinstance(events[-1], TurnFinished) and events[-1].at is None and stamps:
            events[-1] = replace(events[-1], at=stamps[-1])
        journal.events = events
        journal.stamps.extend(stamps if stamps is not None else [0.0] * len(events))
        if events and isinstance(events[-1], TurnFinished):
            journal.finished = events[-1]
        return journal

    def extend(self, events: list[TurnEvent], at: float | None = None) -> None:
        """Append events journaled now (or at `at`: the terminal record's time, fixed before it was persisted)."""
        if self.finished is not None or not events:
            return
        now = time.time() if at is None else at
        self._append(events, [now] * len(events))

    def extend_recorded(self, events: Sequence[TurnEvent], stamps: Sequence[float]) -> None:
        """Append events with the times they were journaled (a journal another gateway writes, read back)."""
        if self.finished is not None or not events:
            return
        self._append(list(events), list(stamps))

    def _append(self, events: list[TurnEvent], stamps: list[float]) -> None:
        last = events[-1]
        if isinstance(last, TurnFinished) and last.at is None:
            last = replace(last, at=stamps[-1])  # the Response's `completed_at` (WIRE.md §16)
            events = [*events[:-1], last]
        assert isinstance(self.events, list)  # packed only once settled, and a settled journal takes no more
        self.events.extend(events)
        self.stamps.extend(stamps)
        if isinstance(last, TurnFinished):
            self.finished = last
        if self._offers:
            offers, self._offers = self._offers, []
            for offer in offers:
                if offer():
                    self._offers.append(offer)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(True)
        if self.listener is not None:
            self.listener(self)

    async def follow(
        self,
        start: int = 0,
        idle_timeout: float | None = None,
        take: Callable[[list[TurnEvent]], bool] | None = None,
    ) -> AsyncIterator[list[TurnEvent] | None]:
        """Yield batches of events from `start` until the terminal record; `None` after each idle period.

        One idle timer per follower, re-armed only when it fires: a busy stream creates no timer per
        event (it would churn the loop's timer heap at thousands of events per second).

        `take`: while the follower is parked, what is appended goes to `take(batch)` at once, where it is appended —
        no task switch and no loop iteration per event (issue 25). True: taken, the follower stays parked; False:
        taken, and the follower wakes with an empty batch (its owner looks at what `take` left it). The terminal
        record always wakes it.
        """
        loop = asyncio.get_running_loop()
        position = start
        waiter: asyncio.Future[bool] | None = None
        taken = False
        idle_at = loop.time() + (idle_timeout or 0.0)
        timer: asyncio.TimerHandle | None = None

        def offered() -> bool:
            nonlocal position, idle_at, taken
            if waiter is None or waiter.done():
                return False
            batch = self.events[position:]
            position += len(batch)
            if idle_timeout is not None:
                idle_at = loop.time() + idle_timeout
            assert take is not None  # offered only with a `take`
            if take(batch) and self.finished is None:
                return True
            taken = True
            waiter.set_result(True)
            return False

        def on_timer() -> None:
            nonlocal timer, idle_at
            now = loop.time()
            if now >= idle_at:
                if waiter is not None and not waiter.done():
                    waiter.set_result(False)
                idle_at = now + (idle_timeout or 0.0)
            timer = loop.call_at(idle_at, on_timer)

        if idle_timeout is not None:
            timer = loop.call_at(idle_at, on_timer)
        try:
            while True:
                if taken:
                    taken = False
                    yield []
                    continue
                if position < len(self.events):
                    batch = self.events[position:]
                    position += len(batch)
                    if idle_timeout is not None:
                        idle_at = loop.time() + idle_timeout
                    yield batch
                    continue
                if self.finished is not None:
                    return
                waiter = loop.create_future()
                if take is None:
                    self._waiters.append(waiter)
                else:
                    self._offers.append(offered)
                woken = await waiter
                if not woken:
                    self._withdraw(waiter, offered)
                    yield None
        finally:
            if timer is not None:
                timer.cancel()
            if waiter is not None:  # closed while parked (its owner left): nothing is offered to it any more
                self._withdraw(waiter, offered)

    def pack(self) -> None:
        """Hold a settled journal's events packed (`PackedEvents`); readers see the same events."""
        if self.finished is not None and isinstance(self.events, list):
            self.events = PackedEvents(self.events)

    def _withdraw(self, waiter: asyncio.Future[bool], offer: Callable[[], bool]) -> None:
        if waiter in self._waiters:
            self._waiters.remove(waiter)
        if offer in self._offers:
            self._offers.remove(offer)


_DELTAS: tuple[type[TextDelta] | type[ReasoningDelta], ...] = (TextDelta, ReasoningDelta)
_DELTA_TAGS = {kind: tag for tag, kind in enumerate(_DELTAS)}
_Packed = TurnEvent | tuple[int, str]


def _packed(event: TurnEvent) -> _Packed:
    tag = _DELTA_TAGS.get(type(event))  # type: ignore[arg-type]
    return event if tag is None else (tag, event.text)  # type: ignore[union-attr]


def _unpacked(item: _Packed) -> TurnEvent:
    return _DELTAS[item[0]](item[1]) if type(item) is tuple else item  # type: ignore[return-value]


class PackedEvents(Sequence[TurnEvent]):
    """A settled journal's events with its text and reasoning deltas held as `(tag, text)` tuples and rebuilt when
    read (equal to what was journaled).

    Why: a registry keeps up to `max_recent` settled turns readable for an hour, and most of a turn's events are
    deltas. As objects, every full collection of the cyclic garbage collector walks each of them; a tuple of a small
    int and a str is untracked by the collector after its first pass. At 1 000 streams the full collections were
    the longest stalls of the event loop — the latency p99 — and grew with every thousand turns kept (issue 25)."""

    __slots__ = ("_items",)

    def __init__(self, events: Sequence[TurnEvent]) -> None:
        self._items: list[_Packed] = [_packed(e) for e in events]

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> TurnEvent: ...
    @overload
    def __getitem__(self, index: slice) -> list[TurnEvent]: ...
    def __getitem__(self, index: int | slice) -> TurnEvent | list[TurnEvent]:
        if isinstance(index, slice):
            return [_unpacked(item) for item in self._items[index]]
        return _unpacked(self._items[index])

    def __iter__(self) -> Iterator[TurnEvent]:
        return map(_unpacked, self._items)


EVENT_BYTES = 160  # one journaled event's object, its stamp and its list slots, besides its text


def journal_bytes(events: Sequence[TurnEvent]) -> int:
    """Estimated bytes a journal's events hold in memory: a fixed part per event and the length of its text fields
    (what bounds the settled turns a registry keeps, issue 20 defect 2). One pass, at settle, not per event."""
    total = 0
    for event in events:
        total += EVENT_BYTES
        for name in event.__slots__:
            value = getattr(event, name)
            if isinstance(value, str):
                total += len(value)
    return total


def encode_events(events: Sequence[TurnEvent], stamps: Sequence[float] | None = None) -> list[str]:
    """Events as stored rows; each carries its journal time under `ts`."""
    times = stamps if stamps is not None else [time.time()] * len(events)
    return [
        json.dumps({**event_to_json(e), "ts": ts}, ensure_ascii=False, separators=(",", ":"))
        for e, ts in zip(events, times, strict=True)
    ]


def decode_events(rows: Sequence[str]) -> tuple[list[TurnEvent], list[float]]:
    """Stored rows as events and the times they were journaled."""
    events: list[TurnEvent] = []
    stamps: list[float] = []
    for row in rows:
        data = json.loads(row)
        stamps.append(float(data.pop("ts", 0.0)))
        event = event_from_json(data)
        if isinstance(event, TurnFinished):
            event = replace(event, at=stamps[-1])  # journaled at its row's time, as the live journal set it
        events.append(event)
    return events, stamps


def decode_journal(rows: Sequence[str]) -> Journal:
    """Stored rows as a journal (settled when they end with the terminal record)."""
    return Journal.settled(*decode_events(rows))
