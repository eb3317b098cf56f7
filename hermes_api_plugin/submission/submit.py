"""The one submission path of every work-creating POST (chat, Responses, runs, session chat; JSON and stream).

    parse (protocol/) → submit (here) → deliver (delivery.py)

`Submitter.submit` takes the request's surface (a `Planner`: its idempotency slot, and `plan()` — the coroutine that
resolves everything a new turn needs as a `TurnPlan`) and returns a typed outcome:

    NewTurn    admitted, reserved, stored; its agent work is held until the delivery writes the head
    Resumed    the request answers a suspended turn (WIRE.md §15.1): the answer is applied and the delivery continues
               that turn's journal after the request it answered (a keyed one reserves its key for that turn first)
    Existing   the key's turn: `attach` to the live one — here, or on another gateway (its journal followed
               through the shared store, cluster/remote_turns.py) — or `replay` of the recorded journal
    Refusal    nothing executes: admission_conflict | unknown_execution | admission_expired | storage_unavailable |
               running_elsewhere (another live process runs it and the store cannot follow it: SQLite)

Order (WIRE.md §5.3): drain check → key lookup → (new only) the suspended turn the request answers, if any → plan →
cap → admission → optional early head (keyed chat streams) → reservation → session-key binding → the surface's
`admitted` step. A failure after admission cancels the held turn, so it settles and frees its slot. The key's lock
covers lookup to reservation only, never delivery: a retry arriving while the turn runs attaches at once.

On a shared store (PostgreSQL) every turn is durable whether keyed or not: its journal is group-committed and a run
record (`RunRecord`) names its owner, so any gateway can read, follow and stop it (routes/runs.py). A keyed retry
whose turn's owner is gone settles that owner's leftovers (cluster/recovery.py) before it answers unknown_execution.

A request that answers a suspended turn (WIRE.md §15.1) finds it among this gateway's waiting turns (the surface's
`resumes`) or — on a shared store, when none here takes it — by the wait keys the turn's paused delivery published
(cluster/waits.py, W-15.4): the surface decides the answer from the turn's journal alike (`answer_from`), the answer is
forwarded to the owner (cluster/remote_turns.py), and the delivery follows the owner's journal from where the answer
resumes it. Either way the answer is a `ClientAnswer` applied by turns/answers.py, and a keyed one reserves its key
for the turn it answers before it is applied.

Long because every outcome of a work-creating request — a new turn, a resumed one (here or on another gateway), an
attach or replay, a refusal — is decided under one key lock in one admission order, which is this module's one job.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar

from ..cluster.placement import Placement
from ..cluster.remote_turns import AnswerUnconfirmed, RemoteTurns
from ..cluster.waits import Waiting, Waits
from ..config.settings import Settings
from ..core.client_tools import CHOOSE_AUTO, ClientTool, ToolChoice
from ..core.content import Message
from ..core.errors import ApiError
from ..core.events import TurnEvent, TurnFinished, resume_position
from ..core.json_text import canonical
from ..core.offload import off_loop
from ..protocol.common import ModelSelection, new_run_id
from ..runtimes.base import TurnRequest
from ..store.base import IdempotencyRecord, RunRecord, StoreError
from ..store.roles import Store
from ..turns import HeldTurn, HistoryLoader, Journal, Persister, Turn, TurnRegistry
from ..turns.answers import ClientAnswer, apply_answer, declined
from ..turns.durable import JournalSaver, stored_journal
from ..turns.meter import TurnMeters
from .idempotency import Decision, Idempotency, Slot, error_for, store_failure

H = TypeVar("H")


class StoredReply(Protocol):
    """What a keyed retry needs to re-render its turn, as the admission record stores it (a surface's reply type)."""

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class TurnPlan:
    """What a surface resolved for its new turn before it is admitted: the request as the client made it and how the
    turn joins its session. The submitter builds the runtime's `TurnRequest` from it once (`_request`), adding the
    gateway's part: the run id, scope, profile home and settings."""

    session_id: str
    input: Message
    selection: ModelSelection  # the model as the request selected it
    system_prompt: str | None = None
    metadata: Mapping[str, Any] | None = None
    session_key: str | None = None  # X-Hermes-Session-Key: the agent's session key, memory and approval scope
    turn_id: str | None = None  # None: a new run id
    # the function tools the client lends the agent, and its tool_choice (WIRE.md §15)
    client_tools: tuple[ClientTool, ...] = ()
    tool_choice: ToolChoice = CHOOSE_AUTO
    hold_approvals: bool = False  # its approvals wait on the stream (WIRE.md §14.2)
    # The agent's history: messages known now, or a loader called once the turn may run (a queued turn then
    # sees what the turn before it added).
    history: HistoryLoader | Sequence[Message] = ()
    inputs: Sequence[Message] | None = None  # what the turn adds to its session (default: the input)
    queued: bool = True  # turns of the session run one at a time (chat on a derived session: False)
    persist: Persister | None = None  # the surface's own state, stored before the terminal record
    durable: bool = False  # journal kept in the store even without a key (stored Responses)
    bind_key: str | None = None  # X-Hermes-Session-Key to bind to the session once admitted


class Planner(Protocol):
    """What the submission path asks of a surface (surfaces/surface.py's `Surface` is one): its idempotency slot,
    the plan of a new turn, and what is stored once that turn is admitted."""

    @property
    def name(self) -> str:
        """chat | responses | runs | session_chat: the surface of its idempotency slots and run records."""
        ...

    @property
    def key(self) -> str | None:
        """The request's Idempotency-Key."""
        ...

    @property
    def large(self) -> bool:
        """The request's body is large: its identity hash is computed off the loop (offload.py)."""
        ...

    def identity(self) -> str:
        """The request's §5.2 identity hash (asked for keyed requests only)."""
        ...

    def target(self) -> Any:
        """What the key's turn acts on (sessions, the session key): a retry naming another target conflicts."""
        ...

    async def plan(self) -> TurnPlan:
        """Resolve everything a new turn needs (404s, 409s of resolution propagate)."""
        ...

    def reply(self, turn: Turn | None) -> StoredReply:
        """What a keyed retry needs to re-render the admitted `turn` (None: a turn another gateway runs, which this
        request resumed)."""
        ...

    async def admitted(self, turn: Turn) -> None:
        """The surface's step once its turn is admitted and reserved (e.g. store the in-progress Response)."""
        ...

    async def resumes(self, waiting: Sequence[Turn]) -> Resume | None:
        """The suspended turn among `waiting` (this scope's) that this request answers, and how (WIRE.md §15.1); None:
        the request is a new turn — after resolving negatively what it leaves unanswered (the conversation moved on)."""
        ...

    def resuming(self, turn: Turn, start: int) -> None:
        """Deliver `turn` from journal position `start`, the request answered (called before `reply`)."""
        ...

    async def wait_keys(self) -> Sequence[str]:
        """What a suspended turn this request may answer waits by in a shared store (cluster/waits.py), in the order
        `resumes` prefers them; asked only when no local turn took the request."""
        ...

    def answer_from(self, events: list[TurnEvent], waiting: Waiting) -> ClientAnswer | None:
        """The answer this request gives the turn of `events` (another gateway's), found by `waiting.key`, decided
        as `resumes` decides it for a local turn; None: it answers nothing of that turn (a new turn, nothing
        resolved)."""
        ...

    async def resuming_remote(self, waiting: Waiting, journal: Journal, start: int) -> Mapping[str, Any] | None:
        """Deliver the turn `waiting.run` (another gateway runs it: `journal` follows it) from journal position `start`,
        the request answered (called before `reply`); what the owner's side of the surface takes over with the answer
        (`ClientAnswer.handoff`: a Responses turn's new Response), if anything."""
        ...


@dataclass(frozen=True)
class Resume:
    """A request's answer to a suspended turn of this gateway, as the surface decided it from the turn's
    `required_action` (a DECLINE: the conversation moved on and the request is a new turn); `persist`, the answering
    surface's own state, is stored when the turn settles (after the turn's own)."""

    turn: Turn
    answer: ClientAnswer
    persist: Persister | None = None


@dataclass(frozen=True)
class Resumed:
    """The suspended turn a request answered, delivered from `start` (just after the request it answered): `turn` when
    it runs here, else None and `journal` follows its owner's (W-15.4)."""

    journal: Journal
    start: int
    run_id: str
    turn: Turn | None = None


@dataclass(frozen=True)
class NewTurn(Generic[H]):
    held: HeldTurn
    head: H | None = None  # the early head, when the surface asked for one


@dataclass(frozen=True)
class Existing:
    kind: Literal["attach", "replay"]
    record: IdempotencyRecord
    journal: Journal  # the live turn's, one another gateway writes (followed), or the recorded one
    turn: Turn | None  # the live turn of an attach in this process

    @property
    def run_id(self) -> str:
        return self.record.turn_id


@dataclass(frozen=True)
class Refusal(Generic[H]):
    code: str
    head: H | None = None  # the early head already written, where the refusal must be reported


Submission = NewTurn[H] | Existing | Resumed | Refusal[H]


class Submitter:
    """Runs the submission path for one gateway process."""

    def __init__(
        self,
        settings: Settings,
        scope: str,
        registry: TurnRegistry,
        admissions: Idempotency,
        store: Store,  # every role: profile_builder hands it on to their placement and conversations
        journals: JournalSaver,
        remote_turns: RemoteTurns,
        placement: Placement,
        profile_home: Path | None = None,
        meters: TurnMeters | None = None,
    ) -> None:
        self.settings = settings
        self.scope = scope  # the credential scope (WIRE.md §1.3) of every request this submitter admits
        self.registry = registry
        self.admissions = admissions
        self.store = store
        self.journals = journals
        self.remote_turns = remote_turns
        self.placement = placement  # records which host keeps the sessions its turns run on (per-host sessions)
        self.profile_home = profile_home  # the host profile its turns run in (WIRE §14.3); None: the gateway's
        self.meters = meters  # what its turns and admissions record in the gateway's metrics (None: metrics off)
        # what suspended turns wait by in a shared store, so that an answer on another gateway finds them (W-15.4)
        self.waits = Waits(store, journals, remote_turns.shared)

    def for_profile(self, scope: str, profile_home: Path, placement: Placement, name: str = "") -> Submitter:
        """The same submission path for a multiplexed host profile: its credential scope, its home, its sessions'
        placement; `name` labels its turns in the metrics."""
        meters = self.meters.for_profile(name, name) if self.meters is not None and name else self.meters
        return Submitter(
            self.settings,
            scope,
            self.registry,
            self.admissions,
            self.store,
            self.journals,
            self.remote_turns,
            placement,
            profile_home,
            meters,
        )

    async def slot(
        self, surface: str, key: str | None, identity: Callable[[], str], target: Any, large: bool = False
    ) -> Slot | None:
        """The idempotency slot of a request (None without `Idempotency-Key`); the identity hash is computed
        only for keyed requests, off the loop for a `large` one (offload.py)."""
        if key is None:
            return None
        return Slot(self.scope, surface, key, await off_loop(identity, large), canonical(target))

    async def submit(self, surface: Planner, early_head: Callable[[Turn], Awaitable[H]] | None = None) -> Submission[H]:
        """The outcome of one work-creating request. ApiErrors of validation, resolution (404), the
        cap (429) and draining (503) propagate; admission refusals come back as `Refusal`."""
        outcome = await self._submit(surface, early_head)
        if self.meters is not None:
            self.meters.admission(surface.name, outcome_name(outcome), surface.key is not None)
        return outcome

    async def _submit(self, surface: Planner, early_head: Callable[[Turn], Awaitable[H]] | None) -> Submission[H]:
        slot = await self.slot(surface.name, surface.key, surface.identity, surface.target(), surface.large)
        self.registry.check_draining()
        if slot is None:
            answered: Resumed | Refusal[H] | None = await self._answers(surface, None, False)
            if answered is not None:
                return answered
            new: NewTurn[H] | Refusal[H] | Decision = await self._new(None, False, surface, None)
            assert not isinstance(new, Decision)  # only a reservation can lose a race
            return new
        async with self.admissions.serialised(slot):
            try:
                decision = await self.admissions.decide(slot, self._live)
            except StoreError as exc:
                return Refusal(store_failure(exc))
            if decision.verdict == "new":
                answered = await self._answers(surface, slot, decision.free_expired)
                if answered is not None:
                    return answered
                outcome = await self._new(slot, decision.free_expired, surface, early_head)
                if not isinstance(outcome, Decision):
                    return outcome
                decision = outcome  # another gateway reserved the key first: its record decides
        return await self._existing(decision)

    async def _answers(self, surface: Planner, slot: Slot | None, replace_expired: bool) -> Resumed | Refusal[H] | None:
        """The suspended turn the request answers, answered (WIRE.md §15.1): one of this gateway's, else — on a shared
        store, when none here took it — one that waits by the request's wait keys (cluster/waits.py): another
        gateway's (W-15.4), or one of ours whose last delivery another gateway made (its keys are that delivery's).
        None: the request is a new turn (what it left unanswered resolved negatively)."""
        resume = await surface.resumes(self.registry.waiting(self.scope))
        if resume is None and self.waits.shared:
            try:
                waiting = await self.waits.find(self.scope, await surface.wait_keys())
            except StoreError as exc:
                return Refusal(store_failure(exc))
            if waiting is None:
                return None
            if waiting.run.owner != self.admissions.boot_id:
                return await self._remote_answer(surface, waiting, slot, replace_expired)
            resume = self._found_here(surface, waiting)
        if resume is None:
            return None
        if declined(resume.answer):
            await self._apply(resume.turn, resume.answer)
            return None
        if slot is not None:
            return await self._resume_keyed(resume, surface, slot, replace_expired)
        return await self._resume(resume, surface)

    def _found_here(self, surface: Planner, waiting: Waiting) -> Resume | None:
        """A turn of this gateway found by its wait keys, and the request's answer to it (decided from its journal, as
        another gateway's turn is)."""
        turn = self.registry.get(waiting.run.turn_id)
        if turn is None or turn.request.scope != self.scope or turn.required_action is None:
            return None
        answer = surface.answer_from(list(turn.journal.events), waiting)
        return Resume(turn, answer) if answer is not None else None

    async def _apply(self, turn: Turn, answer: ClientAnswer) -> int:
        """Give a local turn its answer (its wait keys go first); how many requests it resolved."""
        await self.waits.answered(turn.run_id)
        return apply_answer(turn, answer)[1]

    async def _resume(self, resume: Resume, surface: Planner) -> Resumed:
        """Answer a suspended turn and deliver it from just after the request it answered."""
        turn = resume.turn
        start = turn.resume_position()
        surface.resuming(turn, start)
        if resume.persist is not None:
            turn.persist = _chained(turn.persist, resume.persist)
        # 0 when a timeout or stop resolved it first: the delivery shows what the turn does instead
        await self._apply(turn, resume.answer)
        return Resumed(turn.journal, start, turn.run_id, turn)

    async def _resume_keyed(
        self, resume: Resume, surface: Planner, slot: Slot, replace_expired: bool
    ) -> Resumed | Refusal[H]:
        """A keyed answer: its key is reserved for the turn it answers before the answer is applied, so a retry attaches
        to that turn from the same position (its reply records it) and never answers again. The turn's settlement then
        settles this key too, its journal kept durable for the retries that replay it."""
        turn = resume.turn
        surface.resuming(turn, turn.resume_position())
        try:
            holder = await self.admissions.reserve(slot, turn.run_id, surface.reply(turn).to_json(), replace_expired)
        except StoreError as exc:
            return Refusal(store_failure(exc))
        if holder is not None:
            return Refusal("admission_conflict")
        if not turn.settles_keys:
            turn.persist = _chained(turn.persist, self._settle_keys)
            turn.settles_keys = True
            if not self.journals.watching(turn.journal):
                self.journals.watch(turn.run_id, turn.journal)
        return await self._resume(resume, surface)

    async def _remote_answer(
        self, surface: Planner, waiting: Waiting, slot: Slot | None, replace_expired: bool
    ) -> Resumed | Refusal[H] | None:
        """A suspended turn another gateway runs, found by the request's wait keys (cluster/waits.py): its answer is
        decided from the owner's journal as a local turn's would be, forwarded to the owner (which checks the scope and
        applies it, turns/answers.py), and the delivery follows the owner's journal from where the answer resumes it.
        A keyed request's key is reserved for that run first — owned by the run's owner, so that a retry on any
        gateway attaches to it and the owner's settlement settles it — and a retry never answers again. A DECLINE is
        forwarded too; the request is then a new turn here."""
        run = waiting.run
        try:
            journal = await self.remote_turns.journal(run.turn_id, run.owner)
        except StoreError as exc:
            return Refusal(store_failure(exc))
        events = list(journal.events)
        answer = surface.answer_from(events, waiting)
        if answer is None:
            return None
        if declined(answer):
            await self._forward(run, answer)  # what it answers nothing of resolves negatively, as a local turn's
            return None
        start = resume_position(events)
        try:
            handoff = await surface.resuming_remote(waiting, journal, start)
        except StoreError as exc:
            return Refusal(store_failure(exc))
        if handoff is not None:
            answer = replace(answer, handoff=handoff)
        if slot is not None:
            try:
                reply = surface.reply(None).to_json()
                holder = await self.admissions.reserve(slot, run.turn_id, reply, replace_expired, owner=run.owner)
            except StoreError as exc:
                return Refusal(store_failure(exc))
            if holder is not None:
                return Refusal("admission_conflict")
        refused = await self._forward(run, answer)
        if refused is not None:
            return Refusal(refused)
        return Resumed(journal, start, run.turn_id)

    async def _forward(self, run: RunRecord, answer: ClientAnswer) -> str | None:
        """Have the owner of `run` apply `answer` (its wait keys go first); the refusal code when nobody can know
        whether it was applied (answer_unconfirmed) or the store fails. An owner that is gone, or a turn that no longer
        waits for it, applies nothing: the delivery then shows what the turn does instead, as a local one's."""
        await self.waits.answered(run.turn_id)
        try:
            await self.remote_turns.forward_answer(run.owner, run.turn_id, self.scope, answer)
        except AnswerUnconfirmed:
            return "answer_unconfirmed"
        except StoreError as exc:
            return store_failure(exc)
        return None

    async def _settle_keys(self, turn: Turn, finished: TurnFinished) -> None:
        """The keys that name a turn admitted without one (a keyed answer's), settled once its whole journal is
        durable."""
        if not turn.writes_journal:
            await self.journals.write_now(turn.run_id, turn.journal, [finished], at=turn.finished_at)
        await self.admissions.settle(turn.run_id)

    def _live(self, run_id: str) -> bool:
        return self.registry.get(run_id) is not None

    async def _existing(self, decision: Decision) -> Existing | Refusal[H]:
        """A key some admission holds: attach, replay, or the refusal."""
        record = decision.record
        assert record is not None
        if decision.gone:
            await self._settle_gone()
        if decision.code is not None:
            return Refusal(decision.code)
        live = self.registry.get(record.turn_id)
        if decision.verdict == "attach" and live is not None:
            return Existing("attach", record, live.journal, live)
        try:
            if decision.remote:
                if not self.remote_turns.shared:
                    return Refusal("running_elsewhere")
                assert record.owner is not None
                return Existing("attach", record, await self.remote_turns.journal(record.turn_id, record.owner), None)
            journal = await stored_journal(self.store, record.turn_id)
        except StoreError as exc:
            return Refusal(store_failure(exc))
        return Existing("replay", record, journal, None)

    async def _settle_gone(self) -> None:
        """A keyed retry found its turn's owner gone: settle what that owner left (WIRE.md §5.4) before answering."""
        try:
            await self.remote_turns.sweep()
        except StoreError:
            pass  # the answer is unknown_execution all the same; the next sweep settles it

    async def _new(
        self,
        slot: Slot | None,
        replace_expired: bool,
        surface: Planner,
        early_head: Callable[[Turn], Awaitable[H]] | None,
    ) -> NewTurn[H] | Refusal[H] | Decision:
        """A new admission; a `Decision` when another gateway reserved the key between lookup and reservation (its
        record decides: attach or conflict). On a shared store the reservation comes before a keyed chat stream's
        early head, so that a lost race still attaches with the winner's ids; on one gateway's store no other
        process can win a race (running_elsewhere) and the head goes out first (WIRE.md §5.3)."""
        p = await surface.plan()
        request = self._request(p)
        loader = p.history if callable(p.history) else None
        held = self.registry.admit(
            request,
            queue_key=request.session_id if p.queued else None,
            history=loader,
            inputs=p.inputs,
            persist=self._persister(p, slot is not None),
            meter=self.meters.meter(request, surface.name) if self.meters is not None else None,
        )
        turn = held.turn
        head: H | None = None
        head_first = not self.remote_turns.shared
        try:
            if early_head is not None and head_first:
                head = await early_head(turn)
            if slot is not None:
                holder = await self.admissions.reserve(
                    slot, turn.run_id, surface.reply(turn).to_json(), replace_expired
                )
                if holder is not None:  # another process reserved the key between lookup and now
                    held.cancel()
                    decision = None if head is not None else await self.admissions.judge(slot, holder, self._live)
                    if decision is None or decision.verdict == "new":
                        return Refusal("admission_conflict", head)
                    return decision
            if early_head is not None and not head_first:
                head = await early_head(turn)
            if p.bind_key is not None:
                await self.store.bind_session_key(self.scope, p.bind_key, request.session_id)
            await surface.admitted(turn)
            if self.remote_turns.shared:
                await self.store.put_run(self._run_record(surface.name, turn))
                await self.placement.record(request.session_id)
        except StoreError as exc:
            held.cancel()
            return Refusal(store_failure(exc), head)
        except BaseException:
            held.cancel()
            raise
        if slot is not None or p.durable or self.remote_turns.shared:
            self.journals.watch(turn.run_id, turn.journal)
        turn.settles_keys = slot is not None
        turn.writes_journal = slot is not None or self.remote_turns.shared
        return NewTurn(held, head)

    def _request(self, p: TurnPlan) -> TurnRequest:
        """The runtime's request for a planned turn, built once (no copy per field the gateway adds, issue 25)."""
        selection, settings, history = p.selection, self.settings, p.history
        return TurnRequest(
            turn_id=p.turn_id or new_run_id(),
            session_id=p.session_id,
            input=p.input,
            history=() if callable(history) else tuple(history),
            system_prompt=p.system_prompt,
            model=selection.model,
            provider=selection.provider,
            model_options=selection.model_options,
            reasoning_enabled=selection.reasoning_enabled,
            reasoning_effort=selection.reasoning_effort,
            commentary_enabled=settings.interim_assistant_messages,
            max_iterations=settings.max_turns,
            metadata=p.metadata or {},
            session_key=p.session_key,
            profile_home=self.profile_home,
            scope=self.scope,
            client_tools=p.client_tools,
            tool_choice=p.tool_choice,
            hold_approvals=p.hold_approvals,
        )

    def _run_record(self, surface: str, turn: Turn) -> RunRecord:
        return RunRecord(
            turn.run_id,
            self.scope,
            self.admissions.boot_id,
            surface,
            turn.request.session_id,
            turn.request.model,
            "running",
            turn.created_at,
        )

    def _persister(self, plan: TurnPlan, keyed: bool) -> Persister | None:
        """The surface's persistence, then (keyed, or on a shared store) the settle step: the whole journal,
        terminal record included, is durable before the admission and the run record are marked settled, so a
        replay — or another gateway — finds the complete turn."""
        surface, journals, admissions, store = plan.persist, self.journals, self.admissions, self.store
        shared = self.remote_turns.shared
        if not keyed and not shared:
            return surface

        async def persist(turn: Turn, finished: TurnFinished) -> None:
            if surface is not None:
                await surface(turn, finished)
            await journals.write_now(turn.run_id, turn.journal, [finished], at=turn.finished_at)
            if keyed or shared:  # shared: keys other gateways reserved for the turn, answering it (W-15.4)
                await admissions.settle(turn.run_id)
            if shared:
                await store.settle_run(turn.run_id, finished.status.value, turn.finished_at or time.time())

        return persist


def _chained(first: Persister | None, then: Persister) -> Persister:
    """One persister that runs `first` (when there is one), then `then`."""
    if first is None:
        return then

    async def persist(turn: Turn, finished: TurnFinished) -> None:
        await first(turn, finished)
        await then(turn, finished)

    return persist


_OUTCOMES = {"admission_conflict": "conflict", "unknown_execution": "unknown", "admission_expired": "expired"}


def outcome_name(outcome: Submission[Any]) -> str:
    """A submission's outcome as the admissions metric names it: new, resumed, attach, replay, or the refusal
    (conflict, unknown, expired, or its code: storage_unavailable, running_elsewhere, …)."""
    if isinstance(outcome, NewTurn):
        return "new"
    if isinstance(outcome, Resumed):
        return "resumed"
    if isinstance(outcome, Existing):
        return outcome.kind
    return _OUTCOMES.get(outcome.code, outcome.code)


def refusal_error(refusal: Refusal[Any]) -> ApiError:
    """The HTTP error of a refusal (WIRE.md §5.3)."""
    return error_for(refusal.code)
