"""Store contract for the wait keys of suspended turns (WIRE.md §15.1, W-15.4; cluster/waits.py): on a store several
gateways share (PostgreSQL) a running run is found by any of its keys, in its own scope only, with every key it waits
by; an answer drops them, its settlement too. A store of one gateway (SQLite, memory) keeps none: its turns are always
found in the registry of the one process that runs them.

Runs once per backend of the `open_backend` fixture (tests/store/conftest.py).
"""

from __future__ import annotations

from hermes_api_plugin.store.base import RunRecord

from .conftest import Backend
from .support import NOW, OTHER, SCOPE


def run(turn_id: str, scope: str = SCOPE) -> RunRecord:
    return RunRecord(turn_id, scope, "boot-a", "chat", "sess", None, "running", NOW - 5)


async def test_a_running_run_is_found_by_any_of_its_keys_with_all_of_them(backend: Backend) -> None:
    store = backend.store
    await store.put_run(run("run_1"))
    await store.put_run(run("run_2"))
    await store.put_wait_keys("run_1", SCOPE, ["session:s1", "call:c1"])
    await store.put_wait_keys("run_1", SCOPE, ["call:c1"])  # published again: kept once
    await store.put_wait_keys("run_2", SCOPE, ["session:s2"])
    found = await store.waiting_runs(SCOPE, ["call:c1", "call:unknown"])
    if store.feed() is None:  # one gateway's store: nothing is kept, nothing is found
        assert found == []
        return
    assert sorted(key for key, _ in found) == ["call:c1", "session:s1"]
    assert {r.turn_id for _, r in found} == {"run_1"} and found[0][1] == run("run_1")
    assert await store.waiting_runs(OTHER, ["call:c1"]) == []  # another credential scope finds nothing
    assert await store.waiting_runs(SCOPE, []) == []


async def test_an_answer_and_the_settlement_drop_the_keys(backend: Backend) -> None:
    store = backend.store
    await store.put_run(run("run_1"))
    await store.put_run(run("run_2"))
    await store.put_wait_keys("run_1", SCOPE, ["session:s1"])
    await store.put_wait_keys("run_2", SCOPE, ["session:s2"])
    await store.drop_wait_keys("run_1")
    assert await store.waiting_runs(SCOPE, ["session:s1"]) == []
    await store.settle_run("run_2", "completed", NOW)
    assert await store.waiting_runs(SCOPE, ["session:s2"]) == []
    await store.put_wait_keys("run_2", SCOPE, ["session:s2"])  # a late publish: a settled run waits for nothing
    assert await store.waiting_runs(SCOPE, ["session:s2"]) == []
    await store.purge_runs(NOW + 1)  # and its keys go with the settled runs' leftovers
    assert await store.waiting_runs(SCOPE, ["session:s2"]) == []
