"""A turn: one admitted agent execution — its run id, its journal, its interrupt switch and the gate that holds its
agent work until the surface that admitted it has written its response head. The registry (registry.py) admits,
runs and settles turns; `HeldTurn` (held.py) hands one to its surface."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from ..core.content import Message
from ..core.events import (
    ApprovalTally,
    ClientRequest,
    TurnFinished,
    TurnStatus,
    required_action,
    resume_position,
)
from ..core.transcript import turn_messages
from ..runtimes.base import AgentTurn, TurnRequest
from .callback_sink import CallbackSink
from .journal import Journal
from .suspension import TurnSuspensions

_RELEASED_INPUT = Message("user", ())  # a settled turn's input, once released (its journal keeps what it said)

HistoryLoader = Callable[[], Awaitable[Sequence[Message]]]
Persister = Callable[["Turn", TurnFinished], Awaitable[None]]


class Turn:
    """One admitted agent execution: its run id, journal, and interrupt switch."""

    def __init__(
        self,
        agent_turn: AgentTurn,
        sink: CallbackSink,
        suspensions: TurnSuspensions,
        journal: Journal,
        *,
        queue_key: str | None,
        queued: bool,
        inputs: Sequence[Message],
        history: HistoryLoader | None,
        persist: Persister | None,
    ) -> None:
        self.run_id = agent_turn.request.turn_id
        self.agent_turn = agent_turn
        self.sink = sink
        self.suspensions = suspensions  # where the client's answers reach the turn while it is suspended (§15.1)
        self.journal = journal
        self.queue_key = queue_key
        self.queued_at_admission = queued  # an earlier turn on the session was unsettled at admission
        self.inputs = tuple(inputs)  # what this turn adds to its session before the agent speaks
        self.history = history
        self.persist = persist
        self.detached = False  # its client went away and it keeps running
        self.stored = False  # its settlement (transcript, surface state) got into the store
        self.created_at = time.time()
        self.finished_at: float | None = None  # the terminal record's journal time, fixed before it is persisted
        # its terminal record while its settlement is being stored: other gateways may read it from the store already
        self.settling: TurnFinished | None = None
        self.started = False
        self.settles_keys = False  # its settlement settles the idempotency keys that name it (submission/submit.py)
        self.writes_journal = False  # its settlement writes its whole journal to the store
        # what the client's next request is recognised by while the turn waits for it (a chat conversation's key)
        self.answer_key: str | None = None
        # what the surface that delivers it keeps with it across deliveries (a Responses turn's Responses, §15.3)
        self.dialect_state: object | None = None
        self.task: asyncio.Task[None] | None = None
        self._approvals = ApprovalTally()  # what `awaiting_approval` has counted of the journal so far
        self._said: tuple[int, tuple[Message, ...]] | None = None  # `said()` and the journal length it was read at
        loop = asyncio.get_running_loop()
        # A held turn waits for its gate (the response head is out) or an interrupt before any agent work.
        self.gate: asyncio.Future[None] = loop.create_future()
        agent_turn.on_interrupt(lambda: self._wake(loop, self._open_gate))

    @staticmethod
    def _wake(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        """Run `callback` on the loop (interrupts arrive from any thread)."""
        loop.call_soon_threadsafe(callback)

    def _open_gate(self) -> None:
        if not self.gate.done():
            self.gate.set_result(None)

    @property
    def request(self) -> TurnRequest:
        return self.agent_turn.request

    @property
    def status(self) -> TurnStatus:
        """Its terminal status once decided (even while that is being stored), else running or queued."""
        finished = self.journal.finished or self.settling
        if finished is not None:
            return finished.status
        return TurnStatus.RUNNING if self.started else TurnStatus.QUEUED

    @property
    def awaiting_approval(self) -> bool:
        """Unsettled, with an approval request still waiting for its decision (WIRE.md §14.2)."""
        return self.journal.finished is None and self._approvals.update(self.journal.events) > 0

    def said(self) -> tuple[Message, ...]:
        """What the turn said after its inputs — assistant tool calls, tool results, its answer with its reasoning —
        read from the journal once per length: its session's transcript and a chat conversation's continuity key both
        need it when it settles."""
        events = self.journal.events
        if self._said is None or self._said[0] != len(events):
            self._said = (len(events), tuple(turn_messages((), events.coalesced())))
        return self._said[1]

    @property
    def required_action(self) -> ClientRequest | None:
        """Unsettled and suspended: the request it waits for its client to answer (WIRE.md §15.1)."""
        return required_action(self.journal.events) if self.journal.finished is None else None

    @property
    def may_wait(self) -> bool:
        """Unsettled, with a request waiting in its suspensions: a cheap test before `required_action` reads the
        journal (a held approval, §14.2, is no suspension: its runtime holds it)."""
        return self.journal.finished is None and self.suspensions.pending > 0

    def resume_position(self) -> int:
        """The journal position a delivery resuming this turn begins at (core/events.py `resume_position`)."""
        return resume_position(self.journal.events)

    @property
    def stopping(self) -> bool:
        """Interrupted and its end not yet decided."""
        return self.agent_turn.interrupted and self.journal.finished is None and self.settling is None

    def cancel(self) -> None:
        """Interrupt the turn (thread-safe, idempotent); it settles `cancelled` or as the agent ends."""
        self.agent_turn.interrupt()

    def release_request(self, *, keep_persist: bool) -> None:
        """Drop what only running and storing it needed (history, inputs, what it said — its whole answer a second
        time; the persister, whose closure holds the request, once its settlement is stored): runs read ids, session,
        model and the journal (issue 20, defect 2). A client stalled on the turn's stream keeps the turn."""
        request = self.agent_turn.request
        self.agent_turn.request = replace(request, input=_RELEASED_INPUT, history=(), metadata={})
        self.inputs = ()
        self.history = None
        self._said = None
        if not keep_persist:
            self.persist = None

    async def wait(self) -> TurnFinished:
        async for _ in self.journal.follow(len(self.journal.events)):
            pass
        assert self.journal.finished is not None
        return self.journal.finished
