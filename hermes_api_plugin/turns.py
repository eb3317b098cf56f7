"""Turns: the journal of one agent execution, the callback bridge into it, and the registry that runs them.

Agent callbacks (any thread) only enqueue raw tuples; the event loop converts them into events, appends
them to the append-only journal and wakes subscribers. The terminal record is written exactly once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import threading
import time
from collections import OrderedDict, deque
from dataclasses import replace
from typing import Any, AsyncIterator, Awaitable, Callable, Sequence

from .content import Message
from .errors import draining, rate_limited
from .events import (
    Commentary,
    Compacted,
    ReasoningDelta,
    StatusChanged,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    TurnTranscript,
)
from .history import turn_messages
from .redact import redact
from .runtimes.base import (
    AgentRuntime,
    AgentTurn,
    TurnHooks,
    TurnOutcome,
    TurnRequest,
    drive_turn,
)
from .store.base import SessionStore

log = logging.getLogger("hermes_api_plugin")

LABEL_MAX = 500
NAME_MAX = 256
_VISIBLE_ASCII = re.compile(r"^[\x21-\x7e]{1,256}$")
_LABEL_KEYS = ("command", "cmd", "query", "url", "path", "file_path", "pattern", "code", "prompt", "goal")
_EMOJI = {
    "terminal": "💻", "process": "⚙️", "read_file": "📖", "write_file": "✍️", "patch": "🩹",
    "search_files": "🔎", "web_search": "🔍", "web_extract": "📄", "execute_code": "🐍",
    "delegate_task": "🔀", "memory": "🧠", "todo": "📋", "vision_analyze": "👁️",
    "image_generate": "🎨", "send_message": "💬", "clarify": "❓", "browser_exec": "🌐",
}
_DRAIN_GRACE_S = 10.0
COALESCE_S = 0.002  # burst window of the callback bridge (WIRE.md §2.2 allows up to 50 ms)
RECENT_S = 3600.0  # settled runs stay readable in memory this long (WIRE.md §6.2)

_REASONING, _TEXT, _TOOL_START, _TOOL_END, _COMMENTARY, _COMPACTION = range(6)


def new_call_id() -> str:
    return "call_" + secrets.token_hex(12)


def display_tool_name(name: Any) -> str:
    """Visible ASCII names pass; anything else is written as `\\uXXXX` escapes and cut to 256 chars."""
    text = name if isinstance(name, str) else str(name)
    if _VISIBLE_ASCII.match(text):
        return text
    out: list[str] = []
    for ch in text:
        if "\x21" <= ch <= "\x7e":
            out.append(ch)
        else:
            encoded = ch.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{int.from_bytes(encoded[i:i + 2], 'big'):04x}" for i in range(0, len(encoded), 2))
    return "".join(out)[:NAME_MAX] or "unknown"


def _as_json_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return json.dumps(str(value), ensure_ascii=False)


def _label(name: str, arguments: Any, secret_values: tuple[str, ...]) -> str:
    preview: str | None = None
    args = arguments
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            preview = args
    if preview is None and isinstance(args, dict):
        for key in _LABEL_KEYS:
            if isinstance(args.get(key), str) and args[key].strip():
                preview = args[key]
                break
        else:
            preview = _as_json_string(args) if args else None
    text = " ".join((preview or name).split())
    return redact(text, secret_values)[:LABEL_MAX]


class Journal:
    """Append-only event list with wake-ups for any number of followers.

    `stamps[i]` is the wall-clock time event `i` was journaled (runs and session streams show it).
    """

    __slots__ = ("events", "stamps", "finished", "listener", "_waiters")

    def __init__(self) -> None:
        self.events: list[TurnEvent] = []
        self.stamps: list[float] = []
        self.finished: TurnFinished | None = None
        self.listener: Callable[[Journal], None] | None = None  # e.g. the durable journal saver
        self._waiters: list[asyncio.Future[bool]] = []

    @classmethod
    def settled(cls, events: Sequence[TurnEvent], stamps: Sequence[float] | None = None) -> Journal:
        """A journal holding recorded events (a replay); settled when they end with the terminal record."""
        journal = cls()
        journal.events.extend(events)
        journal.stamps.extend(stamps if stamps is not None else [0.0] * len(events))
        if events and isinstance(events[-1], TurnFinished):
            journal.finished = events[-1]
        return journal

    def extend(self, events: list[TurnEvent]) -> None:
        if self.finished is not None or not events:
            return
        self.events.extend(events)
        now = time.time()
        self.stamps.extend(now for _ in events)
        last = events[-1]
        if isinstance(last, TurnFinished):
            self.finished = last
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(True)
        if self.listener is not None:
            self.listener(self)

    async def follow(self, start: int = 0, idle_timeout: float | None = None) -> AsyncIterator[list[TurnEvent] | None]:
        """Yield batches of events from `start` until the terminal record; `None` after each idle period.

        One idle timer per follower, re-armed only when it fires: a busy stream creates no timer per
        event (it would churn the loop's timer heap at thousands of events per second).
        """
        loop = asyncio.get_running_loop()
        position = start
        waiter: asyncio.Future[bool] | None = None
        idle_at = loop.time() + (idle_timeout or 0.0)
        timer: asyncio.TimerHandle | None = None

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
                self._waiters.append(waiter)
                woken = await waiter
                if not woken:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)
                    yield None
        finally:
            if timer is not None:
                timer.cancel()


class TurnBridge:
    """The TurnSink of one turn: thread-safe enqueue, loop-side normalisation into journal events."""

    def __init__(self, loop: asyncio.AbstractEventLoop, journal: Journal, secret_values: tuple[str, ...] = ()) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()  # bridges are built on the loop thread
        self._journal = journal
        self._secrets = secret_values
        self._lock = threading.Lock()
        self._pending: list[tuple[Any, ...]] = []
        self._scheduled = False
        self._closed = False
        self._last_flush = float("-inf")
        # Loop-side state: normalised tool ids and the tools still running.
        self._used_ids: set[str] = set()
        self._open: dict[str, ToolStarted] = {}
        self._open_by_raw: dict[Any, deque[str]] = {}
        self._open_by_name: dict[str, deque[str]] = {}

    # -- agent side (any thread) ------------------------------------------------------------------
    def on_reasoning(self, text: str) -> None:
        if text:
            self._enqueue((_REASONING, text))

    def on_text(self, text: str | None) -> None:
        if text:
            self._enqueue((_TEXT, text))

    def on_tool_start(self, call_id: str | None, name: str, arguments: Any) -> None:
        self._enqueue((_TOOL_START, call_id, name, arguments, time.monotonic()))

    def on_tool_complete(self, call_id: str | None, name: str, result: Any, is_error: bool) -> None:
        self._enqueue((_TOOL_END, call_id, name, result, bool(is_error), time.monotonic()))

    def on_commentary(self, text: str, already_streamed: bool) -> None:
        if text:
            self._enqueue((_COMMENTARY, text, bool(already_streamed)))

    def on_compaction(self, summary: str) -> None:
        self._enqueue((_COMPACTION, summary or ""))

    def close(self) -> None:
        """Stop accepting callbacks and convert what is pending (called on the loop thread)."""
        with self._lock:
            self._closed = True
        self.flush()

    def _enqueue(self, item: tuple[Any, ...]) -> None:
        with self._lock:
            if self._closed:
                return
            self._pending.append(item)
            if self._scheduled:
                return
            self._scheduled = True
        if threading.get_ident() == self._loop_thread:
            self._loop.call_soon(self._schedule_flush)  # same thread: no self-pipe wake-up syscall
            return
        try:
            self._loop.call_soon_threadsafe(self._schedule_flush)
        except RuntimeError:  # loop closed during shutdown: nothing left to deliver to
            pass

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
            self._scheduled = False
        if not items:
            return
        self._last_flush = self._loop.time()
        events: list[TurnEvent] = []
        for item in items:
            event = self._convert(item)
            if event is None:
                continue
            # Coalesce adjacent deltas of one kind: fewer records, same text.
            if events and type(event) is type(events[-1]) and isinstance(event, (ReasoningDelta, TextDelta)):
                events[-1] = type(event)(events[-1].text + event.text)  # type: ignore[union-attr]
            else:
                events.append(event)
        self._journal.extend(events)

    def _convert(self, item: tuple[Any, ...]) -> TurnEvent | None:
        kind = item[0]
        if kind == _REASONING:
            return ReasoningDelta(item[1])
        if kind == _TEXT:
            return TextDelta(item[1])
        if kind == _COMMENTARY:
            return Commentary(item[1], item[2])
        if kind == _COMPACTION:
            return Compacted(item[1])
        if kind == _TOOL_START:
            return self._tool_started(item[1], item[2], item[3], item[4])
        return self._tool_completed(item[1], item[2], item[3], item[4], item[5])

    def _tool_started(self, raw_id: Any, raw_name: Any, arguments: Any, at: float) -> ToolStarted | None:
        if isinstance(raw_name, str) and raw_name.startswith("_"):
            return None
        name = display_tool_name(raw_name)
        call_id = raw_id if isinstance(raw_id, str) and _VISIBLE_ASCII.match(raw_id) else None
        if call_id is None or call_id in self._used_ids:
            call_id = new_call_id()
        self._used_ids.add(call_id)
        event = ToolStarted(
            call_id=call_id,
            name=name,
            arguments=_as_json_string(arguments if arguments is not None else {}),
            label=_label(name, arguments, self._secrets),
            emoji=_EMOJI.get(name, "🔧"),
            started_at=at,
        )
        self._open[call_id] = event
        self._open_by_raw.setdefault(raw_id, deque()).append(call_id)
        self._open_by_name.setdefault(name, deque()).append(call_id)
        return event

    def _tool_completed(self, raw_id: Any, raw_name: Any, result: Any, is_error: bool, at: float) -> ToolCompleted | None:
        if isinstance(raw_name, str) and raw_name.startswith("_"):
            return None
        queue = self._open_by_raw.get(raw_id) if raw_id is not None else None
        if not queue:  # no usable id: the oldest running tool of that name
            queue = self._open_by_name.get(display_tool_name(raw_name))
        if not queue:
            return None  # orphan completion: never reported
        call_id = queue.popleft()
        started = self._open.pop(call_id)
        self._forget(started)
        return ToolCompleted(
            call_id=call_id,
            name=started.name,
            result=_as_json_string(result if result is not None else ""),
            is_error=is_error,
            duration_ms=max(0, int((at - started.started_at) * 1000)),
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
            ToolCompleted(s.call_id, s.name, "[interrupted]", True, max(0, int((now - s.started_at) * 1000)), stopped=True)
            for s in self._open.values()
        ]
        self._open.clear()
        self._open_by_raw.clear()
        self._open_by_name.clear()
        return stopped


HistoryLoader = Callable[[], Awaitable[Sequence[Message]]]
Persister = Callable[["Turn", TurnFinished], Awaitable[None]]


class Turn:
    """One admitted agent execution: its run id, journal, and interrupt switch."""

    def __init__(self, agent_turn: AgentTurn, bridge: TurnBridge, journal: Journal, *, queue_key: str | None,
                 queued: bool, inputs: Sequence[Message], history: HistoryLoader | None,
                 persist: Persister | None) -> None:
        self.run_id = agent_turn.request.turn_id
        self.agent_turn = agent_turn
        self.bridge = bridge
        self.journal = journal
        self.queue_key = queue_key
        self.queued_at_admission = queued  # an earlier turn on the session was unsettled at admission
        self.inputs = tuple(inputs)  # what this turn adds to its session before the agent speaks
        self.history = history
        self.persist = persist
        self.detached = False  # its client went away and it keeps running
        self.created_at = time.time()
        self.started = False
        self.task: asyncio.Task[None] | None = None
        loop = asyncio.get_running_loop()
        # Held turns wait for release() (the response head is out) or an interrupt before any agent work.
        self.gate: asyncio.Future[None] = loop.create_future()
        agent_turn.on_interrupt(lambda: loop.call_soon_threadsafe(self.release))

    def release(self) -> None:
        """Let the agent start (called once the response head is written)."""
        if not self.gate.done():
            self.gate.set_result(None)

    @property
    def request(self) -> TurnRequest:
        return self.agent_turn.request

    @property
    def status(self) -> TurnStatus:
        if self.journal.finished is not None:
            return self.journal.finished.status
        return TurnStatus.RUNNING if self.started else TurnStatus.QUEUED

    def cancel(self) -> None:
        self.agent_turn.interrupt()

    async def wait(self) -> TurnFinished:
        async for _ in self.journal.follow(len(self.journal.events)):
            pass
        assert self.journal.finished is not None
        return self.journal.finished


class TurnRegistry:
    """Admits turns (cap, drain), queues turns per session, runs them and settles them exactly once."""

    def __init__(self, runtime: AgentRuntime, sessions: SessionStore, hooks: TurnHooks, *, max_concurrent: int,
                 secret_values: tuple[str, ...] = ()) -> None:
        self.runtime = runtime
        self.sessions = sessions  # where each turn's transcript is appended
        self.hooks = hooks
        self.max_concurrent = max_concurrent
        self.draining = False
        self._secrets = secret_values
        self._active: dict[str, Turn] = {}
        self._recent: OrderedDict[str, tuple[Turn, float]] = OrderedDict()  # settled runs, oldest first
        self._queues: dict[str, tuple[asyncio.Lock, int]] = {}  # session → (lock, unsettled turns)

    @property
    def active(self) -> int:
        return len(self._active)

    def get(self, run_id: str) -> Turn | None:
        return self._active.get(run_id)

    def is_live(self, run_id: str) -> bool:
        return run_id in self._active

    def active_on(self, session_id: str) -> bool:
        """Whether an unsettled turn (running or queued) belongs to this session."""
        return any(t.request.session_id == session_id for t in self._active.values())

    def find(self, run_id: str) -> Turn | None:
        """A running turn, or one that settled within the last RECENT_S seconds (runs read them)."""
        turn = self._active.get(run_id)
        if turn is not None:
            return turn
        self._prune()
        entry = self._recent.get(run_id)
        return entry[0] if entry is not None else None

    def _prune(self) -> None:
        horizon = time.monotonic() - RECENT_S
        while self._recent:
            _, (_, settled_at) = next(iter(self._recent.items()))
            if settled_at >= horizon:
                break
            self._recent.popitem(last=False)

    def check_capacity(self) -> None:
        """Raise what admit() would raise for a new turn now (503 draining, 429 at the cap)."""
        if self.draining:
            raise draining()
        if self.max_concurrent and len(self._active) >= self.max_concurrent:
            raise rate_limited(self.max_concurrent)

    def admit(self, request: TurnRequest, *, queue_key: str | None = None, history: HistoryLoader | None = None,
              inputs: Sequence[Message] | None = None, persist: Persister | None = None,
              hold: bool = False) -> Turn:
        """Reserve a slot and start the turn; raises 503 while draining and 429 at the cap.

        `queue_key` serialises turns of one session; `history` loads the agent's history once the turn
        may run; `persist` stores surface state after the transcript is saved, before the terminal record.
        """
        self.check_capacity()
        loop = asyncio.get_running_loop()
        journal = Journal()
        bridge = TurnBridge(loop, journal, self._secrets)
        queued = False
        if queue_key is not None:
            lock, users = self._queues.get(queue_key) or (asyncio.Lock(), 0)
            queued = users > 0
            self._queues[queue_key] = (lock, users + 1)
        turn = Turn(AgentTurn(request, bridge), bridge, journal, queue_key=queue_key, queued=queued,
                    inputs=inputs if inputs is not None else (request.input,), history=history, persist=persist)
        self._active[turn.run_id] = turn
        if not hold:
            turn.release()
        turn.task = loop.create_task(self._drive(turn), name=f"turn {turn.run_id}")
        return turn

    async def _drive(self, turn: Turn) -> None:
        try:
            await turn.gate
            if turn.queue_key is None:
                await self._execute(turn)
            else:
                await self._execute_queued(turn, turn.queue_key)
        except asyncio.CancelledError:
            self._finish(turn, TurnOutcome(TurnStatus.CANCELLED, error_code="cancelled"))
            raise
        finally:
            self._active.pop(turn.run_id, None)
            self._recent[turn.run_id] = (turn, time.monotonic())
            self._prune()
            if turn.queue_key is not None:
                lock, users = self._queues[turn.queue_key]
                if users <= 1:
                    del self._queues[turn.queue_key]
                else:
                    self._queues[turn.queue_key] = (lock, users - 1)

    async def _execute_queued(self, turn: Turn, key: str) -> None:
        lock = self._queues[key][0]
        loop = asyncio.get_running_loop()
        interrupted: asyncio.Future[None] = loop.create_future()
        turn.agent_turn.on_interrupt(
            lambda: loop.call_soon_threadsafe(lambda: interrupted.done() or interrupted.set_result(None))
        )
        acquire = asyncio.ensure_future(lock.acquire())
        await asyncio.wait((acquire, interrupted), return_when=asyncio.FIRST_COMPLETED)
        if not acquire.done():
            acquire.cancel()
        elif not acquire.cancelled():
            try:
                await self._execute(turn)
            finally:
                lock.release()
            return
        await self._settle(turn, TurnOutcome(TurnStatus.CANCELLED, error_code="cancelled"))

    async def _execute(self, turn: Turn) -> None:
        if turn.agent_turn.interrupted:
            await self._settle(turn, TurnOutcome(TurnStatus.CANCELLED, error_code="cancelled"))
            return
        try:
            if turn.history is not None:
                turn.agent_turn.request = replace(turn.request, history=tuple(await turn.history()))
            turn.started = True
            turn.journal.extend([StatusChanged(TurnStatus.RUNNING)])
            outcome = await drive_turn(self.runtime, turn.agent_turn, self.hooks)
        except asyncio.CancelledError:
            turn.agent_turn.interrupt()
            self._finish(turn, TurnOutcome(TurnStatus.CANCELLED, error_code="cancelled"))
            raise
        except Exception as exc:  # noqa: BLE001 - store or hook failure: the turn fails, the server lives
            log.exception("[API Server] turn %s failed outside the agent", turn.run_id)
            outcome = TurnOutcome(TurnStatus.FAILED, error_code="agent_error", error_message=f"Gateway error: {exc}")
        await self._settle(turn, outcome)

    async def _settle(self, turn: Turn, outcome: TurnOutcome) -> None:
        """Closing events, then persistence, then the terminal record: readers of the store that wait
        for the terminal record (queued turns, replays) always find the turn's state saved."""
        turn.journal.extend(self._closing_events(turn, outcome))
        finished = self._terminal(outcome)
        await self._persist(turn, finished)
        turn.journal.extend([finished])

    def _closing_events(self, turn: Turn, outcome: TurnOutcome) -> list[TurnEvent]:
        turn.bridge.close()
        streamed = TurnTranscript().feed_all(turn.journal.events).answer
        events = turn.bridge.stop_open_tools()
        if outcome.final_text and outcome.status is not TurnStatus.CANCELLED:
            final = outcome.final_text
            if not streamed:
                missing = final
            elif final.startswith(streamed):
                missing = final[len(streamed):]
            else:
                missing = ""
            if missing:
                events.append(TextDelta(missing))
        return events

    def _terminal(self, outcome: TurnOutcome) -> TurnFinished:
        code = outcome.error_code
        if code is None and outcome.status is TurnStatus.CANCELLED:
            code = "cancelled"
        if code is None and outcome.status is TurnStatus.FAILED:
            code = "agent_error"
        message = outcome.error_message
        if outcome.status is TurnStatus.FAILED:
            message = redact(message or "The agent failed", self._secrets)
        return TurnFinished(outcome.status, outcome.usage, code, message)

    def _finish(self, turn: Turn, outcome: TurnOutcome) -> None:
        """Settle without persistence: only for a driver task that is itself being cancelled."""
        if turn.journal.finished is not None:
            return
        turn.bridge.close()
        pending = turn.bridge.stop_open_tools()
        turn.journal.extend([*pending, self._terminal(outcome)])

    async def _persist(self, turn: Turn, finished: TurnFinished) -> None:
        """Append the turn's transcript to its session, then the surface's own state."""
        try:
            if turn.started:  # a turn cancelled before it ran adds nothing to its session
                events = turn.journal.events
                messages = turn_messages(turn.inputs, events)
                compactions = [e.summary for e in events if isinstance(e, Compacted)]
                await self.sessions.append_session_messages(
                    turn.request.session_id, messages, model=turn.request.model,
                    usage=(finished.usage.prompt_tokens, finished.usage.completion_tokens),
                    compaction=compactions[-1] if compactions else None,
                )
            if turn.persist is not None:
                await turn.persist(turn, finished)
        except Exception:  # noqa: BLE001 - a store failure must not lose the answer being streamed
            log.exception("[API Server] could not store turn %s of session %s", turn.run_id, turn.request.session_id)

    async def drain(self, grace_s: float = _DRAIN_GRACE_S) -> None:
        """Refuse new work, interrupt every unsettled turn and wait until each has settled."""
        self.draining = True
        turns = list(self._active.values())
        for turn in turns:
            turn.cancel()
        tasks = [t.task for t in turns if t.task is not None]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
