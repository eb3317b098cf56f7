"""runtimes/agent_cache.py: the state table of its docstring, row by row, with an injected clock (no sleeps)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from hermes_api_plugin.runtimes.agent_cache import AgentCache, CacheStats


@dataclass(eq=False)
class Agent:
    name: str


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Harness:
    clock: Clock = field(default_factory=Clock)
    released: list[str] = field(default_factory=list)

    def cache(self, max_cached: int = 4, idle_seconds: float = 60.0) -> AgentCache[Agent]:
        return AgentCache(max_cached, idle_seconds, lambda agent: self.released.append(agent.name), self.clock)


def test_a_miss_then_the_checked_in_agent_is_the_next_turns() -> None:
    h = Harness()
    cache = h.cache()
    assert cache.checkout("c1", "sig") is None
    first = Agent("first")
    cache.checkin("c1", "sig", first, reusable=True)
    assert cache.checkout("c1", "sig") is first
    cache.checkin("c1", "sig", first, reusable=True)
    assert cache.checkout("c1", "sig") is first
    assert cache.stats() == CacheStats(cached=1, leased=1, hits=2, misses=1, evictions=0)
    assert h.released == []


def test_a_new_signature_releases_the_old_agent() -> None:
    h = Harness()
    cache = h.cache()
    cache.checkin("c1", "old", Agent("old"), reusable=True)
    assert cache.checkout("c1", "new") is None
    assert h.released == ["old"]
    cache.checkin("c1", "new", Agent("new"), reusable=True)
    assert cache.checkout("c1", "new") is not None and cache.stats().evictions == 1


def test_a_leased_agent_is_never_shared_and_the_concurrent_turns_agent_is_released() -> None:
    h = Harness()
    cache = h.cache()
    warm = Agent("warm")
    cache.checkin("c1", "sig", warm, reusable=True)
    assert cache.checkout("c1", "sig") is warm
    assert cache.checkout("c1", "sig") is None, "a second turn of the conversation builds its own"
    cache.checkin("c1", "sig", Agent("second"), reusable=True)
    assert h.released == ["second"], "the concurrent turn's agent is not cached over the leased one"
    cache.checkin("c1", "sig", warm, reusable=True)
    assert cache.checkout("c1", "sig") is warm


def test_an_agent_whose_turn_did_not_end_well_is_never_reused() -> None:
    h = Harness()
    cache = h.cache()
    warm = Agent("warm")
    cache.checkin("c1", "sig", warm, reusable=True)
    assert cache.checkout("c1", "sig") is warm
    cache.checkin("c1", "sig", warm, reusable=False)  # interrupted, failed, cancelled
    assert h.released == ["warm"]
    assert cache.checkout("c1", "sig") is None


def test_idle_agents_expire_on_the_next_use_of_the_cache() -> None:
    h = Harness()
    cache = h.cache(idle_seconds=60)
    cache.checkin("old", "sig", Agent("old"), reusable=True)
    h.clock.now += 30
    cache.checkin("young", "sig", Agent("young"), reusable=True)
    h.clock.now += 31  # old idled 61 s, young 31 s
    assert cache.checkout("other", "sig") is None
    assert h.released == ["old"]
    assert cache.checkout("young", "sig") is not None


def test_a_leased_agent_does_not_expire_however_long_its_turn_runs() -> None:
    h = Harness()
    cache = h.cache(idle_seconds=60)
    long_turn = Agent("long")
    cache.checkin("c1", "sig", long_turn, reusable=True)
    assert cache.checkout("c1", "sig") is long_turn
    h.clock.now += 3600
    cache.sweep()
    assert h.released == []
    cache.checkin("c1", "sig", long_turn, reusable=True)
    assert cache.checkout("c1", "sig") is long_turn, "its idle time starts when its turn ends"


def test_the_least_recently_used_idle_agents_go_over_the_cap() -> None:
    h = Harness()
    cache = h.cache(max_cached=2)
    for name in ("a", "b"):
        cache.checkin(name, "sig", Agent(name), reusable=True)
        h.clock.now += 1
    assert cache.checkout("a", "sig") is not None  # a is leased and now the most recent
    cache.checkin("c", "sig", Agent("c"), reusable=True)
    assert h.released == ["b"]
    assert cache.stats().cached == 2


def test_dropping_a_conversation_releases_its_idle_agent_now_and_its_leased_one_at_checkin() -> None:
    h = Harness()
    cache = h.cache()
    cache.checkin(("p", "s1"), "sig", Agent("idle"), reusable=True)
    busy = Agent("busy")
    cache.checkin(("p", "s2"), "sig", busy, reusable=True)
    assert cache.checkout(("p", "s2"), "sig") is busy
    assert cache.drop(lambda key: key in (("p", "s1"), ("p", "s2"))) == 2
    assert h.released == ["idle"]
    cache.checkin(("p", "s2"), "sig", busy, reusable=True)
    assert h.released == ["idle", "busy"]
    assert cache.checkout(("p", "s2"), "sig") is None


def test_a_release_that_raises_does_not_escape() -> None:
    def fail(agent: Agent) -> None:
        raise RuntimeError("socket already closed")

    cache: AgentCache[Agent] = AgentCache(1, 60, fail)
    cache.checkin("a", "sig", Agent("a"), reusable=True)
    cache.checkin("b", "sig", Agent("b"), reusable=True)  # evicts a; its release raises
    assert cache.stats().cached == 1


def test_concurrent_checkouts_of_one_conversation_lease_it_once() -> None:
    h = Harness()
    cache = h.cache()
    cache.checkin("c1", "sig", Agent("warm"), reusable=True)
    got: list[Agent | None] = []
    start = threading.Barrier(8)

    def turn() -> None:
        start.wait()
        got.append(cache.checkout("c1", "sig"))

    threads = [threading.Thread(target=turn) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(agent is not None for agent in got) == 1
