"""Idempotency (WIRE.md §5, "Idempotent admissions"): one durable mechanism for every work-creating POST.

A keyed request is looked up in its slot (scope, surface, key) with the identity and target session it
carries. `decide` is a pure decision table over the stored record, the owner's lease (`cluster/leases.py`) and the
clock:

    no record                                         → new
    tombstone/unknown older than tombstone_s          → new (the expired record is replaced)
    different identity or target                      → conflict
    settled, older than retention_s                   → expired (its answer is gone; the key stays consumed)
    unknown (its process died mid-turn)               → unknown
    running in this process                           → attach
    running, its owner's lease alive elsewhere        → attach, remote (follow the owner's journal)
    running, its owner gone (lease expired or absent,
      process gone, or this process without the turn) → unknown, gone (the caller settles the leftovers:
                                                         record marked unknown, journal closed — cluster/recovery.py)
    settled                                           → replay

A live owner is never judged gone, however long its turn runs: its lease is renewed while it runs. Requests with
one key are serialised in-process (`serialised`) so lookup and reservation happen as one step; the reservation
itself is atomic in the store, so two processes (or gateways) never both admit one key.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..cluster.leases import LeaseKeeper
from ..core.errors import ApiError, internal_error, storage_unavailable
from ..store.base import IdempotencyRecord, StoreError, StoreRefused
from ..store.roles import IdempotencyStore
from ..turns.locks import KeyedLocks

SURFACES = ("chat", "responses", "runs", "session_chat")
Verdict = Literal["new", "replay", "attach", "conflict", "unknown", "expired"]
Clock = Callable[[], float]

log = logging.getLogger("hermes_api_plugin")


def conflict() -> ApiError:
    return ApiError(409, "admission_conflict", type="invalid_request_error", code="admission_conflict")


def unknown_execution() -> ApiError:
    return ApiError(409, "unknown_execution", type="conflict_error", code="unknown_execution")


def admission_expired() -> ApiError:
    return ApiError(409, "admission_expired", type="conflict_error", code="admission_expired")


def running_elsewhere() -> ApiError:
    """The key's turn runs in another live gateway process that this store cannot follow (SQLite has no feed):
    retry shortly; once it settled, the retry replays it."""
    return ApiError(
        503,
        "running_elsewhere",
        type="server_error",
        code="running_elsewhere",
        headers={"Retry-After": "2"},
    )


def answer_unconfirmed() -> ApiError:
    """The gateway that runs a suspended turn did not confirm an answer in time: it may or may not have been applied
    (W-15.4)."""
    return ApiError(
        503,
        "The gateway that runs this run did not confirm the answer in time; it may or may not have been applied. "
        "Retry with the same Idempotency-Key to learn the outcome without applying it twice.",
        type="server_error",
        code="answer_unconfirmed",
        headers={"Retry-After": "1"},
    )


ERRORS = {
    "admission_conflict": conflict,
    "unknown_execution": unknown_execution,
    "admission_expired": admission_expired,
    "storage_unavailable": storage_unavailable,
    "running_elsewhere": running_elsewhere,
    "answer_unconfirmed": answer_unconfirmed,
    "store_refused": internal_error,
}
_CODES = {"conflict": "admission_conflict", "unknown": "unknown_execution", "expired": "admission_expired"}


def error_for(code: str) -> ApiError:
    """The HTTP error of an idempotency outcome that executes nothing (WIRE.md §5.3)."""
    return ERRORS[code]()


def store_failure(exc: StoreError) -> str:
    """The refusal code of a store failure: `storage_unavailable` (503 with Retry-After: the store fails, a retry may
    get through), but `store_refused` (500 internal_error, no Retry-After) when the database refused the statement
    for its values — a retry would be refused again, so clients must not be told to retry (issue 20, defect 7)."""
    if isinstance(exc, StoreRefused):
        log.error("[API Server] the store refused a statement: %s", exc)
        return "store_refused"
    return "storage_unavailable"


@dataclass(frozen=True)
class Slot:
    """Where a keyed request lives (scope × surface × key) and what it asks for (identity, target session)."""

    scope: str
    surface: str
    key: str
    identity: str
    target: str


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    record: IdempotencyRecord | None = None  # the existing record (every outcome but "new")
    free_expired: bool = False  # "new" over a record whose tombstone ran out: replace it
    remote: bool = False  # "attach" to a turn another live gateway process runs
    gone: bool = False  # "unknown" for a record still marked running: its owner's leftovers need settling

    @property
    def code(self) -> str | None:
        """The error code of a refusing outcome (conflict, unknown, expired), else None."""
        return _CODES.get(self.verdict)


class Idempotency:
    """Looks up, reserves and settles idempotency records for one gateway process (`leases.owner`, its boot id, owns
    what it runs; `leases` judges the other owners)."""

    def __init__(
        self,
        store: IdempotencyStore,
        leases: LeaseKeeper,
        *,
        retention_s: int,
        tombstone_s: int,
        clock: Clock = time.time,
    ) -> None:
        self.store = store
        self.leases = leases
        self.boot_id = leases.owner
        self.retention_s = retention_s
        self.tombstone_s = tombstone_s
        self.clock = clock
        self._locks: KeyedLocks[tuple[str, str, str]] = KeyedLocks()

    @contextlib.asynccontextmanager
    async def serialised(self, slot: Slot) -> AsyncIterator[None]:
        """Hold the in-process lock of one key: lookup and reservation happen as one step."""
        async with self._locks.hold((slot.scope, slot.surface, slot.key)):
            yield

    async def decide(self, slot: Slot, live: Callable[[str], bool]) -> Decision:
        """What to do with a keyed request. `live(turn_id)` tells whether a turn runs in this process; another
        owner's lease is read only for a running record whose turn is not here.

        Raises StoreError when the store fails (the caller answers storage_unavailable).
        """
        record = await self.store.get_idempotency_record(slot.scope, slot.surface, slot.key)
        if record is None:
            return Decision("new")
        return await self.judge(slot, record, live)

    async def judge(self, slot: Slot, record: IdempotencyRecord, live: Callable[[str], bool]) -> Decision:
        """The table for the record that holds the key (read by `decide`, or returned by a reservation that lost a
        race to another gateway). Raises StoreError when reading the owner's lease fails."""
        same = record.identity == slot.identity and record.target == slot.target
        now = self.clock()
        state, since = record.state, record.settled_at or record.created_at
        if state == "settled" and now > since + self.retention_s:
            state, since = "tombstone", since + self.retention_s  # the answer expired; the key stays consumed
        elif state == "unknown":
            since = record.created_at
        if state in ("tombstone", "unknown") and now > since + self.tombstone_s:
            return Decision("new", record, free_expired=True)
        if not same:
            return Decision("conflict", record)
        if state == "tombstone":
            return Decision("expired", record)
        if state == "unknown":
            return Decision("unknown", record)
        if state == "running":
            if live(record.turn_id):
                return Decision("attach", record)
            if record.owner != self.boot_id and await self.leases.owner_alive(record.owner):
                return Decision("attach", record, remote=True)
            return Decision("unknown", record, gone=record.owner != self.boot_id)
        return Decision("replay", record)

    async def reserve(
        self, slot: Slot, turn_id: str, reply: Mapping[str, Any], replace_expired: bool, owner: str | None = None
    ) -> IdempotencyRecord | None:
        """Reserve the key for `turn_id` in one transaction; returns the holder if another got there first. The record
        is this process's, or `owner`'s: the gateway that runs the turn (a keyed answer to a turn another gateway runs,
        W-15.4). Raises StoreError when the store fails."""
        record = IdempotencyRecord(
            slot.scope,
            slot.surface,
            slot.key,
            slot.identity,
            slot.target,
            "running",
            turn_id,
            dict(reply),
            owner or self.boot_id,
            self.clock(),
            None,
        )
        if replace_expired:
            await self.store.replace_idempotency_record(record)
            return None
        return await self.store.reserve_idempotency_record(record)

    async def settle(self, turn_id: str) -> None:
        await self.store.settle_idempotency_record(turn_id)


__all__ = ["Decision", "Idempotency", "Slot", "error_for"]
