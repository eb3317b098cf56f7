"""Idempotent admissions (WIRE.md §5): one durable mechanism for every work-creating POST.

A keyed request is looked up in its (scope, surface, key) slot: a first request reserves it atomically
before anything runs; a retry attaches to the running turn or replays the settled one; a different
request under the same key conflicts; a key left running by a dead process is `unknown`; a key whose
answer expired or was deleted is `expired`. Requests with one key are serialised in-process so the
lookup, the reservation and the admission of the turn happen as one step.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Literal, Mapping

from aiohttp import web

from .content import canonical_json
from .errors import ApiError, invalid_request
from .journals import close_journal
from .store.base import AdmissionRecord, Store, StoreError
from .turns import Turn

SURFACES = ("chat", "responses", "runs", "session_chat")
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
Outcome = Literal["new", "replay", "attach", "conflict", "unknown", "expired"]


def idempotency_key(request: web.Request) -> str | None:
    """The trimmed `Idempotency-Key`, None when absent; 400 invalid_idempotency_key when malformed."""
    raw = request.headers.get("Idempotency-Key")
    if raw is None:
        return None
    key = raw.strip()
    if not _KEY.match(key):
        raise invalid_request(
            "invalid_idempotency_key", "Idempotency-Key must be 1-255 visible ASCII characters", "Idempotency-Key"
        )
    return key


def identity_hash(fields: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of the identity fields (sorted keys, compact, UTF-8)."""
    return hashlib.sha256(canonical_json(fields).encode()).hexdigest()


def conflict() -> ApiError:
    return ApiError(409, "admission_conflict", type="invalid_request_error", code="admission_conflict")


def unknown_execution() -> ApiError:
    return ApiError(409, "unknown_execution", type="conflict_error", code="unknown_execution")


def admission_expired() -> ApiError:
    return ApiError(409, "admission_expired", type="conflict_error", code="admission_expired")


def storage_unavailable() -> ApiError:
    return ApiError(503, "storage_unavailable", type="server_error", code="storage_unavailable",
                    headers={"Retry-After": "1"})


ERRORS = {
    "admission_conflict": conflict,
    "unknown_execution": unknown_execution,
    "admission_expired": admission_expired,
    "storage_unavailable": storage_unavailable,
}
_CODES = {"conflict": "admission_conflict", "unknown": "unknown_execution", "expired": "admission_expired"}


def error_for(code: str) -> ApiError:
    """The HTTP error of an admission outcome that executes nothing (WIRE.md §5.3)."""
    return ERRORS[code]()


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    record: AdmissionRecord | None = None  # the existing record (every outcome but "new")
    free_expired: bool = False  # "new" over a record whose tombstone ran out: replace it

    @property
    def code(self) -> str | None:
        """The error code of a refusing outcome (conflict, unknown, expired), else None."""
        return _CODES.get(self.outcome)


class Admissions:
    """Looks up, reserves and settles admissions for one gateway process (`boot_id` owns what it runs)."""

    def __init__(self, store: Store, boot_id: str, *, retention_s: int, tombstone_s: int) -> None:
        self.store = store
        self.boot_id = boot_id
        self.retention_s = retention_s
        self.tombstone_s = tombstone_s
        self._locks: dict[tuple[str, str, str], tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def serialised(self, scope: str, surface: str, key: str) -> AsyncIterator[None]:
        """Hold the in-process lock of one key: lookup, reservation and admission happen as one step."""
        slot = (scope, surface, key)
        lock, users = self._locks.get(slot) or (asyncio.Lock(), 0)
        self._locks[slot] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[slot]
            if users <= 1:
                del self._locks[slot]
            else:
                self._locks[slot] = (lock, users - 1)

    async def decide(self, scope: str, surface: str, key: str, identity: str, target: str,
                     live: Callable[[str], bool]) -> Decision:
        """What to do with a keyed request. `live(turn_id)` tells whether a turn runs in this process.

        Raises StoreError when the store fails (the caller answers storage_unavailable).
        """
        record = await self.store.get_admission(scope, surface, key)
        if record is None:
            return Decision("new")
        same = record.identity == identity and record.target == target
        now = time.time()
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
            return Decision("attach" if live(record.turn_id) else "unknown", record)
        return Decision("replay", record)

    async def reserve(self, scope: str, surface: str, key: str, identity: str, target: str, turn_id: str,
                      reply: Mapping[str, Any], replace_expired: bool) -> AdmissionRecord | None:
        """Reserve the key for `turn_id` in one transaction; returns the holder if another got there first."""
        record = AdmissionRecord(scope, surface, key, identity, target, "running", turn_id, dict(reply),
                                 self.boot_id, time.time(), None)
        if replace_expired:
            await self.store.replace_admission(record)
            return None
        return await self.store.reserve_admission(record)

    async def reserve_turn(self, turn: Turn, scope: str, surface: str, key: str, identity: str, target: str,
                           reply: Mapping[str, Any], replace_expired: bool) -> None:
        """Reserve the key for an admitted, held turn. When that fails the turn is cancelled before it
        runs and the refusal is raised: 503 storage_unavailable, or 409 admission_conflict when another
        process holds the key."""
        try:
            holder = await self.reserve(scope, surface, key, identity, target, turn.run_id, reply, replace_expired)
        except StoreError:
            code = "storage_unavailable"
        else:
            if holder is None:
                return
            code = "admission_conflict"
        turn.cancel()
        turn.release()
        raise error_for(code)

    async def settle(self, turn_id: str) -> None:
        await self.store.settle_admission(turn_id)

    async def recover(self) -> list[str]:
        """At startup: admissions another process left running become `unknown` (never re-run); their
        journals are closed with a failed/unknown_execution terminal record. Returns their turn ids."""
        turn_ids = await self.store.mark_unknown_admissions(self.boot_id)
        for turn_id in turn_ids:
            await close_journal(self.store, turn_id)
        return turn_ids


__all__ = ["Admissions", "Decision", "error_for", "identity_hash", "idempotency_key"]
