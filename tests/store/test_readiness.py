"""readiness.py (issue 20): `/health/detailed`'s store check asks the store at most once per ttl, with a time-out,
and concurrent checks share one probe; a store without `ping` (SQLite) is reachable. The real database stopped and
started: tests/store/postgres/test_outage.py::test_issue_20_readiness_reflects_a_stopped_database."""

from __future__ import annotations

import asyncio

from aiohttp.test_utils import TestClient

from hermes_api_plugin.store import SqliteStore
from hermes_api_plugin.store.base import StoreUnavailable
from hermes_api_plugin.store.readiness import StoreProbe
from tests.helpers import fetch


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class CountingStore:
    """A store's `ping` as the probe sees it: counted, failing or hanging on demand."""

    def __init__(self) -> None:
        self.pings = 0
        self.failing = False
        self.hanging = False

    async def ping(self) -> None:
        self.pings += 1
        await asyncio.sleep(0.05)
        if self.hanging:
            await asyncio.sleep(60)
        if self.failing:
            raise StoreUnavailable("down")


async def test_issue_20_the_probe_is_cached_shared_and_timed_out() -> None:
    store, clock = CountingStore(), Clock()
    probe = StoreProbe(store, ttl=2.0, timeout=0.2, clock=clock)
    results = await asyncio.gather(*(probe.check() for _ in range(20)))
    assert all(r.reachable for r in results) and store.pings == 1  # one probe for twenty health requests
    store.failing = True
    clock.now += 1.9
    assert (await probe.check()).reachable and store.pings == 1  # still cached
    clock.now += 0.2
    down = await probe.check()
    assert not down.reachable and down.detail == "StoreUnavailable" and store.pings == 2
    store.failing, store.hanging = False, True
    clock.now += 2.1
    hung = await asyncio.wait_for(probe.check(), 2)
    assert not hung.reachable and hung.detail == "TimeoutError"


async def test_issue_20_a_sqlite_store_is_reachable_without_a_probe() -> None:
    assert (await StoreProbe(SqliteStore(":memory:")).check()).reachable


async def test_issue_20_health_detailed_reports_the_store_reachable(api: TestClient, auth: dict[str, str]) -> None:
    body = (await fetch(api, "GET", "/health/detailed", headers=auth)).json()
    assert body["readiness"]["checks"]["store"]["status"] == "ok"
    assert body["api_server"]["store"]["reachable"] is True
