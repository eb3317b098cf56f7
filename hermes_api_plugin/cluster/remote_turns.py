"""Following turns that other gateways run, and stopping them (issue 15, part 3).

On a shared store (PostgreSQL) every turn's journal is durable: its owner group-commits the rows
(`turns/durable.py`) and each commit sends a NOTIFY with the turn id. A gateway that must show a turn it does not
run — a keyed retry that attaches, `GET /v1/runs/{id}/events`, `GET /v1/responses/{id}?stream=true` — gets a
`RemoteJournal`: a `Journal` like any other (the dialect renderers and `http/delivery.py` cannot tell), extended here
from the stored rows, so every view renders byte for byte what the owner's own clients get: the same ids, the same
sequence numbers, the same journal times.

One follower task per followed turn (however many clients watch it):

    read the rows from seq len(journal) on  →  extend the journal  →  settled? done
    wait for: a notification for the turn | the feed reconnected (re-read: notifications may be lost) |
              the owner's lease running out (then: still alive? wait on; gone? recovery.py settles the turn
              `unknown_execution`, whose terminal record this follower then reads)

No timer polls the journal: the follower reads only when woken. A follower nobody follows for IDLE_S ends (its
journal stays as it was for whoever still holds it). A new follower tells the owner (`announce_follow`, again after the
feed reconnects): the owner then commits that turn's rows as they come instead of every group-commit interval
(turns/durable.py `followed`), so following from here costs a commit and a NOTIFY, not the interval (issue 25).
Stop requests for turns this gateway owns arrive through the same feed (`stop_requested`) and stop the turn locally,
as `POST /v1/runs/{id}/stop` on the owner would.

A client's answer to a turn another gateway runs (an approval decision, a question's answer, client tool outputs:
WIRE.md §15.1, §15.4, W-15.4)
travels the same way, and its outcome comes back over the feed:

    gateway B (took the answer)                          gateway A (runs the turn)
    scope checked (the run record) · owner's lease alive
    forward_answer ── {id, from, turn, scope, kind, answer, key,  ──▶ answer_requested: the turn, in that scope?
                       handoff}
                                                                      apply_answer (turns/answers.py), as locally
    B replies as A would  ◀── {id, outcome, count} ──────────────── reply

The answer is a run route's (`POST /v1/runs/{id}/approval` …) or a chat, session chat or Responses request's that
answers the turn in its own dialect (submission/submit.py; `DECLINE`: the conversation moved on). The `handoff` is
what the answering surface's delivery needs the owner's side to keep (a Responses turn's new Response: the owner stores
it, ends it at the next request and settles it, as if the request had come there).

A reply rather than reading the journal for the `.responded` record: only the owner knows what its answer did — how
many requests a decision resolved, whether a key replayed or conflicts, whether this answer or another one resolved
the request. The owner applies every answer to its turns, so a keyed answer is applied once whichever gateways it
is sent to. An owner whose lease is gone runs nothing: nothing pends there. But no reply within ANSWER_WAIT_S from
a live owner (its listener lost the notification, its reply was lost) leaves the outcome unknown — the answer may
have been applied — so it raises `AnswerUnconfirmed` (the route's 503 with Retry-After), never "nothing pending": a
keyed retry then reaches the owner again and gets its recorded outcome. The message may be of any length: the
store's feed carries what a notification cannot hold (a 50 KB tool output) by reference (store/postgres/feed.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, Protocol

from ..core.events import TurnEvent
from ..core.metrics import Metrics
from ..store.base import Feed, StoreError
from ..store.roles import JournalStore, LeaseStore
from ..turns import Journal, TurnRegistry
from ..turns.answers import KINDS, TOOL_OUTPUTS, ClientAnswer, apply_answer
from ..turns.durable import JournalSaver, close_journal
from ..turns.journal import decode_events
from ..turns.suspension import Keyed
from .leases import LeaseKeeper

log = logging.getLogger("hermes_api_plugin")

IDLE_S = 10.0  # a follower nobody follows ends after this long
RETRY_S = 1.0  # a read that failed (the store is down) is tried again this soon, or when the feed reconnects
GRACE_S = 0.5  # past the owner's lease expiry before its lease is read again
ANSWER_WAIT_S = 5.0  # the owner's reply to a forwarded answer normally comes within milliseconds


class AnswerUnconfirmed(Exception):
    """The live owner of a turn did not reply to a forwarded answer in time: it may or may not have applied it."""


class RemoteTurnStore(JournalStore, LeaseStore, Protocol):
    """The roles following remote turns reads: their journals, their owners' leases, the feed."""


class RemoteJournal(Journal):
    """A journal another gateway writes; counts the streams following it, so its follower ends when none does."""

    __slots__ = ("follows",)

    def __init__(self) -> None:
        super().__init__()
        self.follows = 0

    async def follow(
        self,
        start: int = 0,
        idle_timeout: float | None = None,
        take: Callable[[list[TurnEvent]], bool] | None = None,
    ) -> AsyncIterator[list[TurnEvent] | None]:
        self.follows += 1
        try:
            async for batch in super().follow(start, idle_timeout, take):
                yield batch
        finally:
            self.follows -= 1


class _Follower:
    """Keeps one RemoteJournal up to date with the stored rows of its turn."""

    def __init__(self, remote_turns: RemoteTurns, turn_id: str, owner: str) -> None:
        self.remote_turns = remote_turns
        self.turn_id = turn_id
        self.owner = owner
        self.journal = RemoteJournal()
        self.wake = asyncio.Event()
        self.first_read: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.idle_since: float | None = None

    async def run(self) -> None:
        remote_turns, journal = self.remote_turns, self.journal
        deadline = 0.0  # when to look at the owner's lease again
        read = True
        while True:
            if read:
                self.wake.clear()
                try:
                    rows = await remote_turns.store.load_journal(self.turn_id, len(journal.events))
                    if not self.first_read.done():
                        deadline = await self._owner_deadline()
                except StoreError as exc:
                    if not self.first_read.done():
                        self.first_read.set_exception(exc)
                        return
                    await self._wait(RETRY_S)
                    continue
                if rows:
                    journal.extend_recorded(*decode_events(rows))
                if not self.first_read.done():
                    self.first_read.set_result(None)
                if journal.finished is not None:
                    return
            if self._idle():
                return
            remaining = deadline - remote_turns.leases.clock()
            if remaining > 0:
                read = await self._wait(min(remaining, IDLE_S))
            else:
                deadline, read = await self._owner_gone_or_renewed()

    async def _wait(self, timeout: float) -> bool:
        """Wait for a wake-up (True) or `timeout` seconds (False)."""
        try:
            await asyncio.wait_for(self.wake.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _idle(self) -> bool:
        """Nobody has followed the journal for IDLE_S."""
        loop = asyncio.get_running_loop()
        if self.journal.follows > 0:
            self.idle_since = None
            return False
        if self.idle_since is None:
            self.idle_since = loop.time()
        return loop.time() - self.idle_since >= IDLE_S

    async def _owner_deadline(self) -> float:
        """When to look at the owner's lease again: its expiry (+ a grace), or now when it is already gone."""
        leases = self.remote_turns.leases
        lease = await leases.store.get_lease(self.owner)
        if not leases.alive(lease):
            return leases.clock()
        assert lease is not None
        return lease.expires_at + GRACE_S

    async def _owner_gone_or_renewed(self) -> tuple[float, bool]:
        """The owner's lease ran out as last read: read it again. If the owner is gone, settle its leftovers — this
        turn's journal gets its unknown_execution terminal record — and read (the second value: read now)."""
        leases = self.remote_turns.leases
        try:
            deadline = await self._owner_deadline()
            if deadline > leases.clock():
                return deadline, False
            closed = await self.remote_turns.sweep()
            if self.turn_id not in closed:
                await close_journal(self.remote_turns.store, self.turn_id)  # a turn no record describes as running
        except StoreError:
            return leases.clock() + RETRY_S, False
        return leases.clock() + RETRY_S, True


class RemoteTurns:
    """The feed's sink for this gateway: followers of remote turns, and stop requests for its own."""

    def __init__(
        self,
        store: RemoteTurnStore,
        leases: LeaseKeeper,
        sweep: Callable[[], Awaitable[list[str]]],
        registry: TurnRegistry,
        journals: JournalSaver,
        metrics: Metrics | None = None,
    ) -> None:
        self.store = store
        self.leases = leases
        self.metrics = metrics  # cross-gateway attach latency (None: metrics off)
        self.sweep = sweep  # recovery.py: settles what gone owners left; returns the turn ids whose journals it closed
        self.registry = registry
        self.journals = journals  # this gateway's own durable journals: what another gateway follows commits sooner
        self.feed: Feed | None = store.feed()
        self._followers: dict[str, _Follower] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._answers: dict[str, asyncio.Future[tuple[Keyed, int] | None]] = {}  # forwarded, awaiting the reply
        self.answer_wait_s = ANSWER_WAIT_S

    @property
    def shared(self) -> bool:
        """Other gateways share the store at once: every turn is durable and can be followed from any of them."""
        return self.feed is not None

    async def start(self) -> None:
        if self.feed is not None:
            await self.feed.start(self)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.feed is not None:
            await self.feed.close()

    async def journal(self, turn_id: str, owner: str) -> Journal:
        """The journal of a turn `owner` runs, as stored now and then extended as it is written (StoreError when
        the store fails on the first read)."""
        follower = self._followers.get(turn_id)
        if follower is None:
            follower = _Follower(self, turn_id, owner)
            self._followers[turn_id] = follower
            self._spawn(self._run(follower), f"follow {turn_id}")
            self._spawn(self._announce(owner, turn_id), f"announce {turn_id}")
        follower.idle_since = None  # the caller is about to follow it: IDLE_S to start before it may end
        began = time.perf_counter()
        await asyncio.shield(follower.first_read)
        if self.metrics is not None:
            self.metrics.remote_attach.observe(time.perf_counter() - began)
        return follower.journal

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, follower: _Follower) -> None:
        try:
            await follower.run()
        except Exception:
            log.exception("[API Server] following turn %s of another gateway failed", follower.turn_id)
        finally:
            if self._followers.get(follower.turn_id) is follower:
                del self._followers[follower.turn_id]
            if not follower.first_read.done():
                follower.first_read.set_exception(StoreError("the follower ended before its first read"))

    async def _announce(self, owner: str, turn_id: str) -> None:
        """Tell the owner its turn is followed from here; without it the follower still sees every row, only later."""
        if self.feed is None:
            return
        try:
            await self.feed.announce_follow(owner, turn_id)
        except StoreError as exc:
            log.warning("[API Server] could not tell gateway %s that run %s is followed: %s", owner, turn_id, exc)

    async def request_stop(self, owner: str, turn_id: str) -> None:
        """Ask the gateway that runs `turn_id` to stop it (StoreError when the store fails)."""
        if self.feed is None:
            raise StoreError("this store has no feed to reach other gateways")
        await self.feed.request_stop(owner, turn_id)

    async def forward_answer(
        self, owner: str, turn_id: str, scope: str, answer: ClientAnswer
    ) -> tuple[Keyed, int] | None:
        """Have the gateway that runs `turn_id` apply `answer` as its own route would; what came of it, or None when
        the owner is gone or runs no such turn in `scope`. AnswerUnconfirmed when the owner did not reply within
        `answer_wait_s`; StoreError when the store fails."""
        if self.feed is None:
            raise StoreError("this store has no feed to reach other gateways")
        if not self.leases.alive(await self.store.get_lease(owner)):
            return None
        request_id = secrets.token_hex(8)
        message = json.dumps(
            {
                "id": request_id,
                "from": self.leases.owner,
                "turn": turn_id,
                "scope": scope,
                "kind": answer.kind,
                "choice": answer.choice,
                "all": answer.resolve_all,
                "text": answer.text,
                "outputs": [list(pair) for pair in answer.outputs],
                "key": answer.key,
                "handoff": answer.handoff,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        replied: asyncio.Future[tuple[Keyed, int] | None] = asyncio.get_running_loop().create_future()
        self._answers[request_id] = replied  # before sending: the reply may come before forward_answer returns
        try:
            await self.feed.forward_answer(owner, message)
            return await asyncio.wait_for(replied, self.answer_wait_s)
        except TimeoutError:
            raise AnswerUnconfirmed(turn_id) from None
        finally:
            del self._answers[request_id]

    def _apply_forwarded(self, fields: dict[str, object]) -> tuple[Keyed, int] | None:
        """Apply an answer forwarded to this gateway to its own turn, when that turn runs here in the scope named."""
        turn = self.registry.get(str(fields["turn"]))
        if turn is None or turn.request.scope != fields["scope"] or fields["kind"] not in KINDS:
            return None
        key = fields.get("key")
        outputs = (fields.get("outputs") or []) if fields["kind"] == TOOL_OUTPUTS else []
        if not isinstance(outputs, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, str) for v in pair) for pair in outputs
        ):
            raise ValueError("malformed tool outputs")
        handoff = fields.get("handoff")
        answer = ClientAnswer(
            str(fields["kind"]),
            choice=str(fields.get("choice") or ""),
            resolve_all=fields.get("all") is True,
            text=str(fields.get("text") or ""),
            outputs=tuple((call_id, output) for call_id, output in outputs),
            key=key if isinstance(key, str) else None,
            handoff=handoff if isinstance(handoff, dict) else None,
        )
        outcome = apply_answer(turn, answer)
        if outcome[1] > 0:
            # the answering gateway delivers the turn on: what its delivery ends at, it publishes (cluster/waits.py)
            turn.answer_key = None
        return outcome

    async def _reply(self, to: str, request_id: str, outcome: tuple[Keyed, int] | None) -> None:
        assert self.feed is not None
        reply = {"id": request_id, "outcome": None, "count": 0}
        if outcome is not None:
            reply["outcome"], reply["count"] = outcome[0].value, outcome[1]
        try:
            await self.feed.reply_answer(to, json.dumps(reply, separators=(",", ":")))
        except StoreError as exc:
            log.warning("[API Server] could not reply to the answer gateway %s forwarded: %s", to, exc)

    # -- FeedSink ---------------------------------------------------------------------------------------------
    @property
    def address(self) -> str:
        return self.leases.owner

    def journal_written(self, turn_id: str, end: int) -> None:
        follower = self._followers.get(turn_id)
        if follower is not None and end > len(follower.journal.events):
            follower.wake.set()

    def follow_requested(self, owner: str, turn_id: str) -> None:
        if owner == self.leases.owner:
            self.journals.followed(turn_id)

    def stop_requested(self, owner: str, turn_id: str) -> None:
        if owner == self.leases.owner and self.registry.stop(turn_id) is not None:
            log.info("[API Server] run %s stopped at the request of another gateway", turn_id)

    def answer_requested(self, owner: str, message: str) -> None:
        if owner != self.leases.owner:
            return  # another gateway's turn: every gateway hears every notification
        try:
            fields = json.loads(message)
            request_id, to = str(fields["id"]), str(fields["from"])
            outcome = self._apply_forwarded(fields)
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("[API Server] ignored a malformed answer forwarded by another gateway")
            return
        if outcome is not None:
            log.info("[API Server] run %s answered through another gateway (%s)", fields["turn"], fields["kind"])
        self._spawn(self._reply(to, request_id, outcome), f"reply {request_id}")

    def answer_replied(self, to: str, message: str) -> None:
        if to != self.leases.owner:
            return
        try:
            fields = json.loads(message)
            replied = self._answers.get(str(fields["id"]))
            outcome = None if fields["outcome"] is None else (Keyed(fields["outcome"]), int(fields["count"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("[API Server] ignored a malformed reply from another gateway")
            return
        if replied is not None and not replied.done():
            replied.set_result(outcome)

    def reconnected(self) -> None:
        for follower in self._followers.values():
            follower.wake.set()
            # the owner's feed may have been down too: the announcement may be lost
            self._spawn(self._announce(follower.owner, follower.turn_id), f"announce {follower.turn_id}")
