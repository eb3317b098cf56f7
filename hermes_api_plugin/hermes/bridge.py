"""The bridge into Hermes Agent's own gateway (`hermes gateway`, package `hermes-agent`).

Two ways in, one adapter:

1. **Plugin entry point** (the robust path). `pyproject.toml` registers this module in Hermes' entry-point
   group `hermes_agent.plugins` as `hermes-api-plugin`; with `plugins: {enabled: [hermes-api-plugin]}` in
   config.yaml, Hermes calls `register(ctx)` at startup and this module registers the gateway platform
   `api_server`. Hermes' platform registry is consulted before its built-in adapters, so the gateway builds
   `PluginApiServerAdapter` *instead of* its built-in api_server: one platform, one adapter, one port — the
   built-in server never starts, so there is nothing to clash with.
2. **Event hook** (`hooks/hermes-api-plugin/`, installed by `hermes-api install-hook`). On `gateway:startup`
   it calls `on_gateway_startup()`: when the entry point already serves `api_server` it only confirms that;
   when the plugin is not enabled as a Hermes plugin it boots the same adapter itself — unless Hermes'
   built-in api_server already holds the port, which it reports (WIRE.md §1.2) instead of fighting over it.

Either way the adapter does what the reference gateway does (`gateway/server.py`): load Settings, build the
pluggy manager, call `hermes_api_gateway_startup` (the plugin mounts its app), bind with the same refusal /
port / listening lines, and on `disconnect()` call `hermes_api_gateway_shutdown` and drain. Agent turns run on
the real Hermes `AIAgent` (`runtimes/hermes.py`) unless config.yaml says `agent.runtime: scripted`.

Importing this module is cheap (Hermes imports it in every `hermes` command once enabled): hermes-agent's
gateway classes are imported only when the adapter is built. Every hermes-agent name is reached through
`hermes.compat` (`compat/gateway.py`).
"""

from __future__ import annotations

import logging
from typing import Any

from ..config.settings import Settings, load_settings
from . import compat
from .chat_spans import HOOKS as CHAT_SPAN_HOOKS

log = logging.getLogger("hermes_api_plugin")

ENTRY_POINT_NAME = "hermes-api-plugin"  # the name to list under plugins.enabled in config.yaml
PLATFORM = "api_server"
LABEL = "API Server (hermes-api-plugin)"
HELD_BY_BUILTIN = "[API Server] Port %s is held by Hermes' built-in api_server — disable platforms.api_server"

_adapter_class: type | None = None
_registered = False  # register(ctx) ran in this process: the entry point owns the api_server platform


def current_settings() -> Settings:
    """Settings from `$HERMES_HOME` as Hermes resolves it (profiles included)."""
    return load_settings(compat.home.hermes_home())


# -- entry point ------------------------------------------------------------------------------------


def register(ctx: Any) -> None:
    """`hermes_agent.plugins` entry point: serve Hermes' `api_server` platform with this plugin.

    Runs in every Hermes process that loads plugins (CLI included), before any event loop: it only records
    the platform entry; nothing is imported, bound or started here.
    """
    global _registered
    compat.gateway.register_platform(
        ctx,
        name=PLATFORM,
        label=LABEL,
        adapter_factory=make_adapter,
        check_fn=lambda: True,
        validate_config=_enabled_or_say_why,
        is_connected=lambda _config: current_settings().enabled,
        required_env=["API_SERVER_ENABLED", "API_SERVER_KEY"],
        install_hint="pip install 'hermes-api-plugin[hermes]'",
        emoji="🔌",
        allow_update_command=False,
    )
    # A provider call of a traced turn becomes its `chat` span; untraced, each hook returns at once.
    compat.gateway.register_hooks(ctx, CHAT_SPAN_HOOKS)
    _registered = True
    log.debug("[API Server] hermes-api-plugin registered the %s platform", PLATFORM)


def _enabled_or_say_why(_config: Any) -> bool:
    """Hermes enables `api_server` whenever API_SERVER_ENABLED *or* API_SERVER_KEY is in the environment; this
    plugin starts only when API_SERVER_ENABLED / api_server.enabled is true (a key alone does not enable it,
    WIRE.md §1.2). Returning False makes Hermes skip the adapter for good — no reconnect loop."""
    settings = current_settings()
    if settings.enabled:
        return True
    from ..gateway.server import check_startable

    check_startable(settings)  # logs the one "Not starting" line
    return False


def make_adapter(config: Any) -> Any:
    """The adapter factory Hermes calls with its `PlatformConfig` for `api_server`."""
    return adapter_class()(config)


def adapter_class() -> type:
    """`PluginApiServerAdapter`, a `gateway.platforms.base.BasePlatformAdapter` (built on first use)."""
    global _adapter_class
    if _adapter_class is None:
        _adapter_class = _build_adapter_class()
    return _adapter_class


def _build_adapter_class() -> type:
    from ..gateway.server import (
        ReferenceGateway,
        build_plugin_manager,
        check_startable,
        shutdown_plugins,
        start_api_server,
        store_refusal,
    )
    from ..http.app_keys import BACKGROUND, TURNS
    from ..runtimes import RuntimeUnavailable, scripted_runtime
    from ..runtimes.hermes import HermesRuntime
    from ..runtimes.scripted import ScriptError
    from ..store.base import StoreError

    class PluginApiServerAdapter(compat.gateway.adapter_base()):  # type: ignore[misc]
        """Hermes' `api_server` platform, served by hermes-api-plugin."""

        hermes_api_plugin = True  # how the startup hook recognises the entry-point adapter

        def __init__(self, config: Any) -> None:
            super().__init__(config, compat.gateway.api_server_platform())
            self.settings: Settings | None = None
            self._gateway: Any = None
            self._runner: Any = None
            self._runtime: Any = None

        @property
        def port(self) -> int | None:
            if self._runner is None or not self._runner.addresses:
                return None
            return int(self._runner.addresses[0][1])

        async def connect(self, *, is_reconnect: bool = False) -> bool:
            if self._runner is not None:
                return True
            settings = self.settings = current_settings()
            for problem in settings.problems:
                log.warning("[API Server] config: %s", problem)
            if not check_startable(settings):
                if not settings.enabled:
                    reason = "API_SERVER_ENABLED is not true"
                elif settings.key is None:
                    reason = "API_SERVER_KEY is missing or shorter than 16 characters"
                else:
                    reason = store_refusal(settings) or "refused"
                return self._refuse("api_server_refused", f"API server not started: {reason}")
            try:
                if settings.runtime == "scripted":
                    runtime: Any = scripted_runtime(settings)
                else:
                    runtime = HermesRuntime(settings)
                    runtime.start_warm_up()
            except (RuntimeUnavailable, ScriptError) as exc:
                log.error("[API Server] Not starting: %s", exc)
                return self._refuse("api_server_runtime", str(exc))
            pm = build_plugin_manager()
            gateway = ReferenceGateway(settings, runtime, pm)
            pm.hook.hermes_api_gateway_startup(gateway=gateway)
            if not gateway.apps:
                log.error("[API Server] Not starting: no plugin mounted an API application")
                await runtime.close()
                return self._refuse("api_server_no_app", "no plugin mounted an API application")
            try:
                runner = await start_api_server(gateway.apps[0], settings)
            except StoreError as exc:  # logged by start_api_server
                await shutdown_plugins(pm, gateway)
                await runtime.close()
                return self._refuse("api_server_store_unavailable", f"the store is unavailable: {exc}")
            if runner is None:
                await shutdown_plugins(pm, gateway)
                await runtime.close()
                return self._refuse("api_server_port_in_use", f"port {settings.port} is already in use")
            self._runtime, self._gateway, self._runner = runtime, (pm, gateway), runner
            log.info("[API Server] Serving inside hermes gateway (agent runtime: %s)", runtime.name)
            compat.gateway.mark_connected(self)
            return True

        def _refuse(self, code: str, message: str) -> bool:
            # final: Hermes does not retry the start
            compat.gateway.set_fatal_error(self, code, message, retryable=False)
            return False

        async def disconnect(self) -> None:
            runner, served, runtime = self._runner, self._gateway, self._runtime
            self._runner = self._gateway = self._runtime = None
            if served is not None:
                log.info("[API Server] Shutting down: draining turns")
                pm, gateway = served
                try:
                    await shutdown_plugins(pm, gateway)
                finally:
                    if runner is not None:
                        await runner.cleanup()
                    if runtime is not None:
                        await runtime.close()
                log.info("[API Server] Stopped")
            compat.gateway.mark_disconnected(self)

        async def send(
            self, chat_id: str, content: str, reply_to: str | None = None, metadata: dict[str, Any] | None = None
        ) -> Any:
            return compat.gateway.send_result(
                success=False, error="The API server answers over HTTP; it has no chats to send to"
            )

        async def get_chat_info(self, chat_id: str) -> dict[str, Any]:
            settings = self.settings
            return {
                "name": LABEL,
                "type": "api",
                "host": settings.bind_address if settings else None,
                "port": self.port,
            }

        def active_agent_work_count(self) -> int:
            """Agent turns in flight and background work such as a fired cron job's run (Hermes' drain waits for
            them before it disconnects this adapter, and its idle check counts them)."""
            if self._gateway is None:
                return 0
            return sum(app[TURNS].active + app[BACKGROUND].active for app in self._gateway[1].apps if TURNS in app)

    return PluginApiServerAdapter


# -- event hook -------------------------------------------------------------------------------------


async def on_gateway_startup(context: dict[str, Any] | None = None, runner: Any = None) -> str:
    """The `gateway:startup` event of `hooks/hermes-api-plugin`: make sure this plugin serves the API.

    Returns what it found or did: `active` (the entry point's adapter serves api_server), `disabled`
    (API_SERVER_ENABLED / api_server.enabled is not true), `held` (Hermes' built-in api_server serves the port:
    reported, not fought over), `started` (booted here; the gateway's shutdown disconnects it), `refused`
    (the adapter refused to start and logged why — also when the entry point's adapter already refused: a
    refusal is final, the hook does not try again), or `no-gateway`.
    """
    if runner is None:
        runner = compat.gateway.gateway_runner()
    if runner is None:
        log.error("[API Server] hermes-api-plugin hook: no running hermes gateway found; nothing started")
        return "no-gateway"
    adapters = compat.gateway.gateway_adapters(runner)
    platform = compat.gateway.api_server_platform()
    current = adapters.get(platform)
    if getattr(current, "hermes_api_plugin", False):
        log.info(
            "[API Server] hermes-api-plugin serves the api_server platform (plugin entry point %s)", ENTRY_POINT_NAME
        )
        return "active"
    if _registered:  # the entry point's adapter was not started or refused to start; it logged why
        log.debug("[API Server] hermes-api-plugin hook: the entry point's adapter is not serving; not retrying")
        return "refused"
    settings = current_settings()
    if not settings.enabled:
        log.info(
            "[API Server] hermes-api-plugin hook: API server not enabled (API_SERVER_ENABLED / "
            "api_server.enabled); nothing started"
        )
        return "disabled"
    if current is not None:
        log.error(HELD_BY_BUILTIN, settings.port)
        log.error(
            "[API Server] To serve this plugin instead, add %s to plugins.enabled in config.yaml "
            "(it replaces the built-in api_server platform)",
            ENTRY_POINT_NAME,
        )
        return "held"
    adapter = make_adapter(compat.gateway.gateway_platform_config(runner))
    if not await adapter.connect():
        return "refused"
    adapters[platform] = adapter  # so the gateway's stop() disconnects (drains) it
    log.info("[API Server] hermes-api-plugin started from the gateway:startup hook")
    return "started"
