"""The Hermes-parity features of `/v1/capabilities` (WIRE §14, W-14.5), in one table.

Names follow hermes-agent 0.19.0's `_handle_capabilities` where it has one, then §14's own. Each feature is true
only when this app serves it on this host: every named route it needs is served (`served` already leaves out the
host-data routes of a host without that data, see `documented_routes`), and, for the host's own data, the host
provides it. A new parity route turns its feature on by being registered under the name listed here.
"""

from __future__ import annotations

from collections.abc import Collection

_JOBS = ("jobs", "job_create", "job", "job_update", "job_delete", "job_pause", "job_resume", "job_run")

# feature → the named routes it needs (all of them)
ROUTE_FEATURES: dict[str, tuple[str, ...]] = {
    "session_fork": ("session_fork",),
    "skills_api": ("skills",),
    "toolsets_api": ("toolsets",),
    "jobs_admin": _JOBS,
    "platform_events": ("platform_events",),
    "cron_fire": ("cron_fire",),
    "responses_websocket": ("responses_socket",),  # WIRE.md §16
    "metrics": ("metrics",),  # GET /metrics (issue 24): off with api_server.metrics.enabled: false
}

# Served by no route of this server (upstream advertises them `false` as well).
UNSERVED_FEATURES = ("admin_config_rw", "memory_write_api", "audio_api", "realtime_voice")


# feature → the named route it needs, true only where the host provides its data (Hermes)
HOST_FEATURES: dict[str, str] = {
    # only the hermes runtime's agent asks for approvals (§14.2): the reference gateway serves the route, and has one
    # pending only where a test script's `approval:` step asks (§15.5)
    "run_approval_response": "run_approval",
    "approval_events": "run_approval",
    "model_inventory": "model_options",  # Hermes' own inventory, not the configured list
    "health_detailed_host": "health_detailed",  # Hermes' gateway state and readiness
}


def parity_features(served: Collection[str], *, host: bool, host_sessions: bool, profiles: bool) -> dict[str, bool]:
    """`served`: the documented route names; `host`: the runtime has the host's own data (Hermes);
    `host_sessions`: `/api/sessions` reads and writes the host's session store (§14.1); `profiles`: the host
    multiplexes its profiles, each served under `/p/{profile}/…` (§14.3)."""
    features = {name: all(route in served for route in routes) for name, routes in ROUTE_FEATURES.items()}
    features.update({name: host and route in served for name, route in HOST_FEATURES.items()})
    features["hermes_sessions"] = host and host_sessions and "sessions" in served
    features["profile_multiplex"] = profiles
    features.update({name: False for name in UNSERVED_FEATURES})
    return features
