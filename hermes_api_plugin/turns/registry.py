"""The turn registry: admits turns (cap, drain), queues the turns of one session, runs them, settles each
exactly once.

A turn is admitted *held*: its agent work waits until the surface that admitted it has written its
response head (`HeldTurn`, an async context manager that starts the turn or cancels it — never leaves it
held). Settling a turn is one path whatever ended it: closing events (stopped tools, the unstreamed rest
of the final answer), then persistence (the session transcript, then the surface's own state), then the
terminal record — so a reader that waits for the terminal record finds everything stored. Then the turn lets go of
the request (issue 20, defect 2) and its record stays readable a while (recent.py, settled.py).

The concurrency cap (`max_concurrent`, `api_server.max_concurrent_runs`) counts the turns that work or wait to work.
A turn waiting for its client (suspended, WIRE.md §15.1) does no agent work and holds no slot: clients abandon a
`function_call` as OpenAI lets them, and such turns must not lock new work out until they time out. Those turns have
their own bound, `max_waiting` (`api_server.turns.max_suspended`): past it the turn waiting longest is resolved
negatively, as if its time were up. An answer resumes its turn even at the cap — that turn was admitted once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core.content import Message
from ..core.errors import draining, rate_limited
from ..core.events import (
    StatusChanged,
    TextDelta,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    TurnTranscript,
    negative_answer,
    unanswered_requests,
)
from ..core.redact import redact
from ..runtimes.base import AgentRuntime, AgentTurn, TurnHooks, TurnRequest, TurnResult, drive_turn
from ..store.retry import until_stored
from ..telemetry.log_context import bind_turn
from ..telemetry.trace_api import Tracing
from .callback_sink import CallbackSink
from .held import HeldTurn
from .journal import Journal
from .locks import KeyedLocks
from .meter import TurnMeter
from .recent import RecentTurns
from .settled import SettledTurn
from .suspension import DEFAULT_SUSPEND_S, TurnSuspensions
from .tracing import trace_turn
from .turn import HistoryLoader, Persister, Turn

log = logging.getLogger("hermes_api_plugin")

DRAIN_GRACE_S = 10.0
DEFAULT_MAX_WAITING = 100  # api_server.turns.max_suspended
_CANCELLED = TurnResult(TurnStatus.CANCELLED, error_code="cancelled")


@dataclass(frozen=True)
class TurnCounts:
    """The registry's unsettled turns: `running`, and `queued` (held until their head is written, or waiting for
    their session), both holding a slot of the concurrency cap; `waiting`, those of the running that wait for their
    client and hold no slot."""

    running: int
    queued: int
    waiting: int = 0

    @property
    def admitted(self) -> int:
        return self.running + self.queued


class TurnRegistry:
    """Admits turns (cap, drain), queues turns per session, runs them and settles them exactly once.

    `transcripts` persists a settled turn's transcript into its session (the session store is the
    registry's dependency, not something it reaches for). `suspend_s` bounds how long a suspended turn waits for
    its client's answer (`api_server.turns.suspend_seconds`, WIRE.md §15.1), `max_waiting` how many wait at once.
    """

    def __init__(
        self,
        runtime: AgentRuntime,
        transcripts: Persister,
        hooks: TurnHooks,
        *,
        max_concurrent: int,
        secret_values: tuple[str, ...] = (),
        recent: RecentTurns[SettledTurn] | None = None,
        suspend_s: float = DEFAULT_SUSPEND_S,
        max_waiting: int = DEFAULT_MAX_WAITING,
        tracing: Tracing | None = None,
    ) -> None:
        self.runtime = runtime
        self.tracing = tracing  # None: tracing is off
        self.transcripts = transcripts
        self.hooks = hooks
        self.max_concurrent = max_concurrent
        self.draining = False
        self._secrets = secret_values
        self.suspend_s = suspend_s
        self.max_waiting = max_waiting
        self._active: dict[str, Turn] = {}
        self._waiting: dict[str, Turn] = {}  # unsettled turns waiting for their client, longest waiting first
        self.recent: RecentTurns[SettledTurn] = recent or RecentTurns()  # settled turns, still readable
        self._queues: KeyedLocks[str] = KeyedLocks()  # one lock per session; users = unsettled turns

    @property
    def active(self) -> int:
        return len(self._active)

    def counts(self) -> TurnCounts:
        running = sum(1 for turn in self._active.values() if turn.started)
        return TurnCounts(running, len(self._active) - running, len(self._waiting))

    def unsettled(self) -> list[Turn]:
        """Every unsettled turn (running or queued), oldest first."""
        return list(self._active.values())

    def get(self, run_id: str) -> Turn | None:
        """The unsettled (running or queued) turn with this run id."""
        return self._active.get(run_id)

    def find(self, run_id: str) -> Turn | SettledTurn | None:
        """An unsettled turn, or the record of a settled one still kept (recent.py, settled.py; runs read them)."""
        turn = self._active.get(run_id)
        if turn is not None:
            return turn
        return self.recent.get(run_id)

    def waiting(self, scope: str) -> list[Turn]:
        """The unsettled turns of a credential scope that wait for their client (WIRE.md §15.1), oldest first."""
        # From the turns that wait, not every unsettled one: every submission asks (issue 25: a scan of all of them
        # per admission was quadratic in a burst of new turns). Oldest admitted first, as before.
        found = [
            turn
            for turn in self._waiting.values()
            if turn.may_wait and turn.request.scope == scope and turn.required_action is not None
        ]
        return sorted(found, key=lambda turn: turn.created_at) if len(found) > 1 else found

    def stop(self, run_id: str) -> Turn | None:
        """Interrupt an unsettled turn (WIRE.md §6.4, §4.8); returns it, or None when none runs."""
        turn = self._active.get(run_id)
        if turn is not None:
            turn.cancel()
        return turn

    def active_on(self, session_id: str) -> bool:
        """Whether an unsettled turn (running or queued) belongs to this session."""
        return any(t.request.session_id == session_id for t in self._active.values())

    def check_draining(self) -> None:
        if self.draining:
            raise draining()

    def admit(
        self,
        request: TurnRequest,
        *,
        queue_key: str | None = None,
        history: HistoryLoader | None = None,
        inputs: Sequence[Message] | None = None,
        persist: Persister | None = None,
        meter: TurnMeter | None = None,
    ) -> HeldTurn:
        """Reserve a slot for a held turn; raises 503 while draining and 429 at the cap.

        `queue_key` serialises turns of one session; `history` loads the agent's history once the turn
        may run; `persist` stores surface state after the transcript is saved, before the terminal record;
        `meter` records the turn in the gateway's metrics (turns/meter.py).
        """
        self.check_draining()
        if self.max_concurrent and len(self._active) - len(self._waiting) >= self.max_concurrent:
            raise rate_limited(self.max_concurrent)
        loop = asyncio.get_running_loop()
        journal = Journal()
        sink = CallbackSink(loop, journal, self._secrets, meter)
        queued = False
        if queue_key is not None:
            queued = self._queues.users(queue_key) > 0
            self._queues.enter(queue_key)
        suspensions = TurnSuspensions(loop, sink, self.suspend_s, hold_approvals=request.hold_approvals)
        agent_turn = AgentTurn(request, sink, suspensions)  # it reports to its sink whatever plugins do in the hooks
        agent_turn.on_interrupt(suspensions.interrupted)
        turn = Turn(
            agent_turn,
            sink,
            suspensions,
            journal,
            queue_key=queue_key,
            queued=queued,
            inputs=inputs if inputs is not None else (request.input,),
            history=history,
            persist=persist,
        )
        suspensions.on_waiting = lambda waiting: self._on_waiting(turn, waiting)
        self._active[turn.run_id] = turn
        turn.task = loop.create_task(self._drive(turn), name=f"turn {turn.run_id}")
        return HeldTurn(turn)

    def _on_waiting(self, turn: Turn, waiting: bool) -> None:
        """A turn began or ended waiting for its client: it gives back or takes again its slot; past `max_waiting`
        the turn waiting longest gets its negative answers now (WIRE.md §15.1), as when its time is up."""
        if not waiting:
            self._waiting.pop(turn.run_id, None)
            return
        self._waiting[turn.run_id] = turn
        while len(self._waiting) > self.max_waiting:
            oldest = next(iter(self._waiting.values()))
            log.warning(
                "[API Server] %d turns wait for their clients: turn %s stops waiting",
                self.max_waiting + 1,
                oldest.run_id,
            )
            self._waiting.pop(oldest.run_id)
            oldest.suspensions.decline()

    async def _drive(self, turn: Turn) -> None:
        bind_turn(turn.run_id, turn.request.session_id)  # every line this task (and its agent) logs names the turn
        try:
            await turn.gate
            if turn.queue_key is None:
                await self._execute(turn)
            else:
                await self._execute_queued(turn, turn.queue_key)
        except asyncio.CancelledError:
            await self._settle(turn, _CANCELLED, persist=False)
            raise
        finally:
            turn.agent_turn.release()
            turn.suspensions.on_waiting = None  # nothing waits any more; it names the turn (a cycle: issue 25)
            self._active.pop(turn.run_id, None)
            self._waiting.pop(turn.run_id, None)
            turn.release_request(keep_persist=not turn.stored)
            turn.task = None  # finished: the coroutine and context it keeps go (an unstored turn is kept)
            settled = SettledTurn.of(turn)
            self.recent.keep(turn.run_id, settled, settled.weight())
            if turn.queue_key is not None:
                self._queues.leave(turn.queue_key)

    async def _execute_queued(self, turn: Turn, key: str) -> None:
        lock = self._queues.lock(key)  # the turn registered as a user of its session at admission
        loop = asyncio.get_running_loop()
        interrupted: asyncio.Future[None] = loop.create_future()

        def on_interrupt() -> None:
            if not interrupted.done():
                interrupted.set_result(None)

        turn.agent_turn.on_interrupt(lambda: Turn._wake(loop, on_interrupt))
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
        await self._settle(turn, _CANCELLED)

    async def _execute(self, turn: Turn) -> None:
        if turn.agent_turn.interrupted:
            await self._settle(turn, _CANCELLED)
            return
        try:
            if turn.history is not None:
                turn.agent_turn.request = replace(turn.request, history=tuple(await turn.history()))
            turn.started = True
            turn.journal.extend([StatusChanged(TurnStatus.RUNNING)])
            if self.tracing is not None:
                trace_turn(self.tracing, turn)
            outcome = await drive_turn(self.runtime, turn.agent_turn, self.hooks)
        except asyncio.CancelledError:
            turn.agent_turn.interrupt()
            raise
        except Exception as exc:
            log.exception("[API Server] turn %s failed outside the agent", turn.run_id)
            outcome = TurnResult(TurnStatus.FAILED, error_code="agent_error", error_message=f"Gateway error: {exc}")
        await self._settle(turn, outcome)

    async def _settle(self, turn: Turn, outcome: TurnResult, *, persist: bool = True) -> None:
        """The one settle path: closing events, persistence, then the terminal record (exactly once).

        `persist=False` only for a driver task that is itself being cancelled (it must not await)."""
        if turn.journal.finished is not None:
            return
        turn.journal.extend(self._closing_events(turn, outcome))
        turn.finished_at = time.time()
        finished = self._terminal(outcome, turn.finished_at)  # what its persisters render, as journaled
        if persist:
            # Another gateway following the turn reads the terminal record as soon as it is stored, before the journal
            # here ends: reads here answer its status meanwhile, so the two never disagree (a stopped run).
            turn.settling = finished
            await self._persist(turn, finished)
        if (sink := turn.sink).meter is not None:  # before the terminal record: its readers find the turn counted
            sink.meter.settled(finished, sink.first_reasoning_at, sink.first_text_at, time.monotonic())
        turn.journal.extend([finished], at=turn.finished_at)

    def _closing_events(self, turn: Turn, outcome: TurnResult) -> list[TurnEvent]:
        turn.sink.close()
        # A request the turn ended without an answer was resolved negatively: an approval denied, its command never
        # ran (WIRE.md §14.2); a question without an answer (§15.1).
        events: list[TurnEvent] = [
            negative_answer(asked) for asked in unanswered_requests(turn.journal.events.coalesced())
        ]
        events += turn.sink.stop_open_tools()
        if outcome.final_text and outcome.status is not TurnStatus.CANCELLED:
            streamed = TurnTranscript().feed_all(turn.journal.events.coalesced()).answer
            final = outcome.final_text
            if not streamed:
                missing = final
            elif final.startswith(streamed):
                missing = final[len(streamed) :]
            else:
                missing = ""
            if missing:
                events.append(TextDelta(missing))
        return events

    def _terminal(self, outcome: TurnResult, at: float) -> TurnFinished:
        code = outcome.error_code
        if code is None and outcome.status is TurnStatus.CANCELLED:
            code = "cancelled"
        if code is None and outcome.status is TurnStatus.FAILED:
            code = "agent_error"
        message = outcome.error_message
        if outcome.status is TurnStatus.FAILED:
            message = redact(message or "The agent failed", self._secrets)
        return TurnFinished(outcome.status, outcome.usage, code, message, at=at)

    async def _persist(self, turn: Turn, finished: TurnFinished) -> None:
        """The turn's transcript into its session (a turn cancelled before it ran adds nothing), then the
        surface's own state; each retried while the store is unavailable (the terminal record waits for them)."""
        what = f"turn {turn.run_id}"
        persist = turn.persist
        try:
            if turn.started:
                await until_stored(lambda: self.transcripts(turn, finished), what + " (transcript)")
            if persist is not None:
                await until_stored(lambda: persist(turn, finished), what)
            turn.stored = True
        except Exception:
            log.exception("[API Server] could not store turn %s of session %s", turn.run_id, turn.request.session_id)

    async def drain(self, grace_s: float = DRAIN_GRACE_S) -> None:
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
