"""The plugin: `@hookimpl` glue between the gateway lifecycle and the API application. Nothing else."""

from __future__ import annotations

from typing import Any

from .app import create_app, shutdown_apps
from .config_migration import migrate_config
from .hookspecs import Gateway, hookimpl
from .keys import TURNS
from .runtimes.base import AgentTurn, TurnOutcome
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


@hookimpl
def hermes_api_agent_turn_start(turn: AgentTurn) -> None:
    sink, request = turn.sink, turn.request
    if request.reasoning_enabled:  # opt-out per request: no callback, nothing reasoning-related anywhere
        turn.reasoning_callback = sink.on_reasoning
    turn.stream_delta_callback = sink.on_text
    turn.tool_start_callback = sink.on_tool_start
    turn.tool_complete_callback = sink.on_tool_complete
    if request.commentary_enabled:
        turn.interim_assistant_callback = sink.on_commentary
    turn.compaction_callback = sink.on_compaction
    turn.approval_callback = sink.on_approval_request


@hookimpl
def hermes_api_agent_turn_end(turn: AgentTurn, outcome: TurnOutcome) -> None:
    turn.sink.close()
