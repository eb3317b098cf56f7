"""Whether the store answers, for `/health/detailed`'s readiness (issue 20: it said `ok` while PostgreSQL was down).

A store with a `ping()` (PostgreSQL: `SELECT 1` on a pooled connection) is asked at most once per `ttl` seconds,
with a short time-out, so dashboards polling health every second do not add load to the database; concurrent health
requests share the one probe in flight. A store without one (SQLite, the in-memory fallback) is a file or memory
of this process, opened at start-up: nothing to be down, so it counts as reachable.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .base import StoreError

TTL_S = 2.0  # one probe per this many seconds at most, however often health is polled
TIMEOUT_S = 1.0  # a probe that has not answered by then counts as down (the pool waits up to 5 s for a connection)

Clock = Callable[[], float]


@dataclass(frozen=True)
class StoreReach:
    """The outcome of one probe: reachable or not, and why not (an error class name, never its text)."""

    reachable: bool
    detail: str | None = None


class StoreProbe:
    """The cached readiness check of one store."""

    def __init__(
        self, store: object, *, ttl: float = TTL_S, timeout: float = TIMEOUT_S, clock: Clock = time.monotonic
    ) -> None:
        self._ping: Callable[[], Awaitable[None]] | None = getattr(store, "ping", None)
        self.ttl = ttl
        self.timeout = timeout
        self.clock = clock
        self._last: tuple[float, StoreReach] | None = None
        self._inflight: asyncio.Future[StoreReach] | None = None

    async def check(self) -> StoreReach:
        if self._ping is None:
            return StoreReach(True)
        if self._last is not None and self.clock() - self._last[0] < self.ttl:
            return self._last[1]
        if self._inflight is None:
            self._inflight = asyncio.ensure_future(self._probe())
        inflight = self._inflight
        try:
            return await asyncio.shield(inflight)
        finally:
            if inflight.done() and self._inflight is inflight:
                self._inflight = None

    async def _probe(self) -> StoreReach:
        assert self._ping is not None
        try:
            await asyncio.wait_for(self._ping(), self.timeout)
            reach = StoreReach(True)
        except (StoreError, TimeoutError) as exc:
            reach = StoreReach(False, type(exc).__name__)
        self._last = (self.clock(), reach)
        return reach
