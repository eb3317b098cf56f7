"""Health: the public liveness answer (WIRE.md §1.9) and the authenticated `GET /health/detailed` (§14.3).

`/health/detailed` keeps the top-level shape of hermes-agent 0.19.0's route of the same name (status, readiness,
platform, version, gateway_state, platforms, active_agents, gateway_busy, gateway_drainable, exit_reason,
updated_at, pid) so a dashboard written for Hermes' built-in server reads it unchanged, and adds this server's own
numbers under `api_server`: the turns in the registry, the slots they hold against the concurrency cap, the
streaming replies still open, and the store — whose check asks the database (readiness.py: `SELECT 1`, cached 2 s),
so readiness is not `ok` while it is down. With a host that has its own data (Hermes) the top-level keys are
Hermes' — its runtime status file, its readiness probes, its version — as the built-in server reports them; this
server's store check joins Hermes' checks and the plugin's version is `api_server.version`. Like upstream it reports
status and counts only — never configuration values, paths or credentials — and it needs the API key (the auth
middleware sees to that).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from aiohttp import web

from .. import __version__
from ..http.app_keys import RUNTIME, STORE, STREAM_GAUGE, TURNS
from ..runtimes.host_data import HostData
from ..store.readiness import StoreProbe
from .replies import json_response

STORE_PROBE = web.AppKey("store_probe", StoreProbe)

log = logging.getLogger("hermes_api_plugin")

PLATFORM = "hermes-agent"


async def health(request: web.Request) -> web.Response:
    return json_response({"status": "ok", "platform": PLATFORM, "version": __version__})


def _check(status: str, **extra: Any) -> dict[str, Any]:
    return {"status": status, **extra}


async def health_detailed(request: web.Request) -> web.Response:
    app = request.app
    turns = app[TURNS]
    counts = turns.counts()
    store = app[STORE]
    state = "draining" if turns.draining else "running"
    reach = await app[STORE_PROBE].check()  # a database that does not answer is not ready (issue 20)
    checks = {
        # The in-memory store answers, but keyed retries and stored Responses would not survive a restart.
        "store": (
            _check("ok" if store.durable else "degraded", kind=store.kind)
            if reach.reachable
            else _check("unavailable", kind=store.kind, detail=reach.detail)
        ),
        "gateway": _check("ok", state=state),
        "background_queues": _check("ok", active_api_runs=counts.admitted),
    }
    body: dict[str, Any] = {
        "platform": PLATFORM,
        "version": __version__,
        "gateway_state": state,
        "platforms": {},
        "active_agents": counts.running,
        "gateway_busy": state == "running" and counts.running > 0,
        "gateway_drainable": state == "running",
        "exit_reason": None,
        "updated_at": None,
    }
    host = app[RUNTIME].host_data
    if host is not None:
        hermes = await _host_health(host, counts.admitted)
        # Hermes' probes (state.db, config, model, disk, its gateway) with this server's store check beside them.
        checks = {**hermes.pop("readiness", {}).get("checks", {}), "store": checks["store"]}
        body.update(hermes)
        if body["gateway_state"] is None:  # no runtime status file yet: this server's own state
            body["gateway_state"] = state
    status = "ok" if all(check.get("status") == "ok" for check in checks.values()) else "degraded"
    body = {"status": status, "readiness": {"status": status, "checks": checks}, **body, "pid": os.getpid()}
    body["api_server"] = {
        "version": __version__,
        # `waiting`: of the running, those waiting for their client (WIRE.md §15.1); they hold no slot
        "turns": {"running": counts.running, "queued": counts.queued, "waiting": counts.waiting},
        "slots": {
            "admitted": counts.admitted,
            "held": counts.admitted - counts.waiting,
            "max_concurrent_runs": turns.max_concurrent,
            "max_suspended": turns.max_waiting,
        },
        "streams": {"open": app[STREAM_GAUGE].open, "buffered_bytes": app[STREAM_GAUGE].buffered_bytes()},
        "store": {"kind": store.kind, "durable": store.durable, "reachable": reach.reachable},
        "agents": app[RUNTIME].warm_agents(),
    }
    return json_response(body)


async def _host_health(host: HostData, active_api_runs: int) -> dict[str, Any]:
    """The host's part; a failure to read it is a degraded `host` check, never a failed health answer."""
    try:
        return await host.health(active_api_runs=active_api_runs)
    except Exception as exc:
        log.warning("[API Server] reading Hermes' gateway health failed: %s", type(exc).__name__, exc_info=True)
        return {"readiness": {"checks": {"host": _check("degraded", detail=type(exc).__name__)}}}
