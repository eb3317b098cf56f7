"""The compat boundary for warm agents (issue 14): preparing a cached `AIAgent` for its conversation's next turn and
releasing one, as hermes-agent 0.19.0's own messaging gateway does with its `_agent_cache`
(`GatewayRunner._init_cached_agent_for_turn`, the per-message callback assignments, `AIAgent.release_clients`).

Part of the compat boundary (with `compat.py` and `compat_names.py`, whose `AIAGENT` declares the attributes used
here): only these modules spell hermes-agent's private names. Everything here runs in the turn's worker thread.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any


def prepare_reused_agent(agent: Any, per_turn: Mapping[str, Any]) -> None:
    """Make a cached agent this turn's: its per-turn settings and callbacks (None where this turn has none), no
    interrupt left over, and the per-turn counters the gateway resets — above all the SessionDB flush cursor, which
    left as it was would keep the new turn's messages out of state.db."""
    for name, value in per_turn.items():
        setattr(agent, name, value)
    agent.clear_interrupt()
    agent._last_activity_ts = time.time()
    agent._last_activity_desc = "starting new turn (cached)"
    agent._last_flushed_db_idx = 0
    agent._api_call_count = 0


def release_agent(agent: Any) -> None:
    """Close a cached agent's provider clients, leaving the session's terminal, browser and memory to the session (a
    later turn builds a new agent on them): the gateway's soft release."""
    agent.release_clients()
