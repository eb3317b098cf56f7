"""The journal of one turn: an append-only list of events with wake-ups for its followers, and its stored form.

Every HTTP surface is a view of a journal: live streams follow it, replays and resumes read a stored copy
(`decode_journal`) through the same interface.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import overload

from ..core.events import ReasoningDelta, TextDelta, TurnEvent, TurnFinished, event_from_json, event_to_json
from ..core.json_text import compact


class Journal:
    """Append-only event list with wake-ups for any number of followers.

    `stamps[i]` is the wall-clock time event `i` was journaled (runs and session streams show it). `events` reads
    the journal (`JournalEvents`: deltas held as their text, frozen into tuples of atoms once the terminal record is in;
    `stamps` becomes a tuple then).
    """

    __slots__ = ("_offers", "_waiters", "events", "finished", "listener", "stamps")

    def __init__(self) -> None:
        self.events = JournalEvents()
        self.stamps: list[float] | tuple[float, ...] = []
        self.finished: TurnFinished | None = None
        self.listener: Callable[[Journal], None] | None = None  # e.g. the durable journal saver
        self._waiters: list[asyncio.Future[bool]] = []
        # parked followers that take what is appended, in place: offered where it begins and the events appended
        self._offers: list[Callable[[int, list[TurnEvent]], bool]] = []

    @classmethod
    def settled(cls, events: Sequence[TurnEvent], stamps: Sequence[float] | None = None) -> Journal:
        """A journal holding recorded events (a replay); settled when they end with the terminal record."""
        journal = cls()
        events = list(events)
        if events and isinstance(events[-1], TurnFinished) and events[-1].at is None and stamps:
            events[-1] = replace(events[-1], at=stamps[-1])
        journal.events = JournalEvents(events)
        journal.stamps = list(stamps) if stamps is not None else [0.0] * len(events)
        if events and isinstance(events[-1], TurnFinished):
            journal._settle(events[-1])
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
        assert isinstance(self.stamps, list)  # a settled journal takes no more
        start = len(self.events)
        self.events.extend(events)
        self.stamps.extend(stamps)
        if isinstance(last, TurnFinished):
            self._settle(last)
        if self._offers:
            offers, self._offers = self._offers, []
            for offer in offers:
                if offer(start, events):
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

        One idle timer per follower, re-armed only when it fires: a busy stream creates no timer per event (it would
        churn the loop's timer heap at thousands of events per second).

        `take`: while the follower is parked, what is appended goes to `take(batch)` at once, where it is appended —
        no task switch and no loop iteration per event (issue 25). True: taken, the follower stays parked; False:
        taken, and the follower wakes with an empty batch (its owner looks at what `take` left it). The terminal
        record always wakes it.
        """
        follower = _Follower(self, start, take, asyncio.get_running_loop(), idle_timeout)
        try:
            while True:
                if follower.taken:
                    follower.taken = False
                    yield []
                    continue
                position = follower.position
                if position < len(self.events):
                    batch = self.events[position:]
                    follower.position = position + len(batch)
                    follower.news()
                    yield batch
                    continue
                if self.finished is not None:
                    return
                waiter = follower.waiter = follower.loop.create_future()
                if take is None:
                    self._waiters.append(waiter)
                else:
                    self._offers.append(follower)
                woken = await waiter
                if not woken:
                    self._withdraw(waiter, follower)
                    yield None
        finally:
            follower.close()
            if follower.waiter is not None:  # closed while parked (its owner left): nothing is offered to it any more
                self._withdraw(follower.waiter, follower)

    def _settle(self, finished: TurnFinished) -> None:
        """The terminal record is in: nothing more is appended, and the events and stamps are frozen into tuples of
        atoms — the garbage collector untracks them at its next pass and never walks them again while the journal
        is kept readable (an hour, up to `max_recent` turns; issue 25)."""
        self.finished = finished
        self.events.freeze()
        self.stamps = tuple(self.stamps)

    def _withdraw(self, waiter: asyncio.Future[bool], offer: Callable[[int, list[TurnEvent]], bool]) -> None:
        if waiter in self._waiters:
            self._waiters.remove(waiter)
        if offer in self._offers:
            self._offers.remove(offer)


class _Follower:
    """One follower's state: where it has read to, the future it is parked on, and its idle timer (which wakes that
    future with False once per `seconds` without news, re-armed only when it fires). It is itself the offer a parked
    follower takes appends by.

    One object rather than closures over the generator's variables (two functions, their cells, a timer object):
    every full garbage collection walks what an open stream holds (issue 25). Its timer handle refers back to it;
    `close()`, run when the follower ends, cancels the handle and so leaves no cycle for the collector.
    """

    __slots__ = ("_at", "_handle", "_seconds", "journal", "loop", "position", "take", "taken", "waiter")

    def __init__(
        self,
        journal: Journal,
        position: int,
        take: Callable[[list[TurnEvent]], bool] | None,
        loop: asyncio.AbstractEventLoop,
        seconds: float | None,
    ) -> None:
        self.journal = journal
        self.position = position
        self.take = take
        self.taken = False  # `take` took a batch and asked to be woken: the generator yields an empty batch
        self.waiter: asyncio.Future[bool] | None = None
        self.loop = loop
        self._seconds = seconds
        self._at = 0.0
        self._handle: asyncio.TimerHandle | None = None
        if seconds is not None:
            self._at = loop.time() + seconds
            self._handle = loop.call_at(self._at, self._fire)

    def __call__(self, start: int, appended: list[TurnEvent]) -> bool:
        """Offered what was appended at `start`: True while it stays parked and takes more this way."""
        waiter = self.waiter
        if waiter is None or waiter.done():
            return False
        # A parked follower has read up to where this append began: it takes the list appended as it is.
        journal = self.journal
        batch = appended if self.position == start else journal.events[self.position :]
        self.position += len(batch)
        self.news()
        assert self.take is not None  # offered only with a `take`
        if self.take(batch) and journal.finished is None:
            return True
        self.taken = True
        waiter.set_result(True)
        return False

    def news(self) -> None:
        """Something arrived: the idle period starts again."""
        if self._seconds is not None:
            self._at = self.loop.time() + self._seconds

    def _fire(self) -> None:
        assert self._seconds is not None  # armed only with an idle timeout
        now = self.loop.time()
        if now >= self._at:
            waiter = self.waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(False)
            self._at = now + self._seconds
        self._handle = self.loop.call_at(self._at, self._fire)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


_DELTAS: tuple[type[TextDelta] | type[ReasoningDelta], ...] = (TextDelta, ReasoningDelta)
_DELTA_KINDS: dict[type, int] = {kind: tag for tag, kind in enumerate(_DELTAS)}
_OTHER = len(_DELTAS)  # any other event's kind: its value is its index among the others
_DELTA_NAMES = tuple(kind.__name__ for kind in _DELTAS)  # as `event_to_json` names them
_NO_RUN = -1  # `coalesced()` between runs of deltas (no byte is -1)


class JournalEvents(Sequence[TurnEvent]):
    """A journal's events, text and reasoning deltas held as their text: each event's kind in `_kinds` (a byte) and
    its value in `_values` — a delta's text, or for any other event its index among `_others`, where it is kept as
    the very object journaled (`resume_position` finds a request by identity). Read back, a delta is a new object
    equal to the one journaled; a parked follower is handed the journaled objects themselves (`Journal._append`).

    Why: every object the cyclic garbage collector tracks is walked by every full collection while it lives, and a
    running journal kept one per delta for the turn's life — at 1 000 streams × 20 Hz, twenty thousand a second that
    outlived the young collections, so they also brought the next full collection closer (issue 25). Strings and
    byte arrays are not tracked: a running journal is three tracked containers and its few other events however
    many deltas it holds. `freeze()`, at the terminal record, makes them tuples of atoms, which the collector stops
    tracking at its next pass: a settled journal kept for an hour is walked only for its other events. Reading back
    costs a delta object per delta read, so what reads a whole journal does not read it back: a settlement folds it
    `coalesced()`, the durable saver writes its rows with `encode_journal` (bench/README, issue 25, ninth session).
    """

    __slots__ = ("_kinds", "_others", "_values")

    def __init__(self, events: Iterable[TurnEvent] = ()) -> None:
        self._kinds: bytearray | bytes = bytearray()
        self._values: list[str | int] | tuple[str | int, ...] = []
        self._others: list[TurnEvent] | tuple[TurnEvent, ...] = []
        self.extend(events)

    def extend(self, events: Iterable[TurnEvent]) -> None:
        kinds, values, others = self._kinds, self._values, self._others
        assert isinstance(kinds, bytearray) and isinstance(values, list) and isinstance(others, list)  # not frozen
        for event in events:
            kind = _DELTA_KINDS.get(type(event), _OTHER)
            kinds.append(kind)
            if kind == _OTHER:
                values.append(len(others))
                others.append(event)
            else:
                values.append(event.text)  # type: ignore[union-attr]

    def freeze(self) -> None:
        """Nothing more is appended: tuples of atoms, which the collector stops tracking."""
        self._kinds = bytes(self._kinds)
        self._values = tuple(self._values)
        self._others = tuple(self._others)

    def bytes(self) -> int:
        """`journal_bytes` of these events, deltas read as they are held."""
        total = EVENT_BYTES * len(self._kinds)
        for kind, value in zip(self._kinds, self._values, strict=True):
            if kind != _OTHER:
                total += len(value)  # type: ignore[arg-type]
        return total + sum(_text_bytes(event) for event in self._others)

    def coalesced(self) -> Iterator[TurnEvent]:
        """The events with each run of adjacent deltas of one kind joined into one delta, as the callback sink
        coalesces them: what folds the same — a transcript, what a turn said, the requests it left unanswered — read
        without making an object per delta (a settlement's reads: at the end of 1 000 streams at once they were the
        loop's backlog, issue 25)."""
        others = self._others
        run: list[str] = []  # the texts of the run of deltas being read
        run_kind = _NO_RUN
        for kind, value in zip(self._kinds, self._values, strict=True):
            if kind == run_kind:
                run.append(value)  # type: ignore[arg-type]  # a delta's text
                continue
            if run:
                yield _DELTAS[run_kind]("".join(run))
                run = []
            if kind == _OTHER:
                run_kind = _NO_RUN
                yield others[value]  # type: ignore[index]
            else:
                run_kind = kind
                run.append(value)  # type: ignore[arg-type]
        if run:
            yield _DELTAS[run_kind]("".join(run))

    def _unpacked(self, kind: int, value: str | int) -> TurnEvent:
        return self._others[value] if kind == _OTHER else _DELTAS[kind](value)  # type: ignore[index,arg-type]

    def __len__(self) -> int:
        return len(self._kinds)

    @overload
    def __getitem__(self, index: int) -> TurnEvent: ...
    @overload
    def __getitem__(self, index: slice) -> list[TurnEvent]: ...
    def __getitem__(self, index: int | slice) -> TurnEvent | list[TurnEvent]:
        if isinstance(index, slice):
            return list(map(self._unpacked, self._kinds[index], self._values[index]))
        return self._unpacked(self._kinds[index], self._values[index])

    def __iter__(self) -> Iterator[TurnEvent]:
        return map(self._unpacked, self._kinds, self._values)

    def __eq__(self, other: object) -> bool:
        # Equal to the list it stands for, as the journal's events were journaled.
        if isinstance(other, JournalEvents | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, which is unhashable


EVENT_BYTES = 160  # one journaled event's object, its stamp and its list slots, besides its text


def journal_bytes(events: Sequence[TurnEvent]) -> int:
    """Estimated bytes a journal's events hold in memory: a fixed part per event and the length of its text fields
    (what bounds the settled turns a registry keeps, issue 20 defect 2). One pass, at settle, not per event."""
    return events.bytes() if isinstance(events, JournalEvents) else _bytes(events)


def _bytes(events: Sequence[TurnEvent]) -> int:
    return EVENT_BYTES * len(events) + sum(_text_bytes(event) for event in events)


def _text_bytes(event: TurnEvent) -> int:
    return sum(len(value) for name in event.__slots__ if isinstance(value := getattr(event, name), str))


def encode_events(events: Sequence[TurnEvent], stamps: Sequence[float] | None = None) -> list[str]:
    """Events as stored rows; each carries its journal time under `ts`."""
    times = stamps if stamps is not None else [time.time()] * len(events)
    return [compact({**event_to_json(e), "ts": ts}) for e, ts in zip(events, times, strict=True)]


def encode_journal(journal: Journal, start: int, end: int) -> list[str]:
    """`encode_events` of the journal's events `start:end` and their stamps, each delta's row written from its text
    as it is held (the durable saver's group commits: no delta object made to be encoded)."""
    events = journal.events
    others = events._others
    rows = []
    held = zip(events._kinds[start:end], events._values[start:end], journal.stamps[start:end], strict=True)
    for kind, value, ts in held:
        if kind == _OTHER:
            data = {**event_to_json(others[value]), "ts": ts}  # type: ignore[index]
        else:
            data = {"t": _DELTA_NAMES[kind], "text": value, "ts": ts}
        rows.append(compact(data))
    return rows


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
