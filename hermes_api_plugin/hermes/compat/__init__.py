"""Compatibility with hermes-agent (0.19): the only package that touches hermes-agent's internals (and, in
`request_bodies`, those of the openai SDK it sends its provider calls with).

It owns every hermes-agent name the plugin uses — the private helpers of `hermes gateway` (such as
`gateway.run._resolve_runtime_agent_kwargs`) and the classes the runtime and the bridge build on (`run_agent.AIAgent`,
`gateway.platforms.base.BasePlatformAdapter`, …). `_core.py` says what a declaration is (`HermesName`) and how an
optional name falls back; each feature module declares its own names as data (its `NAMES`) next to the functions
that call them, and imports only `_core` and the modules below it in this list:

- `home` — `$HERMES_HOME` and config.yaml as Hermes resolves them;
- `agent` — `AIAgent`, what `hermes gateway` builds one with, running a turn, warm agents;
- `compression` — Hermes' context compressor as the summariser of POST /v1/responses/compact;
- `sessions` — Hermes' SessionDB and a turn's session context;
- `approvals` — dangerous-command approvals (and how long one turn's wait);
- `client_tools` — the function tools a client lends an agent for one turn;
- `profiles` — profile multiplexing (`home`);
- `cron` — cron jobs, the scheduler and the fire webhook (`home`);
- `tls` — provider TLS contexts shared per CA bundle;
- `config_copies` — the copy of the cached config that `load_config()` hands out, made plainly;
- `request_bodies` — the openai SDK's transform of chat completion bodies, skipped for plain data;
- `catalog` — skills, toolsets and the model inventory (`agent`, `home`);
- `gateway` — the gateway runner, its platform adapters and health (`agent`).

This module collects the declarations (`HERMES_NAMES`) for tests/hermes/test_compat.py, which checks them against
the installed hermes-agent; tests/test_hermes_compat_boundary.py checks that no module outside this folder spells a
private hermes-agent name. Importers call the feature modules through the package (`compat.agent.agent_class()`).

Nothing here imports hermes-agent at module level: importing `run_agent` takes seconds, loads `$HERMES_HOME/.env`
and creates files under `$HERMES_HOME`, so the callers reach it from worker threads.
"""

from __future__ import annotations

from . import (
    agent,
    approvals,
    catalog,
    client_tools,
    compression,
    config_copies,
    cron,
    gateway,
    home,
    profiles,
    request_bodies,
    sessions,
    tls,
)
from ._core import API_SERVER, HERMES_TOP_LEVEL_MODULES, HermesName

HERMES_NAMES: tuple[HermesName, ...] = (
    *agent.NAMES,
    *compression.NAMES,
    *sessions.NAMES,
    *approvals.NAMES,
    *client_tools.NAMES,
    *home.NAMES,
    *gateway.NAMES,
    *catalog.NAMES,
    *cron.NAMES,
    *profiles.NAMES,
    *tls.NAMES,
    *config_copies.NAMES,
    *request_bodies.NAMES,
)

__all__ = [
    "API_SERVER",
    "HERMES_NAMES",
    "HERMES_TOP_LEVEL_MODULES",
    "HermesName",
    "agent",
    "approvals",
    "catalog",
    "client_tools",
    "compression",
    "config_copies",
    "cron",
    "gateway",
    "home",
    "profiles",
    "request_bodies",
    "sessions",
    "tls",
]
