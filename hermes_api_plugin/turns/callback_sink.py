"""The callback sink of one turn: agent callbacks (any thread) in, journal events (loop thread) out.

Callbacks only append a typed record under a lock and schedule one loop wake-up per burst; the loop converts the
records into events — normalising tool ids and names, pairing completions with their starts — coalesces adjacent
deltas and appends them to the journal in one batch.

A delta made on the loop thread itself (a runtime on the loop) is journaled at once when no burst is open, and so
are the next IN_PLACE_DELTAS within the burst window; only a producer faster than that is coalesced for the rest of
the window. A coalesced delta waits for the window's timer, and on a loaded loop that is a whole loop iteration, not
2 ms: a runtime that fell behind its schedule catches up with several deltas in one step, and coalescing them cost
each one that wait — at 1 000 streams × 20 Hz, the whole p99 (issue 25, tenth session in bench/README).

A burst that another thread opens after a quiet spell is handed to the loop: the callback returns once the loop has
journaled it — and every stream writing in place has written it — or after HANDOFF_S, whichever comes first. Waiting
lets go of the interpreter lock. Without it the agent's thread goes on parsing the rest of the provider's response
while holding the lock, and the woken loop waits for the lock before it can write the turn's first byte: about 1.9 ms
of a follow-up turn's first reasoning byte (issue 25; alternated runs in bench/README). Within a burst, callbacks
never wait.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from typing import Any, NamedTuple

from ..core.events import (
    ApprovalRequested,
    ApprovalResponded,
    ClientAnswer,
    ClientRequest,
    Commentary,
    Compacted,
    ReasoningDelta,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
)
from .journal import Journal
from .meter import TurnMeter
from .tool_display import (
    VISIBLE_ASCII,
    as_json_string,
    display_tool_name,
    new_call_id,
    tool_emoji,
    tool_label,
)

COALESCE_S = 0.002  # burst window of the callback sink (WIRE.md §2.2 allows up to 50 ms)
# Deltas an in-loop runtime journals at once within one burst window before the rest are coalesced: a catch-up after
# 800 ms of lag at 20 deltas/s goes out as it is made, while a fast producer still costs one write per window after
# its first IN_PLACE_DELTAS (the throughput part of bench/: 20 000 deltas, one per loop step).
IN_PLACE_DELTAS = 16
HANDOFF_S = 0.002  # the longest a callback opening a burst waits for the loop to journal it


class ToolStart(NamedTuple):
    """A tool-start callback as the agent made it (ids and names not yet normalised)."""

    raw_id: Any
    raw_name: Any
    arguments: Any
    at: float  # time.monotonic() of the callback


class ToolEnd(NamedTuple):
    """A tool-complete callback as the agent made it."""

    raw_id: Any
    raw_name: Any
    result: Any
    is_error: bool
    at: float


class DeltaRun:
    """Consecutive reasoning or answer deltas not yet journaled: one object per run, not per token.

    Deltas are the hot path (one callback per token); appending to the trailing run under the lock costs
    less than building a record per delta, and the journal gets one coalesced event per run anyway.
    """

    __slots__ = ("kind", "parts")

    def __init__(self, kind: type[ReasoningDelta] | type[TextDelta], text: str) -> None:
        self.kind = kind
        self.parts = [text]

    def event(self) -> ReasoningDelta | TextDelta:
        return self.kind("".join(self.parts))


# What a callback enqueues: delta runs, finished events for commentary and compaction, raw records for
# tools (their ids are normalised on the loop, where the set of running tools lives).
Pending = DeltaRun | Commentary | Compacted | ClientRequest | ClientAnswer | ToolStart | ToolEnd


class CallbackSink:
    """The TurnSink of one turn: thread-safe enqueue, loop-side normalisation into journal events."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        journal: Journal,
        secret_values: tuple[str, ...] = (),
        meter: TurnMeter | None = None,
        handoff_s: float = HANDOFF_S,
        in_place_deltas: int = IN_PLACE_DELTAS,
    ) -> None:
        self._loop = loop
        self._handoff_s = handoff_s
        self._in_place_deltas = in_place_deltas
        self._loop_thread = threading.get_ident()  # sinks are built on the loop thread
        self._journal = journal
        self._secrets = secret_values
        self._lock = threading.Lock()
        self._pending: list[Pending] = []
        # the delta run `_pending` ends with, which the next delta of its kind extends; None when it ends otherwise,
        # is empty or the sink is closed
        self._tail: DeltaRun | None = None
        self._scheduled = False
        self._closed = False
        self._last_flush = float("-inf")
        self._in_place = 0  # deltas journaled at once in the current burst window after the one that opened it
        self._handoff: threading.Event | None = None  # set once the loop journaled the burst a thread waits on
        # time.monotonic() of the first reasoning and answer callbacks (turns/meter.py observes them at settlement)
        self.meter = meter
        self.first_reasoning_at: float | None = None
        self.first_text_at: float | None = None
        # Loop-side state: normalised tool ids and the tools still running.
        self._used_ids: set[str] = set()
        self._open: dict[str, ToolStarted] = {}
        self._open_by_raw: dict[Any, deque[str]] = {}
        self._open_by_name: dict[str, deque[str]] = {}

    # -- agent side (any thread) ------------------------------------------------------------------
    # The two delta callbacks are the hot path, one call per token: a delta that extends the open run is appended
    # right here, without another call (issue 25: the sink was a seventh of the bench producer's cost per delta). The
    # lock is taken by its methods: a `with` statement costs more than twice as much (470 against 260 ns here).
    def on_reasoning(self, text: str) -> None:
        if text:
            lock = self._lock
            lock.acquire()
            try:
                tail = self._tail
                if tail is not None and tail.kind is ReasoningDelta:
                    tail.parts.append(text)  # a flush is already scheduled for the run
                    return
            finally:
                lock.release()
            if self.first_reasoning_at is None:
                self.first_reasoning_at = time.monotonic()
            self._enqueue_delta(ReasoningDelta, text)

    def on_text(self, text: str | None) -> None:
        if text:
            lock = self._lock
            lock.acquire()
            try:
                tail = self._tail
                if tail is not None and tail.kind is TextDelta:
                    tail.parts.append(text)
                    return
            finally:
                lock.release()
            if self.first_text_at is None:
                self.first_text_at = time.monotonic()
            self._enqueue_delta(TextDelta, text)

    def on_tool_start(self, call_id: str | None, name: str, arguments: Any) -> None:
        self._enqueue(ToolStart(call_id, name, arguments, time.monotonic()))

    def on_tool_complete(self, call_id: str | None, name: str, result: Any, is_error: bool) -> None:
        self._enqueue(ToolEnd(call_id, name, result, bool(is_error), time.monotonic()))

    def on_commentary(self, text: str, already_streamed: bool) -> None:
        if text:
            self._enqueue(Commentary(text, bool(already_streamed)))

    def on_compaction(self, summary: str) -> None:
        self._enqueue(Compacted(summary or ""))

    def on_approval_request(self, command: str, description: str, choices: tuple[str, ...]) -> None:
        self._enqueue(ApprovalRequested(command, description, tuple(choices)))

    def on_approval_response(self, choice: str) -> None:
        # Through the same queue as the request, so the decision is journaled after it whichever thread decides.
        self._enqueue(ApprovalResponded(choice))

    def on_suspension(self, event: ClientRequest | ClientAnswer) -> None:
        """A suspension's request or answer (turns/suspension.py, on the loop thread): journaled at once, after what
        the agent reported before it, so the run's status has changed when the caller goes on (WIRE.md §15.1)."""
        self._enqueue(event)
        self.flush()

    def close(self) -> None:
        """Stop accepting callbacks and convert what is pending (called on the loop thread)."""
        with self._lock:
            self._closed = True
            self._tail = None
        self.flush()

    def _enqueue_delta(self, kind: type[ReasoningDelta] | type[TextDelta], text: str) -> None:
        with self._lock:
            if self._closed:
                return
            tail = self._tail
            if tail is not None and tail.kind is kind:  # another thread opened the run since the caller looked
                tail.parts.append(text)
                return
            pending: list[Pending] | None = self._pending
            if not pending and not self._scheduled and self._quiet_on_loop():
                # An in-loop runtime's delta after a quiet spell (a paced stream's every delta): journaled right
                # here, as a flush of it alone would; what another thread reports meanwhile queues behind it.
                self._scheduled = True
                pending = None
            else:
                assert pending is not None
                self._tail = run = DeltaRun(kind, text)
                pending.append(run)
                if self._scheduled:
                    return
                self._scheduled = True
        if pending is not None:
            self._wake()
            return
        try:
            self._journal.extend([kind(text)])
        finally:
            with self._lock:
                queued = bool(self._pending)
                self._scheduled = queued
            if queued:
                self._wake()

    def _quiet_on_loop(self) -> bool:
        """On the loop thread with nothing pending: the caller journals now — after a quiet spell (the burst window
        starts), or while fewer than IN_PLACE_DELTAS more have been journaled at once in this window."""
        if threading.get_ident() != self._loop_thread:
            return False
        now = self._loop.time()
        if now < self._last_flush + COALESCE_S:
            if self._in_place >= self._in_place_deltas:
                return False
            self._in_place += 1
            return True
        self._last_flush = now
        self._in_place = 0
        return True

    def _enqueue(self, item: Pending) -> None:
        with self._lock:
            if self._closed:
                return
            self._pending.append(item)
            self._tail = None
            if self._scheduled:
                return
            self._scheduled = True
        self._wake()

    def _wake(self) -> None:
        if threading.get_ident() == self._loop_thread:
            # A runtime on the loop (the scripted one): no loop iteration between its callback and the journal —
            # under load every iteration is a queue the delta would wait in once more (issue 25).
            self._schedule_flush()
            return
        handoff = None
        if self._loop.time() >= self._last_flush + COALESCE_S:  # a quiet spell: the loop journals the burst at once
            with self._lock:
                handoff = self._handoff = self._handoff or threading.Event()
        try:
            self._loop.call_soon_threadsafe(self._schedule_flush)
        except RuntimeError:  # loop closed during shutdown: nothing left to deliver to
            return
        if handoff is not None:
            handoff.wait(self._handoff_s)

    # -- loop side --------------------------------------------------------------------------------
    def _schedule_flush(self) -> None:
        # Deltas that arrive in a burst (less than COALESCE_S after the last flush) are gathered for the
        # rest of that window and journaled as one event: fewer records, wake-ups and socket writes
        # under load; a delta after a quiet spell is journaled at once.
        wait = self._last_flush + COALESCE_S - self._loop.time()
        if wait > 0:
            self._loop.call_later(wait, self.flush)
        else:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            items, self._pending = self._pending, []
            self._tail = None
            self._scheduled = False
            handoff, self._handoff = self._handoff, None
        try:
            if items:
                self._journal_items(items)
        finally:
            if handoff is not None:  # the thread that opened the burst goes on
                handoff.set()

    def _journal_items(self, items: list[Pending]) -> None:
        self._last_flush = self._loop.time()
        events: list[TurnEvent] = []
        for item in items:
            event = self._convert(item)
            if event is None:
                continue
            # Coalesce adjacent deltas of one kind: fewer records, same text.
            last = events[-1] if events else None
            if isinstance(event, ReasoningDelta) and isinstance(last, ReasoningDelta):
                events[-1] = ReasoningDelta(last.text + event.text)
            elif isinstance(event, TextDelta) and isinstance(last, TextDelta):
                events[-1] = TextDelta(last.text + event.text)
            else:
                events.append(event)
        self._journal.extend(events)

    def _convert(self, item: Pending) -> TurnEvent | None:
        if isinstance(item, DeltaRun):
            return item.event()
        if isinstance(item, ToolStart):
            return self._tool_started(item)
        if isinstance(item, ToolEnd):
            return self._tool_completed(item)
        return item

    def _tool_started(self, item: ToolStart) -> ToolStarted | None:
        if isinstance(item.raw_name, str) and item.raw_name.startswith("_"):
            return None  # the agent's internal tools are not shown
        name = display_tool_name(item.raw_name)
        raw_id = item.raw_id
        call_id = raw_id if isinstance(raw_id, str) and VISIBLE_ASCII.match(raw_id) else None
        if call_id is None or call_id in self._used_ids:
            call_id = new_call_id()
        self._used_ids.add(call_id)
        event = ToolStarted(
            call_id=call_id,
            name=name,
            arguments=as_json_string(item.arguments if item.arguments is not None else {}),
            label=tool_label(name, item.arguments, self._secrets),
            emoji=tool_emoji(name),
            started_at=item.at,
        )
        self._open[call_id] = event
        self._open_by_raw.setdefault(raw_id, deque()).append(call_id)
        self._open_by_name.setdefault(name, deque()).append(call_id)
        return event

    def _tool_completed(self, item: ToolEnd) -> ToolCompleted | None:
        if isinstance(item.raw_name, str) and item.raw_name.startswith("_"):
            return None
        queue = self._open_by_raw.get(item.raw_id) if item.raw_id is not None else None
        if not queue:  # no usable id: the oldest running tool of that name
            queue = self._open_by_name.get(display_tool_name(item.raw_name))
        if not queue:
            return None  # orphan completion: never reported
        call_id = queue.popleft()
        started = self._open.pop(call_id)
        self._forget(started)
        if self.meter is not None:
            self.meter.tool_completed(started.name, item.at - started.started_at, item.is_error)
        return ToolCompleted(
            call_id=call_id,
            name=started.name,
            result=as_json_string(item.result if item.result is not None else ""),
            is_error=item.is_error,
            duration_ms=max(0, int((item.at - started.started_at) * 1000)),
        )

    def _forget(self, started: ToolStarted) -> None:
        for index in (self._open_by_raw, self._open_by_name):
            for key, queue in list(index.items()):
                if started.call_id in queue:
                    queue.remove(started.call_id)
                if not queue:
                    del index[key]

    def stop_open_tools(self) -> list[TurnEvent]:
        """`completed` records for tools the end of the turn stopped, in start order."""
        now = time.monotonic()
        stopped: list[TurnEvent] = [
            ToolCompleted(
                s.call_id, s.name, "[interrupted]", True, max(0, int((now - s.started_at) * 1000)), stopped=True
            )
            for s in self._open.values()
        ]
        self._open.clear()
        self._open_by_raw.clear()
        self._open_by_name.clear()
        return stopped
