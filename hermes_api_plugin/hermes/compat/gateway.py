"""The compat boundary for Hermes' gateway (`hermes gateway`) and its platforms: the GatewayRunner of this process
and its live adapters, the platform adapter the bridge (`hermes/bridge.py`) builds on (`BasePlatformAdapter`, its
state transitions, platform registration), a platform's HTTP event ingress, and the gateway's health as the built-in
`/health/detailed` reports it (WIRE §14.3)."""

from __future__ import annotations

import importlib.metadata
from typing import Any

from . import agent
from ._core import MISSING, HermesName, call, warn_fallback

GATEWAY_RUNNER_REF = HermesName(
    "gateway.run",
    "_gateway_runner_ref",
    args=(),
    fallback="no running hermes gateway is found: the startup hook starts nothing",
)
GATEWAY_RUNNER = HermesName(
    "gateway.run",
    "GatewayRunner",
    attrs=("adapters", "config"),
    hooks=("active_agent_work_count",),  # looked up on the plugin's adapter
    fallback="no adapter map: the startup hook can neither see nor hand over an adapter",
)
GATEWAY_PLATFORMS = HermesName(
    "gateway.config",
    "GatewayConfig",
    attrs=("platforms",),
    fallback="a default PlatformConfig(enabled=True) for api_server",
)
PLATFORM_API_SERVER = HermesName("gateway.config", "Platform.API_SERVER")
PLATFORM_CONFIG = HermesName("gateway.config", "PlatformConfig", args=(), kwargs=("enabled",))
ADAPTER_BASE = HermesName(
    "gateway.platforms.base",
    "BasePlatformAdapter",
    args=("config", "platform"),
    attrs=("platform", "has_fatal_error", "fatal_error_retryable"),
    hooks=("connect", "disconnect", "send", "get_chat_info"),
)
MARK_CONNECTED = HermesName("gateway.platforms.base", "BasePlatformAdapter._mark_connected", args=())
MARK_DISCONNECTED = HermesName("gateway.platforms.base", "BasePlatformAdapter._mark_disconnected", args=())
SET_FATAL_ERROR = HermesName(
    "gateway.platforms.base", "BasePlatformAdapter._set_fatal_error", args=("code", "message"), kwargs=("retryable",)
)
SEND_RESULT = HermesName("gateway.platforms.base", "SendResult", args=(), kwargs=("success", "error"))
_PLATFORM_ENTRY_FIELDS = (
    "name",
    "label",
    "adapter_factory",
    "check_fn",
    "validate_config",
    "is_connected",
    "required_env",
    "install_hint",
    "emoji",
    "allow_update_command",
)
REGISTER_PLATFORM = HermesName(
    "hermes_cli.plugins", "PluginContext.register_platform", args=(), kwargs=_PLATFORM_ENTRY_FIELDS
)
# Hermes' plugin hooks around each provider call (hermes_cli.plugins' VALID_HOOKS `post_api_request`,
# `api_request_error`): the `chat {model}` spans of a traced turn (hermes/chat_spans.py)
REGISTER_HOOK = HermesName(
    "hermes_cli.plugins",
    "PluginContext.register_hook",
    args=("hook_name", "callback"),
    fallback="traces have no `chat` span per provider call",
)
PLATFORM_ENTRY = HermesName("gateway.platform_registry", "PlatformEntry", args=(), kwargs=_PLATFORM_ENTRY_FIELDS)
# The HTTP event ingress an adapter offers (`routes/platform_events.py` reads these by name on any adapter; an adapter
# without them answers 503): Google Chat's, the one hermes-agent 0.19.0 ships, is checked against the installed one.
PLATFORM_EVENT_ADAPTER = HermesName(
    "plugins.platforms.google_chat.adapter",
    "GoogleChatAdapter",
    attrs=("verify_http_event_request", "dispatch_http_event"),
    fallback="the platform answers 503 platform_http_events_unsupported",
)
# What the built-in api_server reads for /health/detailed. Required: the route answers 500 without one.
READ_RUNTIME_STATUS = HermesName("gateway.status", "read_runtime_status", args=())
PARSE_ACTIVE_AGENTS = HermesName("gateway.status", "parse_active_agents", args=("raw",))
GATEWAY_BUSY = HermesName(
    "gateway.status", "derive_gateway_busy", args=(), kwargs=("gateway_running", "gateway_state", "active_agents")
)
GATEWAY_DRAINABLE = HermesName(
    "gateway.status", "derive_gateway_drainable", args=(), kwargs=("gateway_running", "gateway_state")
)
RUNTIME_READINESS = HermesName(
    "gateway.readiness",
    "collect_runtime_readiness",
    args=(),
    kwargs=(
        "configured_model",
        "runtime_status",
        "active_api_runs",
        "process_completion_queue_depth",
        "active_delegations",
    ),
)

NAMES: tuple[HermesName, ...] = (
    GATEWAY_RUNNER_REF,
    GATEWAY_RUNNER,
    GATEWAY_PLATFORMS,
    PLATFORM_API_SERVER,
    PLATFORM_CONFIG,
    ADAPTER_BASE,
    MARK_CONNECTED,
    MARK_DISCONNECTED,
    SET_FATAL_ERROR,
    SEND_RESULT,
    REGISTER_PLATFORM,
    REGISTER_HOOK,
    PLATFORM_ENTRY,
    PLATFORM_EVENT_ADAPTER,
    READ_RUNTIME_STATUS,
    PARSE_ACTIVE_AGENTS,
    GATEWAY_BUSY,
    GATEWAY_DRAINABLE,
    RUNTIME_READINESS,
)

# -- the gateway and its platform adapters ---------------------------------------------------------------------


def gateway_runner() -> Any | None:
    """The GatewayRunner of the `hermes gateway` running in this process; None outside one."""
    runner = call(GATEWAY_RUNNER_REF)
    return None if runner is MISSING else runner


def gateway_adapters(runner: Any) -> dict[Any, Any]:
    """The runner's live platform adapters by Platform: the map its shutdown disconnects."""
    try:
        return runner.adapters
    except AttributeError as exc:  # renamed on GatewayRunner: nothing else can be wrong with reading it
        warn_fallback(GATEWAY_RUNNER, f"has no adapters ({exc})")
        return {}


def gateway_platform_config(runner: Any) -> Any:
    """The runner's PlatformConfig for api_server, else an enabled default one."""
    try:
        platforms = runner.config.platforms or {}
    except AttributeError as exc:  # renamed on GatewayRunner or GatewayConfig
        warn_fallback(GATEWAY_PLATFORMS, f"is not readable on the runner ({exc})")
        platforms = {}
    return platforms.get(api_server_platform()) or new_platform_config(enabled=True)


def platform_adapter(runner: Any, platform: str) -> Any | None:
    """The live adapter of `platform` (its `Platform` value, e.g. `google_chat`) among the gateway runner's; None
    when that platform is not connected."""
    for key, adapter in gateway_adapters(runner).items():
        if getattr(key, "value", key) == platform:
            return adapter
    return None


def api_server_platform() -> Any:
    return PLATFORM_API_SERVER.resolve()


def new_platform_config(*, enabled: bool) -> Any:
    return PLATFORM_CONFIG.resolve()(enabled=enabled)


def adapter_base() -> type:
    """The class the plugin's adapter extends."""
    return ADAPTER_BASE.resolve()


def send_result(*, success: bool, error: str | None = None) -> Any:
    return SEND_RESULT.resolve()(success=success, error=error)


# The adapter's state transitions are BasePlatformAdapter's private methods (no public way exists; Hermes' own
# adapters call them so). Required: without them the gateway could not tell the adapter's state.


def mark_connected(adapter: Any) -> None:
    adapter._mark_connected()


def mark_disconnected(adapter: Any) -> None:
    adapter._mark_disconnected()


def set_fatal_error(adapter: Any, code: str, message: str, *, retryable: bool) -> None:
    """Record a start failure; `retryable=False` makes it final (Hermes does not retry the platform)."""
    adapter._set_fatal_error(code, message, retryable=retryable)


def register_platform(ctx: Any, **entry: Any) -> None:
    """Register a gateway platform with Hermes' plugin context (`entry`: PlatformEntry's fields)."""
    assert set(entry) <= set(REGISTER_PLATFORM.kwargs), sorted(set(entry) - set(REGISTER_PLATFORM.kwargs))
    ctx.register_platform(**entry)


def register_hooks(ctx: Any, hooks: dict[str, Any]) -> None:
    """Register lifecycle hooks with Hermes' plugin context (the fallback, logged once, when it cannot)."""
    register = getattr(ctx, "register_hook", None)
    if not callable(register):
        warn_fallback(REGISTER_HOOK, "is missing on the plugin context")
        return
    for name, callback in hooks.items():
        register(name, callback)


# -- the gateway's health (WIRE §14.3) -------------------------------------------------------------------------


def hermes_version() -> str:
    """hermes-agent's version as its own health routes report it ("dev" when unknown)."""
    try:
        return importlib.metadata.version("hermes-agent")
    except importlib.metadata.PackageNotFoundError:
        return "dev"


def detailed_health(active_api_runs: int) -> dict[str, Any]:
    """The host keys of the built-in `/health/detailed`, from Hermes' runtime status file and readiness probes.
    Reads files and config: call it in a worker thread.

    The status file (`gateway_state.json`) describes the `hermes gateway` of this `$HERMES_HOME`; it is this
    process only when a gateway runs here, so outside one (the reference gateway with the hermes runtime) its
    state and platforms are not reported as ours."""
    inside_gateway = gateway_runner() is not None
    status = (READ_RUNTIME_STATUS.resolve()() or {}) if inside_gateway else {}
    state = status.get("gateway_state")
    active = PARSE_ACTIVE_AGENTS.resolve()(status.get("active_agents", 0))
    readiness = RUNTIME_READINESS.resolve()(
        configured_model=agent.gateway_model() or "",
        runtime_status=status,
        active_api_runs=active_api_runs,
        # Hermes' process-completion queue and async delegations are its own tools' work, counted by upstream
        # through private module state; this server's turns are what it can count.
        process_completion_queue_depth=0,
        active_delegations=0,
    )
    return {
        "readiness": readiness,
        "version": hermes_version(),
        "gateway_state": state,
        "platforms": status.get("platforms", {}),
        "active_agents": active,
        # served by the gateway process itself, so it is running by definition (as upstream reasons)
        "gateway_busy": GATEWAY_BUSY.resolve()(gateway_running=True, gateway_state=state, active_agents=active),
        "gateway_drainable": GATEWAY_DRAINABLE.resolve()(gateway_running=True, gateway_state=state),
        "exit_reason": status.get("exit_reason"),
        "updated_at": status.get("updated_at"),
    }
