"""Idempotency.decide as the decision table of submission/idempotency.py, on a real store and an injected clock (no sleeps).

The HTTP behaviour of every outcome is in test_idempotency.py; here each row of the table is checked on its own,
the lease rows (issue 15) with two `LeaseKeeper`s on one store standing for two gateway processes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from hermes_api_plugin.cluster.leases import LeaseKeeper
from hermes_api_plugin.cluster.recovery import Recovery
from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.core.metrics import Metrics
from hermes_api_plugin.store import MemoryStore
from hermes_api_plugin.submission.idempotency import Idempotency, Slot
from tests.turns.support import registry

RETENTION, TOMBSTONE = 100, 1000
LEASE = 15.0
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


def keeper(
    store: MemoryStore,
    clock: Clock,
    boot: str,
    *,
    space: str = "space-1",
    pid: int = 1,
    running: frozenset[int] = frozenset({1}),
) -> LeaseKeeper:
    """A gateway process's lease keeper: its process space, pid, and the pids running in that space."""
    return LeaseKeeper(store, boot, LEASE, clock=clock, space=space, pid=pid, pid_running=lambda p: p in running)


def idempotency(
    store: MemoryStore, clock: Clock, boot: str = "boot-a", leases: LeaseKeeper | None = None
) -> Idempotency:
    leases = leases or keeper(store, clock, boot)
    return Idempotency(store, leases, retention_s=RETENTION, tombstone_s=TOMBSTONE, clock=clock)


def live(run_id: str) -> bool:
    return run_id == "run_1"


def dead(run_id: str) -> bool:
    return False


async def outcome(a: Idempotency, slot: Slot = SLOT, is_live: Callable[[str], bool] = live) -> str:
    return (await a.decide(slot, is_live)).verdict


async def test_no_record_is_new_and_a_reservation_is_atomic(store: MemoryStore) -> None:
    a = idempotency(store, Clock(1000.0))
    assert await outcome(a) == "new"
    assert await a.reserve(SLOT, "run_1", {"session_id": "s1"}, replace_expired=False) is None
    holder = await a.reserve(SLOT, "run_2", {}, replace_expired=False)
    assert holder is not None and holder.turn_id == "run_1"


async def test_a_running_record_attaches_while_its_turn_lives_here_else_is_unknown(store: MemoryStore) -> None:
    a = idempotency(store, Clock(1000.0))
    await a.reserve(SLOT, "run_1", {}, replace_expired=False)
    assert await outcome(a, is_live=live) == "attach"
    assert await outcome(a, is_live=dead) == "unknown"
    assert await outcome(a, OTHER_IDENTITY) == "conflict"
    assert await outcome(a, OTHER_TARGET) == "conflict"


async def test_settled_replays_until_retention_then_is_expired_until_the_tombstone_runs_out(store: MemoryStore) -> None:
    clock = Clock(1000.0)
    a = idempotency(store, clock)
    await a.reserve(SLOT, "run_1", {}, replace_expired=False)
    await a.settle("run_1")
    settled_at = (await store.get_idempotency_record(SLOT.scope, SLOT.surface, SLOT.key)).settled_at  # type: ignore[union-attr]
    clock.now = settled_at + RETENTION - 1
    assert await outcome(a) == "replay"
    clock.now = settled_at + RETENTION + 1
    assert await outcome(a) == "expired"
    assert await outcome(a, OTHER_IDENTITY) == "conflict", "the tombstone keeps the key consumed"
    clock.now = settled_at + RETENTION + TOMBSTONE + 1
    decision = await a.decide(SLOT, live)
    assert (decision.verdict, decision.free_expired) == ("new", True)
    assert await a.reserve(SLOT, "run_9", {}, replace_expired=True) is None
    assert await outcome(a, is_live=lambda run_id: run_id == "run_9") == "attach"


async def test_recovery_makes_a_gone_owners_running_records_unknown_for_the_tombstone_time(
    store: MemoryStore, tmp_path: Any
) -> None:
    clock = Clock(1000.0)
    gone = idempotency(store, clock, boot="boot-gone")
    await gone.leases.renew()
    await gone.reserve(SLOT, "run_1", {}, replace_expired=False)
    clock.now = 2000.0  # the gone process's lease ran out long ago
    await store.append_journals([("run_1", 0, ['{"t":"TextDelta","text":"partial","ts":1}'])])
    now = idempotency(store, clock, boot="boot-now")
    await now.leases.renew()
    metrics = Metrics()
    recovery = Recovery(load_settings(tmp_path), store, now.leases, await registry(store=store.sessions), metrics)
    assert await recovery.sweep() == ["run_1"]
    # issue 24: one gone gateway taken over, one of its turns settled
    assert metrics.registry.get_sample_value("hermes_api_lease_takeovers_total") == 1
    assert metrics.registry.get_sample_value("hermes_api_turns_recovered_total") == 1
    assert await outcome(now, is_live=dead) == "unknown"
    record = await store.get_idempotency_record(SLOT.scope, SLOT.surface, SLOT.key)
    assert record is not None and record.state == "unknown"
    journal = await store.load_journal("run_1")
    assert '"error_code":"unknown_execution"' in journal[-1], "the journal got its terminal record"
    assert await store.leases() == [await store.get_lease("boot-now")], "the gone owner's lease was purged"
    clock.now = record.created_at + TOMBSTONE + 1
    assert await outcome(now) == "new"


# -- leases (issue 15) ------------------------------------------------------------------------------------------


async def test_a_running_record_of_a_live_owner_elsewhere_attaches_remotely_however_long_it_runs(
    store: MemoryStore,
) -> None:
    """Row "running, its owner's lease alive elsewhere → attach, remote": never unknown while the owner renews."""
    clock = Clock(1000.0)
    owner = idempotency(store, clock, boot="boot-owner")
    await owner.leases.renew()
    await owner.reserve(SLOT, "run_1", {}, replace_expired=False)
    other = idempotency(store, clock, boot="boot-other", leases=keeper(store, clock, "boot-other", space="space-2"))
    for _ in range(20):  # 20 renewals: 100 lease periods of 5 s
        clock.now += LEASE / 3
        await owner.leases.renew()
        decision = await other.decide(SLOT, dead)
        assert (decision.verdict, decision.remote, decision.gone) == ("attach", True, False)
    assert await outcome(owner, is_live=live) == "attach", "the owner itself attaches locally"
    assert (await owner.decide(SLOT, live)).remote is False


async def test_a_running_record_whose_owners_lease_expired_is_unknown_and_gone(store: MemoryStore) -> None:
    """Row "running, its owner gone (lease expired)": unknown, and `gone` asks the caller to settle the leftovers.
    One second before the expiry it still attaches."""
    clock = Clock(1000.0)
    owner = idempotency(store, clock, boot="boot-owner")
    await owner.leases.renew()
    await owner.reserve(SLOT, "run_1", {}, replace_expired=False)
    other = idempotency(store, clock, boot="boot-other", leases=keeper(store, clock, "boot-other", space="space-2"))
    clock.now = 1000.0 + LEASE - 1
    assert (await other.decide(SLOT, dead)).verdict == "attach"
    clock.now = 1000.0 + LEASE + 1
    decision = await other.decide(SLOT, dead)
    assert (decision.verdict, decision.gone, decision.code) == ("unknown", True, "unknown_execution")


async def test_a_running_record_without_an_owners_lease_is_unknown(store: MemoryStore) -> None:
    """Row "lease absent": the owner released it (a clean shutdown that could not settle the turn) or never had one."""
    clock = Clock(1000.0)
    owner = idempotency(store, clock, boot="boot-owner")
    await owner.reserve(SLOT, "run_1", {}, replace_expired=False)
    decision = await idempotency(store, clock, boot="boot-other").decide(SLOT, dead)
    assert (decision.verdict, decision.gone) == ("unknown", True)


async def test_an_owner_whose_process_is_gone_on_this_host_is_gone_before_its_lease_runs_out(
    store: MemoryStore,
) -> None:
    """Row "process gone": same process space, its pid not running → gone at once (a crash, then a restart on this
    host); in another process space the pid says nothing and the lease decides."""
    clock = Clock(1000.0)
    crashed = idempotency(store, clock, boot="boot-crashed", leases=keeper(store, clock, "boot-crashed", pid=7))
    await crashed.leases.renew()
    await crashed.reserve(SLOT, "run_1", {}, replace_expired=False)
    here = idempotency(
        store, clock, boot="boot-new", leases=keeper(store, clock, "boot-new", pid=8, running=frozenset({8}))
    )
    elsewhere = idempotency(
        store, clock, boot="boot-far", leases=keeper(store, clock, "boot-far", space="space-2", running=frozenset())
    )
    assert (await elsewhere.decide(SLOT, dead)).verdict == "attach"
    decision = await here.decide(SLOT, dead)
    assert (decision.verdict, decision.gone) == ("unknown", True)
    assert await here.leases.gone_owners() == ["boot-crashed"]


async def test_this_processs_own_record_without_its_turn_is_unknown_but_not_gone(store: MemoryStore) -> None:
    """Row "this process without the turn": its own lease is alive, so nothing is swept; the answer is unknown."""
    clock = Clock(1000.0)
    a = idempotency(store, clock)
    await a.leases.renew()
    await a.reserve(SLOT, "run_1", {}, replace_expired=False)
    decision = await a.decide(SLOT, dead)
    assert (decision.verdict, decision.gone, decision.remote) == ("unknown", False, False)
