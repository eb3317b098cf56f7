"""Suspended turns (WIRE.md §15.1): a turn waits for its client's answer — an approval, a question's answer, a client
tool's output — and resumes with it, or with the negative resolution when none comes.

`TurnSuspensions` is a turn's `Suspender` (runtimes/base.py), built by the registry with the turn. Its requests and
answers go to the journal through the turn's callback sink (ApprovalRequested(suspended=True) / ApprovalResponded,
QuestionAsked / QuestionAnswered, ToolCallRequested / ToolCallAnswered), so the journal stays the one source of truth:
a run `requires_action` while a request is unanswered there (core/events.py `required_action`), on this gateway or
any that reads the journal.

Answers find the turn through the registry (the run id): `resolve` decides pending approvals (it is the turn's
`ApprovalGate` when its runtime has no other), `answer` answers the oldest pending question, `tool_output` a client
tool call by its call id. A turn whose request holds approvals (§14.2, `hold_approvals`) journals them unsuspended:
its stream stays open and only a separate client decides them. No answer within
`api_server.turns.suspend_seconds`, an interrupt (stop, drain, a cancelling disconnect) or `decline` (the
conversation moved on) resolves every pending request negatively: an approval is denied, a question has no answer,
a tool call has no output.
Each request is resolved exactly once, whichever comes first; an answer for a request already resolved finds
nothing pending. A keyed answer (`Idempotency-Key`, WIRE.md §15.1) is remembered for the turn's life: its retry is
told it was applied — never applied to the next pending request — and the same key with another answer conflicts.
Everything here runs on the event loop, except `interrupted`, which any thread may call.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.events import (
    ApprovalRequested,
    ApprovalResponded,
    ClientRequest,
    QuestionAnswered,
    QuestionAsked,
    ToolCallAnswered,
    ToolCallRequested,
)
from .callback_sink import CallbackSink

DEFAULT_SUSPEND_S = 900.0  # api_server.turns.suspend_seconds


class Keyed(enum.Enum):
    """What became of a keyed answer."""

    APPLIED = "applied"  # new: applied now (or found nothing pending, see the caller's count)
    REPLAYED = "replayed"  # this key already answered this way: nothing applied again
    CONFLICT = "conflict"  # this key already answered another way


@dataclass(eq=False)
class _Waiting:
    """One request waiting for its answer: an approval (the answer is a choice), a question (the answer text) or a
    client tool call (its output)."""

    asked: ClientRequest
    answered: asyncio.Future[str | None] = field(repr=False)

    @property
    def approval(self) -> bool:
        return isinstance(self.asked, ApprovalRequested)


class TurnSuspensions:
    """The Suspender of one turn and the way its client's answers reach it."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sink: CallbackSink,
        suspend_s: float = DEFAULT_SUSPEND_S,
        *,
        hold_approvals: bool = False,
    ):
        self._loop = loop
        self._sink = sink
        self.suspend_s = suspend_s
        self.hold_approvals = hold_approvals  # §14.2: approvals keep the stream open instead of suspending the turn
        self._waiting: list[_Waiting] = []  # oldest first
        self._over = False  # interrupted: every request resolves negatively, at once
        self._keys: dict[str, tuple[str, int]] = {}  # Idempotency-Key → (the answer it gave, what it resolved)
        self._listeners: list[Callable[[], None]] = []  # told of each request once it is journaled
        # told when the turn starts and stops waiting for its client (the registry's count of waiting turns)
        self.on_waiting: Callable[[bool], None] | None = None

    def on_request(self, listener: Callable[[], None]) -> None:
        """Call `listener` (on the loop) each time a request to the client has been journaled: a surface that must
        act where its delivery ends (store the Response it ended) learns of it without watching every event."""
        self._listeners.append(listener)

    # -- the runtime (Suspender) ----------------------------------------------------------------------
    async def approval(self, command: str, description: str, choices: tuple[str, ...]) -> str:
        asked = ApprovalRequested(command, description, tuple(choices), suspended=not self.hold_approvals)
        choice = await self._suspend(asked)
        return choice if choice is not None else "deny"

    async def question(self, question: str, choices: tuple[str, ...] = ()) -> str | None:
        return await self._suspend(QuestionAsked(question, tuple(choices)))

    async def tool_call(self, call_id: str, name: str, arguments: str) -> str | None:
        return await self._suspend(ToolCallRequested(call_id, name, arguments))

    async def _suspend(self, asked: ClientRequest) -> str | None:
        waiting = _Waiting(asked, self._loop.create_future())
        self._sink.on_suspension(asked)
        self._waiting.append(waiting)
        if len(self._waiting) == 1 and self.on_waiting is not None:
            self.on_waiting(True)
        for listener in self._listeners:
            listener()
        if self._over:
            self._settle(waiting, None)
        try:
            await asyncio.wait((waiting.answered,), timeout=self.suspend_s)
        finally:
            # Timed out, or the waiting task itself was cancelled (the runtime's playback stopped): no answer.
            self._settle(waiting, None)
        return waiting.answered.result()

    # -- the client's answers ---------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """How many requests wait for their answer."""
        return len(self._waiting)

    def resolve(self, choice: str, resolve_all: bool) -> int:
        """Decide the oldest pending approval (every one with `resolve_all`); how many were decided (ApprovalGate)."""
        decided = 0
        for waiting in [w for w in self._waiting if w.approval]:
            self._settle(waiting, choice)
            decided += 1
            if not resolve_all:
                break
        return decided

    def answer(self, text: str) -> bool:
        """Answer the oldest pending question; False when none is pending."""
        for waiting in self._waiting:
            if isinstance(waiting.asked, QuestionAsked):
                self._settle(waiting, text)
                return True
        return False

    def tool_output(self, call_id: str, output: str) -> bool:
        """Return the output of the pending client tool call `call_id`; False when no such call is pending."""
        for waiting in self._waiting:
            if isinstance(waiting.asked, ToolCallRequested) and waiting.asked.call_id == call_id:
                self._settle(waiting, output)
                return True
        return False

    def pending_calls(self) -> tuple[str, ...]:
        """The call ids of the client tool calls waiting for their output, oldest first."""
        return tuple(w.asked.call_id for w in self._waiting if isinstance(w.asked, ToolCallRequested))

    def keyed(self, key: str | None, answer: str, apply: Callable[[], int]) -> tuple[Keyed, int]:
        """Apply an answer at most once per key: `apply()` (resolve or answer) runs for a new key only and its count
        is remembered when it applied something; a retry gets the first count back."""
        if key is not None and key in self._keys:
            given, count = self._keys[key]
            return (Keyed.REPLAYED, count) if given == answer else (Keyed.CONFLICT, 0)
        count = apply()
        if key is not None and count > 0:
            self._keys[key] = (answer, count)
        return Keyed.APPLIED, count

    def decline(self) -> int:
        """Resolve every pending request negatively (the conversation moved on); how many there were."""
        waiting = list(self._waiting)
        for each in waiting:
            self._settle(each, None)
        return len(waiting)

    def interrupted(self) -> None:
        """The turn was interrupted (stop, drain): pending requests and later ones resolve negatively. Thread-safe."""
        try:
            self._loop.call_soon_threadsafe(self._interrupt)
        except RuntimeError:  # loop closed during shutdown: nothing waits any more
            pass

    def _interrupt(self) -> None:
        self._over = True
        self.decline()

    def _settle(self, waiting: _Waiting, answer: str | None) -> None:
        """Resolve one request, once: its answer is journaled before the waiting runtime goes on."""
        if waiting.answered.done():
            return
        self._waiting.remove(waiting)
        if not self._waiting and self.on_waiting is not None:
            self.on_waiting(False)
        asked = waiting.asked
        if isinstance(asked, ApprovalRequested):
            self._sink.on_suspension(ApprovalResponded(answer if answer is not None else "deny"))
        elif isinstance(asked, ToolCallRequested):
            self._sink.on_suspension(ToolCallAnswered(asked.call_id, answer))
        else:
            self._sink.on_suspension(QuestionAnswered(answer))
        waiting.answered.set_result(answer)
