"""The plugin: `@hookimpl` glue between the gateway lifecycle and the API application. Nothing else.

It implements no turn hook: the registry attaches each turn's callback sink itself (runtimes/base.py), and the
turn hooks are left to other plugins that observe turns.
"""

from __future__ import annotations

from typing import Any

from .config.migration import migrate_config
from .hookspecs import Gateway, hookimpl
from .http.app import create_app, shutdown_apps
from .http.app_keys import TURNS
from .store.factory import build_store


@hookimpl
def hermes_api_gateway_startup(gateway: Gateway) -> None:
    settings = gateway.settings
    migrate_config(settings.config_file)
    store = build_store(settings)  # PostgreSQL with api_server.store.url, else SQLite
    # With the hermes runtime the sessions are Hermes' own (SessionDB, WIRE §14.1); else the plugin's tables.
    sessions = gateway.runtime.session_store()
    gateway.mount(create_app(settings, gateway.runtime, store, gateway.hooks, session_store=sessions))


@hookimpl
def hermes_api_gateway_shutdown(gateway: Gateway) -> Any:
    ours = [app for app in gateway.apps if TURNS in app]
    return shutdown_apps(ours) if ours else None
