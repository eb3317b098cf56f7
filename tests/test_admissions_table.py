"""Admissions.decide as the decision table of admissions.py, on a real store and an injected clock (no sleeps).

The HTTP behaviour of every outcome is in test_admissions.py; here each row of the table is checked on its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from hermes_api_plugin.admissions import Admissions, Slot
from hermes_api_plugin.store import MemoryStore

RETENTION, TOMBSTONE = 100, 1000
SLOT = Slot("scope", "chat", "key-1", "identity-a", '["s1",null]')
OTHER_IDENTITY = Slot("scope", "chat", "key-1", "identity-b", '["s1",null]')
OTHER_TARGET = Slot("scope", "chat", "key-1", "identity-a", '["s2",null]')


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def store() -> AsyncIterator[MemoryStore]:
    store = MemoryStore()
    await store.open()
    yield store
    await store.close()


def admissions(store: MemoryStore, clock: Clock, boot: str = "boot-a") -> Admissions:
    return Admissions(store, boot, retention_s=RETENTION, tombstone_s=TOMBSTONE, clock=clock)


def live(run_id: str) -> bool:
    return run_id == "run_1"


def dead(run_id: str) -> bool:
    return False


async def outcome(a: Admissions, slot: Slot = SLOT, is_live: Callable[[str], bool] = live) -> str:
    return (await a.decide(slot, is_live)).outcome


async def test_no_record_is_new_and_a_reservation_is_atomic(store: MemoryStore) -> None:
    a = admissions(store, Clock(1000.0))
    assert await outcome(a) == "new"
    assert await a.reserve(SLOT, "run_1", {"session_id": "s1"}, replace_expired=False) is None
    holder = await a.reserve(SLOT, "run_2", {}, replace_expired=False)
    assert holder is not None and holder.turn_id == "run_1"


async def test_a_running_record_attaches_while_its_turn_lives_here_else_is_unknown(store: MemoryStore) -> None:
    a = admissions(store, Clock(1000.0))
    await a.reserve(SLOT, "run_1", {}, replace_expired=False)
    assert await outcome(a, is_live=live) == "attach"
    assert await outcome(a, is_live=dead) == "unknown"
    assert await outcome(a, OTHER_IDENTITY) == "conflict"
    assert await outcome(a, OTHER_TARGET) == "conflict"


async def test_settled_replays_until_retention_then_is_expired_until_the_tombstone_runs_out(store: MemoryStore) -> None:
    clock = Clock(1000.0)
    a = admissions(store, clock)
    await a.reserve(SLOT, "run_1", {}, replace_expired=False)
    await a.settle("run_1")
    settled_at = (await store.get_admission(SLOT.scope, SLOT.surface, SLOT.key)).settled_at  # type: ignore[union-attr]
    clock.now = settled_at + RETENTION - 1
    assert await outcome(a) == "replay"
    clock.now = settled_at + RETENTION + 1
    assert await outcome(a) == "expired"
    assert await outcome(a, OTHER_IDENTITY) == "conflict", "the tombstone keeps the key consumed"
    clock.now = settled_at + RETENTION + TOMBSTONE + 1
    decision = await a.decide(SLOT, live)
    assert (decision.outcome, decision.free_expired) == ("new", True)
    assert await a.reserve(SLOT, "run_9", {}, replace_expired=True) is None
    assert await outcome(a, is_live=lambda run_id: run_id == "run_9") == "attach"


async def test_recovery_makes_another_boots_running_records_unknown_for_the_tombstone_time(
    store: MemoryStore,
) -> None:
    clock = Clock(1000.0)
    gone = admissions(store, clock, boot="boot-gone")
    await gone.reserve(SLOT, "run_1", {}, replace_expired=False)
    clock.now = 2000.0
    await store.append_journals([("run_1", 0, ['{"t":"TextDelta","text":"partial","ts":1}'])])
    now = admissions(store, clock, boot="boot-now")
    assert await now.recover() == ["run_1"]
    assert await outcome(now) == "unknown"
    record = await store.get_admission(SLOT.scope, SLOT.surface, SLOT.key)
    assert record is not None
    clock.now = record.created_at + TOMBSTONE + 1
    assert await outcome(now) == "new"
