"""The reference gateway process: settings, plugins through pluggy, one API listener, clean shutdown.

It is a host of the contract in `hookspecs.py`, like the bridge into `hermes gateway`.
"""

from __future__ import annotations

import asyncio
import errno
import inspect
import ipaddress
import logging
import signal
import socket
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pluggy
from aiohttp import web

from ..config.settings import Settings
from ..hookspecs import ENTRY_POINT_GROUP, PROJECT, GatewaySpec
from ..runtimes import RuntimeUnavailable, select_runtime
from ..runtimes.base import AgentRuntime, TurnHooks
from ..runtimes.scripted import ScriptError
from ..store.base import StoreError
from .runner import ApiRunner

log = logging.getLogger("hermes_api_plugin")

# aiohttp answers over-long header lines itself with plain text; let values up to 64 KiB reach our
# middleware, which rejects oversized ones with the JSON envelope.
PARSER_LIMIT = 65_536


def runner_kwargs(settings: Settings | None = None) -> dict[str, Any]:
    """AppRunner settings every host uses: cancel handlers on disconnect, roomy header parser, and (with `settings`)
    the idle keep-alive time-out (issue 20, defect 4; aiohttp's own default is an hour)."""
    kwargs: dict[str, Any] = {
        "handler_cancellation": True,
        "max_field_size": PARSER_LIMIT,
        "max_line_size": PARSER_LIMIT,
        "access_log": None,
        "shutdown_timeout": 15.0,
    }
    if settings is not None:
        kwargs["keepalive_timeout"] = settings.keepalive_timeout_seconds
    return kwargs


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, `localhost`; names count only if all addresses are loopback."""
    if host.strip().lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None)
        except OSError:
            return False
        return bool(infos) and all(is_loopback(str(info[4][0])) for info in infos)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def display_address(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def build_plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(GatewaySpec)
    pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    return pm


class ReferenceGateway:
    """The `Gateway` the reference host hands to plugins."""

    def __init__(self, settings: Settings, runtime: AgentRuntime, pm: pluggy.PluginManager) -> None:
        self.settings = settings
        self.runtime = runtime
        self.pm = pm
        self.hooks: TurnHooks = pm.hook
        self._apps: list[web.Application] = []

    def mount(self, app: web.Application) -> None:
        self._apps.append(app)

    @property
    def apps(self) -> list[web.Application]:
        return list(self._apps)


def check_startable(settings: Settings) -> bool:
    """The one-line refusals of WIRE.md §1.2; True when the API server may start."""
    if not settings.enabled:
        log.error("[API Server] Not starting: API_SERVER_ENABLED is not true — set it in %s", _env_hint(settings))
        return False
    if settings.key is None:
        log.error(
            "[API Server] Refusing to start: API_SERVER_KEY is missing or shorter than 16 characters — set it in %s",
            _env_hint(settings),
        )
        return False
    if (reason := store_refusal(settings)) is not None:
        log.error("[API Server] Refusing to start: %s", reason)
        return False
    return True


def store_refusal(settings: Settings) -> str | None:
    """Why the configured store cannot be used at all (not a PostgreSQL URL, no driver); None when it can. A
    gateway told to share a database never falls back to a file of its own: its state would split from the others'."""
    if settings.store_url_problem is not None:
        return f"{settings.store_url_problem} (the store of several gateways; unset it for SQLite)"
    if settings.store_url is not None and not all(find_spec(name) for name in ("psycopg", "psycopg_pool")):
        return "a PostgreSQL store URL is set but its driver is missing: pip install 'hermes-api-plugin[postgres]'"
    return None


def _env_hint(settings: Settings) -> str:
    home = "~/.hermes" if settings.hermes_home == Path.home() / ".hermes" else str(settings.hermes_home)
    return f"{home}/.env"


async def _start_sites(runner: web.AppRunner, settings: Settings) -> bool:
    """Bind the configured address (plus ::1 beside the default 127.0.0.1). None when the port is taken."""
    try:
        site = web.TCPSite(runner, settings.bind_address, settings.port, reuse_address=True)
        await site.start()
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            log.error("[API Server] Port %s is already in use — set API_SERVER_PORT", settings.port)
            return False
        raise
    if settings.bind_address == "127.0.0.1" and settings.port != 0 and socket.has_ipv6:
        try:
            await web.TCPSite(runner, "::1", settings.port, reuse_address=True).start()
        except OSError:
            pass  # no IPv6 loopback here: 127.0.0.1 alone serves
    return True


async def start_api_server(app: web.Application, settings: Settings) -> web.AppRunner | None:
    """Serve `app` on the configured address with the §1.2 lines: the exposure warning before binding, the
    port line (None: not started), the listening line once bound. Shared by every host (the bridge too). A store
    that cannot be opened is logged and raised as StoreError."""
    if not is_loopback(settings.bind_address):
        log.warning(
            "[API Server] WARNING: %s is reachable from the network. The full agent toolset, terminal commands "
            "included, sits behind this port. Prefer 127.0.0.1 and reach it through an SSH tunnel or Tailscale.",
            settings.bind_address,
        )
    runner = ApiRunner(
        app,
        header_timeout=settings.header_timeout_seconds,
        body_timeout=settings.body_timeout_seconds,
        **runner_kwargs(settings),
    )
    try:
        await runner.setup()  # the app's start-up opens the store
    except StoreError as exc:
        log.error("[API Server] Not starting: the store is unavailable: %s", exc)
        await runner.cleanup()
        raise
    if not await _start_sites(runner, settings):
        await runner.cleanup()
        return None
    port = runner.addresses[0][1] if settings.port == 0 else settings.port
    log.info("[API Server] API server listening on http://%s:%s", display_address(settings.bind_address), port)
    return runner


async def shutdown_plugins(pm: pluggy.PluginManager, gateway: ReferenceGateway) -> None:
    """Call the shutdown hook and await what the plugins return (they drain there)."""
    for result in pm.hook.hermes_api_gateway_shutdown(gateway=gateway):
        if inspect.isawaitable(result):
            await result


async def run_gateway(settings: Settings, stop: asyncio.Event | None = None) -> int:
    """Run until SIGINT/SIGTERM (or `stop`); the exit status for the process."""
    for problem in settings.problems:
        log.warning("[API Server] config: %s", problem)
    if not check_startable(settings):
        return 1
    try:
        runtime = select_runtime(settings)
    except (RuntimeUnavailable, ScriptError) as exc:
        log.error("[API Server] Not starting: %s", exc)
        return 1
    pm = build_plugin_manager()
    gateway = ReferenceGateway(settings, runtime, pm)
    pm.hook.hermes_api_gateway_startup(gateway=gateway)
    if not gateway.apps:
        log.error("[API Server] Not starting: no plugin mounted an API application (is hermes-api-plugin installed?)")
        await runtime.close()
        return 1
    try:
        runner = await start_api_server(gateway.apps[0], settings)
    except StoreError:  # logged: the database could not be reached or migrated
        runner = None
    if runner is None:
        await runtime.close()
        return 1

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    await stop.wait()
    log.info("[API Server] Shutting down: draining turns")
    await shutdown_plugins(pm, gateway)
    await runner.cleanup()
    await runtime.close()
    log.info("[API Server] Stopped")
    return 0
