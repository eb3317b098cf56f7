"""Shared pieces of the turn tests: a registry over the scripted runtime and an in-memory session store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pluggy

from hermes_api_plugin import hookspecs
from hermes_api_plugin.core.content import Message, TextPart
from hermes_api_plugin.core.events import (
    ToolStarted,
)
from hermes_api_plugin.runtimes.base import TurnHooks, TurnRequest
from hermes_api_plugin.runtimes.scripted import ScriptedRuntime, load_script
from hermes_api_plugin.store import MemoryStore, SessionStore
from hermes_api_plugin.turns import HeldTurn, Turn, TurnRegistry
from hermes_api_plugin.turns.transcripts import session_transcripts
from tests.helpers import wait_for_async

SCRIPT = Path(__file__).parents[1] / "scripts" / "chat.yaml"


async def tool_started(turn: Turn) -> None:
    """Wait until the turn's tool runs (its journal has the ToolStarted event)."""
    await wait_for_async(lambda: any(isinstance(e, ToolStarted) for e in turn.journal.events), what="the tool start")


def gateway_hooks(*plugins: object) -> TurnHooks:
    """The turn hooks as a gateway relays them: a real pluggy manager with the contract's specs, this plugin and
    `plugins` (others, e.g. turn observers)."""
    from hermes_api_plugin import plugin

    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs.GatewaySpec)
    for each in (plugin, *plugins):
        pm.register(each)
    hooks: TurnHooks = pm.hook
    return hooks


def request(text: str, session: str = "s1", run: str = "run_1") -> TurnRequest:
    return TurnRequest(turn_id=run, session_id=session, input=Message("user", (TextPart(text),)))


async def open_store() -> SessionStore:
    """The session store the registry writes transcripts to (over an in-memory database)."""
    store = MemoryStore()
    await store.open()
    return store.sessions


async def registry(max_concurrent: int = 10, store: Any = None) -> TurnRegistry:
    runtime = ScriptedRuntime(load_script(SCRIPT))
    return TurnRegistry(
        runtime, session_transcripts(store or await open_store()), gateway_hooks(), max_concurrent=max_concurrent
    )


def started(held: HeldTurn) -> Turn:
    """A turn let run at once, as a surface does once its head is out."""
    held.start()
    return held.turn
