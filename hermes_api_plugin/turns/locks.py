"""Reference-counted asyncio locks by key: per-session turn queues and per-idempotency-key decisions.

A key's entry exists while anyone holds or waits for its lock, so the dict never grows with keys that
are done, and `users(key)` tells whether work on that key is already pending (a queued turn).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class KeyedLocks(Generic[K]):
    """One asyncio.Lock per key, created on first use and dropped when its last user leaves."""

    def __init__(self) -> None:
        self._entries: dict[K, tuple[asyncio.Lock, int]] = {}

    def enter(self, key: K) -> asyncio.Lock:
        """Register a user of `key` (before it waits for the lock); returns the key's lock."""
        lock, users = self._entries.get(key) or (asyncio.Lock(), 0)
        self._entries[key] = (lock, users + 1)
        return lock

    def leave(self, key: K) -> None:
        """Unregister a user of `key` (after it released the lock or gave up waiting)."""
        lock, users = self._entries[key]
        if users <= 1:
            del self._entries[key]
        else:
            self._entries[key] = (lock, users - 1)

    def lock(self, key: K) -> asyncio.Lock:
        """The lock of a key that has users."""
        return self._entries[key][0]

    def users(self, key: K) -> int:
        """How many registered users `key` has (holders and waiters)."""
        entry = self._entries.get(key)
        return entry[1] if entry is not None else 0

    @contextlib.asynccontextmanager
    async def hold(self, key: K) -> AsyncIterator[None]:
        """Hold the key's lock for the block."""
        lock = self.enter(key)
        try:
            async with lock:
                yield
        finally:
            self.leave(key)

    def __len__(self) -> int:
        return len(self._entries)
