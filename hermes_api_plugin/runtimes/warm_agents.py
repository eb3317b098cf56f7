"""WarmAgents: which `AIAgent` a Hermes turn runs on — its conversation's warm one, or a fresh one (issue 14).

The conversation is the turn's session in its profile (`(profile_home, session_id)`): every surface that runs turns
in a session — session chat, `X-Hermes-Session-Id`, `conversation`, `previous_response_id` conversations,
`X-Hermes-Session-Key`, a stateless chat continued — reaches the same agent. The signature is everything the agent
was built with except what changes per turn (callbacks, reasoning config, service tier, iteration budget, which
the gateway's cache also sets on each reuse): another model, provider, key, toolsets, system prompt, session key or
fallback chain builds a new agent, as Hermes' `_agent_config_signature` does. A turn that did not complete — stopped,
interrupted, disconnected, drained, failed — gives its agent back to nobody: the next turn starts fresh, exactly as
it would have without the cache. Hermes may continue a compacted session under a new id during a turn; such an
agent belongs to the new id and is not kept under the old one.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..hermes import compat
from .agent_cache import AgentCache, CacheStats
from .base import TurnRequest

# Set on a warm agent before each turn, as the gateway sets them on its cached agents; never part of the signature.
PER_TURN = (
    "max_iterations",
    "reasoning_config",
    "service_tier",
    "reasoning_callback",
    "stream_delta_callback",
    "tool_start_callback",
    "tool_complete_callback",
    "interim_assistant_callback",
    "event_callback",
    "clarify_callback",
)
_NOT_IDENTITY = frozenset((*PER_TURN, "session_db"))  # one SessionDB per profile: the key already says which

Key = tuple[Path | None, str]


def agent_signature(kwargs: Mapping[str, Any]) -> str:
    """What an agent was built with, but the per-turn settings: equal signatures may share an agent. The provider
    key enters as its hash (never kept in clear beside the agent)."""
    identity = {name: value for name, value in kwargs.items() if name not in _NOT_IDENTITY}
    api_key = identity.pop("api_key", None)
    identity["api_key"] = hashlib.sha256(str(api_key).encode()).hexdigest() if api_key else ""
    blob = json.dumps(identity, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Lease:
    """One turn's hold on an agent."""

    key: Key
    signature: str
    agent: Any
    warm: bool  # a reused agent (else built for this turn)


class WarmAgents:
    """The hermes runtime's agents by conversation; `max_cached == 0` keeps none (every turn builds its own)."""

    def __init__(self, max_cached: int, idle_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._cache: AgentCache[Any] | None = None
        if max_cached > 0:
            self._cache = AgentCache(max_cached, idle_seconds, compat.agent.release_agent, clock)

    def acquire(self, request: TurnRequest, kwargs: Mapping[str, Any], build: Callable[[], Any]) -> Lease:
        """The turn's agent: its conversation's warm one, prepared for this turn, or `build()`."""
        key: Key = (request.profile_home, request.session_id)
        signature = agent_signature(kwargs)
        agent = self._cache.checkout(key, signature) if self._cache is not None else None
        if agent is None:
            return Lease(key, signature, build(), warm=False)
        compat.agent.prepare_reused_agent(agent, {name: kwargs.get(name) for name in PER_TURN})
        return Lease(key, signature, agent, warm=True)

    def release(self, lease: Lease, *, completed: bool) -> None:
        """The turn ended: a completed turn's agent waits for the conversation's next one."""
        if self._cache is None:
            return
        still_its_session = getattr(lease.agent, "session_id", None) == lease.key[1]
        self._cache.checkin(lease.key, lease.signature, lease.agent, reusable=completed and still_its_session)

    def forget(self, session_id: str, profile_home: Path | None) -> None:
        """The session is gone: so is its agent (now, or when its running turn ends)."""
        if self._cache is not None:
            self._cache.drop(lambda key: key == (profile_home, session_id))

    def stats(self) -> CacheStats | None:
        return None if self._cache is None else self._cache.stats()

    def clear(self) -> None:
        if self._cache is not None:
            self._cache.clear()
