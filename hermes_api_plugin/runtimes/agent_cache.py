"""AgentCache: warm agents, one per conversation, reused across its turns (issue 14).

Building a Hermes `AIAgent` costs about 0.12 s of CPU and, worse, a fresh agent rebuilds its system prompt, so a
provider's prompt cache misses on every turn. Hermes' own messaging gateway keeps one agent per session
(`gateway/run.py`: `_agent_cache`, `_agent_config_signature`, an LRU cap, an idle TTL); this is the same idea for
the API, generic over the agent type and free of hermes-agent (the runtime supplies the agent, its signature and
how to release one).

An entry's life, per conversation key:

| state  | event                                   | next   | what happens                                        |
|--------|-----------------------------------------|--------|-----------------------------------------------------|
| absent | `checkout`                              | absent | miss: the caller builds a fresh agent               |
| absent | `checkin(reusable)`                     | idle   | kept, most recently used                            |
| idle   | `checkout`, same signature              | leased | hit: the turn runs on the warm agent                |
| idle   | `checkout`, other signature             | absent | the old agent is released; miss                     |
| leased | `checkout`                              | leased | miss: a concurrent turn never shares the agent; the |
|        |                                         |        | agent it builds is released at its checkin          |
| leased | `checkin(reusable)` by the leaseholder  | idle   | kept, most recently used                            |
| leased | `checkin(not reusable)`, `drop` before  | absent | released (an interrupted, failed or dropped turn's  |
|        |                                         |        | agent is never reused)                              |
| idle   | `drop`, idle for `idle_seconds`, or the | absent | released                                            |
|        | least recently used over `max_cached`   |        |                                                     |

Idle and cap evictions happen on the next `checkout`/`checkin`/`sweep`, never from a timer: no loop polls. Releasing
an agent (closing its HTTP clients) runs outside the lock. Thread-safe: turns check agents out and in from their
worker threads.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

A = TypeVar("A")


@dataclass
class _Entry(Generic[A]):
    agent: A
    signature: str
    last_used: float
    leased: bool = False
    dropped: bool = False  # dropped while leased: released at checkin instead of kept


@dataclass(frozen=True)
class CacheStats:
    """What `/health/detailed` and the benchmarks report."""

    cached: int  # agents held, leased or idle
    leased: int  # of them, running a turn now
    hits: int
    misses: int
    evictions: int  # released for idleness, the cap, a new signature or a drop


class AgentCache(Generic[A]):
    """Warm agents by conversation key (hashable), each with the signature of the configuration it was built with."""

    def __init__(
        self,
        max_cached: int,
        idle_seconds: float,
        release: Callable[[A], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_cached = max_cached
        self.idle_seconds = idle_seconds
        self._release = release
        self._clock = clock
        self._entries: OrderedDict[Hashable, _Entry[A]] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()
        self._hits = self._misses = self._evictions = 0

    def checkout(self, key: Hashable, signature: str) -> A | None:
        """The conversation's warm agent, leased to this turn; None: build a fresh one."""
        released: list[A] = []
        with self._lock:
            now = self._clock()
            self._expire(now, released)
            entry = self._entries.get(key)
            agent: A | None = None
            if entry is not None and not entry.leased:
                if entry.signature == signature:
                    entry.leased = True
                    entry.last_used = now
                    self._entries.move_to_end(key)
                    agent = entry.agent
                else:
                    del self._entries[key]
                    released.append(entry.agent)
            if agent is None:
                self._misses += 1
            else:
                self._hits += 1
            self._evictions += len(released)
        self._release_all(released)
        return agent

    def checkin(self, key: Hashable, signature: str, agent: A, reusable: bool) -> None:
        """The turn on `agent` ended: keep it for the conversation's next turn when `reusable` and nothing newer holds
        the key; else release it."""
        released: list[A] = []
        with self._lock:
            now = self._clock()
            entry = self._entries.get(key)
            if entry is not None and entry.agent is agent:  # the leaseholder comes back
                del self._entries[key]
                keep = reusable and not entry.dropped and entry.signature == signature
            else:  # a miss built it: kept only where no other agent holds the key
                keep = reusable and entry is None
            if keep:
                self._entries[key] = _Entry(agent, signature, now)
            self._expire(now, released)
            self._evict_over_cap(released)
            self._evictions += len(released)
            if not keep:
                released.append(agent)  # never cached: not an eviction
        self._release_all(released)

    def drop(self, matches: Callable[[Hashable], bool]) -> int:
        """Forget the agents of every key `matches` (a deleted session): idle ones are released now, leased ones when
        their turn ends. Returns how many were forgotten."""
        released: list[A] = []
        with self._lock:
            keys = [key for key in self._entries if matches(key)]
            for key in keys:
                entry = self._entries[key]
                if entry.leased:
                    entry.dropped = True
                else:
                    del self._entries[key]
                    released.append(entry.agent)
            self._evictions += len(released)
        self._release_all(released)
        return len(keys)

    def sweep(self) -> None:
        """Release what idled too long (also done on every checkout and checkin)."""
        released: list[A] = []
        with self._lock:
            self._expire(self._clock(), released)
            self._evictions += len(released)
        self._release_all(released)

    def clear(self) -> None:
        """Release every idle agent and forget the leased ones (shutdown: their turns are being drained)."""
        self.drop(lambda _key: True)

    def stats(self) -> CacheStats:
        with self._lock:
            leased = sum(1 for entry in self._entries.values() if entry.leased)
            return CacheStats(len(self._entries), leased, self._hits, self._misses, self._evictions)

    # -- with the lock held ----------------------------------------------------------------------------------
    def _expire(self, now: float, released: list[A]) -> None:
        # Entries are in last-used order (a checkout moves its entry to the end, a checkin re-adds it there): the
        # walk stops at the first one still fresh.
        cutoff = now - self.idle_seconds
        expired = []
        for key, entry in self._entries.items():
            if entry.last_used > cutoff:
                break
            if not entry.leased:
                expired.append(key)
        for key in expired:
            released.append(self._entries.pop(key).agent)

    def _evict_over_cap(self, released: list[A]) -> None:
        excess = len(self._entries) - self.max_cached
        for key in [k for k, e in self._entries.items() if not e.leased][: max(excess, 0)]:
            released.append(self._entries.pop(key).agent)

    # -- without it ------------------------------------------------------------------------------------------
    def _release_all(self, agents: list[A]) -> None:
        for agent in agents:
            try:
                self._release(agent)
            except Exception:  # a failed release must not fail the turn that triggered it
                pass
