"""Settled turns kept readable in memory: runs read them for an hour after they settle (WIRE.md §6.2), within a bound
on their count and on their estimated bytes, oldest out first (issue 20, defect 2).

A settled turn evicted early is only gone from memory: a run the store keeps (keyed, or any run on a shared store)
still answers from there.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

RECENT_S = 3600.0  # settled runs stay readable in memory this long (WIRE.md §6.2)
RECENT_MAX = 10_000  # api_server.turns.max_recent: settled turns kept in memory at most
RECENT_MAX_BYTES = 64 * 1024 * 1024  # api_server.turns.max_recent_bytes: their estimated bytes at most

T = TypeVar("T")


class RecentTurns(Generic[T]):
    """Settled turns by run id, oldest first, bounded by age (`RECENT_S` on `clock`), count and estimated bytes."""

    def __init__(
        self,
        max_count: int = RECENT_MAX,
        max_bytes: int = RECENT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._clock = clock
        self._kept: OrderedDict[str, tuple[T, float, int]] = OrderedDict()  # run id → (turn, settled at, bytes)
        self._bytes = 0

    def keep(self, run_id: str, turn: T, size: int) -> None:
        """Keep a turn that settled now, `size` its estimated bytes (one over the byte bound alone is not kept)."""
        self._kept[run_id] = (turn, self._clock(), size)
        self._bytes += size
        self._prune()

    def get(self, run_id: str) -> T | None:
        self._prune()
        entry = self._kept.get(run_id)
        return entry[0] if entry is not None else None

    def usage(self) -> tuple[int, int]:
        """(turns kept, their estimated bytes)."""
        self._prune()
        return len(self._kept), self._bytes

    def _prune(self) -> None:
        """Drop turns older than RECENT_S, then the oldest while over the count or byte bound."""
        horizon = self._clock() - RECENT_S
        while self._kept:
            _, (_, settled_at, size) = next(iter(self._kept.items()))
            if settled_at >= horizon and len(self._kept) <= self.max_count and self._bytes <= self.max_bytes:
                return
            self._kept.popitem(last=False)
            self._bytes -= size
