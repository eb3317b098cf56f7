"""The gateway lifecycle contract (pluggy, project name `hermes_api`).

A gateway (the bundled reference gateway, or the bridge inside `hermes gateway`) builds a
`pluggy.PluginManager("hermes_api")`, adds these specs, loads plugins from the entry-point group
`hermes_api.plugins`, and calls the hooks below. Every hook is called with keyword arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    from aiohttp import web

    from .config.settings import Settings
    from .runtimes.base import AgentRuntime, AgentTurn, TurnHooks, TurnResult

PROJECT = "hermes_api"
ENTRY_POINT_GROUP = "hermes_api.plugins"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class Gateway(Protocol):
    """What a gateway offers its plugins."""

    settings: Settings
    runtime: AgentRuntime
    hooks: TurnHooks  # the plugin manager's hook relay: the turn hooks are called through it

    def mount(self, app: web.Application) -> None:
        """Serve `app` as the API server (the gateway owns the sockets)."""
        ...

    @property
    def apps(self) -> list[web.Application]:
        """The applications mounted so far."""
        ...


class GatewaySpec:
    @hookspec
    def hermes_api_gateway_startup(self, gateway: Gateway) -> None:
        """The gateway is starting and has not bound its API port yet.

        When: once, after settings and the agent runtime are loaded, before serving.
        Arguments: `gateway` — settings, runtime, hook relay and `mount()`.
        Return: nothing. A plugin that serves HTTP builds its aiohttp application and calls
        `gateway.mount(app)`; the gateway then binds API_SERVER_HOST:API_SERVER_PORT and serves it.
        """

    @hookspec
    def hermes_api_gateway_shutdown(self, gateway: Gateway) -> Any:
        """The gateway received SIGINT/SIGTERM and is about to close its sockets.

        When: once, while the listening sockets are still open (new work gets 503 gateway_draining).
        Arguments: `gateway` — the same object as at startup.
        Return: an awaitable (or None). The gateway awaits every returned awaitable before it closes
        the server: plugins drain here (interrupt turns, end open streams with their terminal record)
        and close their stores.
        """

    @hookspec
    def hermes_api_agent_turn_start(self, turn: AgentTurn) -> None:
        """An agent turn is about to run: for plugins that observe turns.

        When: once per turn, on the event loop, before the runtime executes it.
        Arguments: `turn` — its request (`turn.request`: run id, session, input, model), `interrupted`,
        `on_interrupt()`. Its events already go to its own sink (`turn.callbacks`, attached when the turn was
        built, read-only): nothing an implementation does here changes what the turn streams, so any number of
        plugins may implement this hook.
        Return: nothing. Keep it short (it runs on the event loop); an exception is logged and the turn runs on.
        """

    @hookspec
    def hermes_api_agent_turn_end(self, turn: AgentTurn, outcome: TurnResult) -> None:
        """An agent turn has returned: for plugins that observe turns.

        When: once per turn, on the event loop, after the runtime returned (also after a crash,
        with a failed outcome) and before the terminal status is recorded.
        Arguments: `turn` — as at start; `outcome` — status, final text, usage, error.
        Return: nothing. An exception is logged; the turn settles as without it.
        """
