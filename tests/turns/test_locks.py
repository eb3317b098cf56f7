"""KeyedLocks: one lock per key while it has users, shared by session queues and idempotency keys."""

from __future__ import annotations

import asyncio

from hermes_api_plugin.turns.locks import KeyedLocks


async def test_holders_of_one_key_run_one_at_a_time_and_other_keys_do_not_wait() -> None:
    locks: KeyedLocks[str] = KeyedLocks()
    order: list[str] = []
    release = asyncio.Event()

    async def hold(key: str, name: str) -> None:
        async with locks.hold(key):
            order.append(f"{name} in")
            if name == "a1":
                await release.wait()
            order.append(f"{name} out")

    first = asyncio.create_task(hold("a", "a1"))
    await asyncio.sleep(0)
    second = asyncio.create_task(hold("a", "a2"))
    other = asyncio.create_task(hold("b", "b1"))
    await other
    assert locks.users("a") == 2 and order == ["a1 in", "b1 in", "b1 out"]
    release.set()
    await asyncio.gather(first, second)
    assert order[3:] == ["a1 out", "a2 in", "a2 out"]


async def test_a_key_is_forgotten_when_its_last_user_leaves() -> None:
    locks: KeyedLocks[tuple[str, str]] = KeyedLocks()
    key = ("scope", "key")
    lock = locks.enter(key)
    assert locks.users(key) == 1 and locks.lock(key) is lock
    locks.enter(key)
    locks.leave(key)
    assert locks.users(key) == 1
    locks.leave(key)
    assert locks.users(key) == 0 and len(locks) == 0
    async with locks.hold(key):
        assert len(locks) == 1
    assert len(locks) == 0
