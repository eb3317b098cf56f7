"""Compatibility with hermes-agent (0.19): the only module that touches hermes-agent's internals.

It owns every hermes-agent name the plugin uses — the private helpers of `hermes gateway` (such as
`gateway.run._resolve_runtime_agent_kwargs`) and the classes the runtime and the bridge build on (`run_agent.AIAgent`,
`gateway.platforms.base.BasePlatformAdapter`, …) — each declared once in `HERMES_NAMES` (module, attribute path,
the arguments the plugin passes), which `tests/hermes/test_compat.py` checks against the installed hermes-agent;
`tests/test_hermes_compat_boundary.py` checks that no other module spells a private hermes-agent name.

- **Required** names (`fallback` empty) raise where they are used when missing: the plugin cannot work without
  them; the version pin and the name test protect them.
- **Optional** names: when one is missing (ImportError / AttributeError) or no longer accepts the arguments the
  plugin passes (bound to its signature *before* the call, so a TypeError raised inside the call is not taken for
  a changed signature), its fallback is taken and logged once per process at WARNING, naming the hermes-agent
  name and the fallback. Whether an exception of the call itself has a fallback is decided, and said, per call.

Nothing is imported at module level: importing `run_agent` takes seconds, loads `$HERMES_HOME/.env` and creates
files under `$HERMES_HOME`, so the hermes runtime calls these functions from its worker threads.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("hermes_api_plugin")

API_SERVER = "api_server"  # the platform name the plugin serves (gateway.config.Platform.API_SERVER)

# hermes-agent 0.19.0's top-level modules (its wheel's top_level.txt): an absolute import of one of them is an
# import of hermes-agent.
HERMES_TOP_LEVEL_MODULES = frozenset(
    [
        "acp_adapter",
        "agent",
        "batch_runner",
        "cli",
        "cron",
        "gateway",
        "hermes_bootstrap",
        "hermes_cli",
        "hermes_constants",
        "hermes_logging",
        "hermes_state",
        "hermes_time",
        "mcp_serve",
        "model_tools",
        "plugins",
        "providers",
        "run_agent",
        "tools",
        "toolset_distributions",
        "toolsets",
        "trajectory_compressor",
        "tui_gateway",
        "utils",
    ]
)


@dataclass(frozen=True)
class HermesName:
    """One hermes-agent name the plugin uses.

    `args` names the positional arguments the plugin passes when it calls it (None: the plugin does not call it),
    `kwargs` the keyword arguments it may pass, `attrs` the attributes it reads on its instances, `hooks` the
    methods hermes-agent looks up by name on objects the plugin hands it, `fallback` what the plugin does when the
    name is unusable (empty: required, no fallback).
    """

    module: str
    path: str
    args: tuple[str, ...] | None = None
    kwargs: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()
    fallback: str = ""

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.path}"

    def resolve(self) -> Any:
        """Import the module and walk the attribute path (ImportError / AttributeError when either is gone)."""
        found: Any = importlib.import_module(self.module)
        for part in self.path.split("."):
            found = getattr(found, part)
        return found


_MODEL_SECTION = "provider, base_url, api_key and model from the model: section of config.yaml"
_DEFAULT_TOOLSETS = "AIAgent's default toolsets instead of platform_toolsets.api_server"

# -- the declared list: every hermes-agent name the plugin uses ------------------------------------------------

AIAGENT = HermesName(
    "run_agent",
    "AIAgent",
    args=(),
    attrs=("context_compressor",),
    kwargs=(
        # set by the runtime
        "model",
        "max_iterations",
        "quiet_mode",
        "verbose_logging",
        "ephemeral_system_prompt",
        "session_id",
        "platform",
        "session_db",
        "reasoning_config",
        "service_tier",
        "enabled_toolsets",
        "fallback_model",
        "reasoning_callback",
        "stream_delta_callback",
        "tool_start_callback",
        "tool_complete_callback",
        "interim_assistant_callback",
        "event_callback",
        # passed through from runtime_agent_kwargs() (the keys of hermes-agent 0.19) or the model: section
        "api_key",
        "base_url",
        "provider",
        "api_mode",
        "command",
        "args",
        "credential_pool",
        "max_tokens",
    ),
)
RUN_CONVERSATION = HermesName(
    "run_agent", "AIAgent.run_conversation", args=(), kwargs=("user_message", "conversation_history", "task_id")
)
INTERRUPT = HermesName("run_agent", "AIAgent.interrupt", args=("message",))
COMPACTION_SUMMARY = HermesName(
    "agent.context_compressor",
    "ContextCompressor",
    attrs=("_previous_summary",),
    fallback="compaction events carry an empty summary",
)
RUNTIME_KWARGS = HermesName("gateway.run", "_resolve_runtime_agent_kwargs", args=(), fallback=_MODEL_SECTION)
RUNTIME_KWARGS_FOR_PROVIDER = HermesName(
    "gateway.run", "_resolve_runtime_agent_kwargs_for_provider", args=("provider",), fallback=_MODEL_SECTION
)
GATEWAY_MODEL = HermesName("gateway.run", "_resolve_gateway_model", args=(), fallback="model.default of config.yaml")
GATEWAY_CONFIG = HermesName("gateway.run", "_load_gateway_config", args=(), fallback=_DEFAULT_TOOLSETS)
PLATFORM_TOOLS = HermesName(
    "hermes_cli.tools_config", "_get_platform_tools", args=("config", "platform"), fallback=_DEFAULT_TOOLSETS
)
REASONING_CONFIG = HermesName(
    "gateway.run",
    "GatewayRunner._load_reasoning_config",
    args=("model",),
    fallback="AIAgent's default reasoning (a request's reasoning effort still applies)",
)
FALLBACK_MODEL = HermesName("gateway.run", "GatewayRunner._load_fallback_model", args=(), fallback="no fallback chain")
DETECT_TOOL_FAILURE = HermesName(
    "agent.display",
    "_detect_tool_failure",
    args=("tool_name", "result"),
    fallback="a JSON result with a non-zero exit_code, an error or success false failed",
)
SET_SESSION_VARS = HermesName(
    "gateway.session_context",
    "set_session_vars",
    kwargs=("platform", "chat_id", "session_key", "session_id", "async_delivery"),
    fallback="turns run without Hermes' session context (as outside a gateway)",
)
CLEAR_SESSION_VARS = HermesName(
    "gateway.session_context",
    "clear_session_vars",
    args=("tokens",),
    fallback="the session context is left to end with the turn's worker thread",
)
SESSION_DB = HermesName(
    "hermes_state",
    "SessionDB",
    args=(),
    fallback="turns run without Hermes' session store (Hermes does not list API sessions)",
)
HERMES_HOME = HermesName(
    "hermes_constants", "get_hermes_home", args=(), fallback="$HERMES_HOME, else ~/.hermes (profiles are not resolved)"
)
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
PLATFORM_ENTRY = HermesName("gateway.platform_registry", "PlatformEntry", args=(), kwargs=_PLATFORM_ENTRY_FIELDS)

HERMES_NAMES: tuple[HermesName, ...] = (
    AIAGENT,
    RUN_CONVERSATION,
    INTERRUPT,
    COMPACTION_SUMMARY,
    RUNTIME_KWARGS,
    RUNTIME_KWARGS_FOR_PROVIDER,
    GATEWAY_MODEL,
    GATEWAY_CONFIG,
    PLATFORM_TOOLS,
    REASONING_CONFIG,
    FALLBACK_MODEL,
    DETECT_TOOL_FAILURE,
    SET_SESSION_VARS,
    CLEAR_SESSION_VARS,
    SESSION_DB,
    HERMES_HOME,
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
    PLATFORM_ENTRY,
)

# -- fallbacks ----------------------------------------------------------------------------------------------

_MISSING: Any = object()  # "the name is unusable": the caller takes its fallback
_warned: set[str] = set()  # qualnames whose fallback was logged in this process
_warned_lock = threading.Lock()  # fallbacks are taken on worker threads and the event loop alike


def _warn_fallback(name: HermesName, problem: str) -> None:
    """Log the fallback of `name` at WARNING once per process: a version difference is one line, not one a turn."""
    with _warned_lock:
        if name.qualname in _warned:
            return
        _warned.add(name.qualname)
    log.warning("[API Server] hermes-agent %s %s; falling back to: %s", name.qualname, problem, name.fallback)


def _target(name: HermesName, *args: Any, **kwargs: Any) -> Any:
    """The optional callable `name`, checked to accept these arguments, or _MISSING (logged once)."""
    assert name.fallback and len(args) == len(name.args or ()) and set(kwargs) <= set(name.kwargs), name
    try:
        target = name.resolve()
    except (ImportError, AttributeError) as exc:  # the module or the attribute is gone (another hermes-agent)
        _warn_fallback(name, f"is missing ({type(exc).__name__}: {exc})")
        return _MISSING
    try:
        inspect.signature(target).bind(*args, **kwargs)
    except TypeError as exc:  # its signature changed (or it is no longer callable): calling it would be a guess
        _warn_fallback(name, f"no longer accepts the arguments the plugin passes ({exc})")
        return _MISSING
    except ValueError:  # no introspectable signature (a builtin, e.g. a weakref): the call itself will tell
        pass
    return target


def _call(name: HermesName, *args: Any, **kwargs: Any) -> Any:
    """Call the optional callable `name`; _MISSING when it is unusable. Exceptions of the call propagate."""
    target = _target(name, *args, **kwargs)
    return _MISSING if target is _MISSING else target(*args, **kwargs)


# -- the agent ------------------------------------------------------------------------------------------------

_agent_import_lock = threading.Lock()


def hermes_available() -> bool:
    """True when hermes-agent (`run_agent`) is importable here; nothing is imported to find out."""
    try:
        return importlib.util.find_spec("run_agent") is not None
    except (ImportError, ValueError):
        return False


def agent_class() -> type:
    """`run_agent.AIAgent` (required). The first call imports hermes-agent (seconds): one importer at a time, so
    concurrent first turns wait for the import instead of racing it."""
    with _agent_import_lock:
        return AIAGENT.resolve()


def run_conversation(
    agent: Any, *, user_message: Any, conversation_history: list[dict[str, Any]], task_id: str
) -> Mapping[str, Any]:
    """Run one turn on `agent` (blocking); its result dict, {} for anything else."""
    result = agent.run_conversation(
        user_message=user_message, conversation_history=conversation_history, task_id=task_id
    )
    return result if isinstance(result, Mapping) else {}


def interrupt_agent(agent: Any, message: str) -> None:
    """Ask a running agent to stop: it drops its provider stream and stops its tools."""
    agent.interrupt(message)


def compaction_summary(agent: Any) -> str:
    """The summary Hermes wrote at the agent's last context compaction, "" when none."""
    try:
        summary = agent.context_compressor._previous_summary
    except AttributeError as exc:  # another compression engine, or the attribute was renamed: no text to show
        _warn_fallback(COMPACTION_SUMMARY, f"is not readable on the agent ({exc})")
        return ""
    return summary if isinstance(summary, str) else ""


# -- what `hermes gateway` would pass to AIAgent ----------------------------------------------------------------
# A RuntimeError from these helpers (no usable provider credentials, say) propagates on purpose: it is the
# turn's error, which the client must see, not a version difference.


def runtime_agent_kwargs(provider: str | None = None) -> dict[str, Any] | None:
    """Provider, credentials, API mode (and a fallback provider's model under "model") for a new AIAgent, as
    `hermes gateway` resolves them from config.yaml and .env; for `provider` when given. None: use the model:
    section."""
    resolved = _call(RUNTIME_KWARGS_FOR_PROVIDER, provider) if provider else _call(RUNTIME_KWARGS)
    return None if resolved is _MISSING else dict(resolved)


def gateway_model() -> str | None:
    """The model `hermes gateway` runs by default; None when unknown."""
    model = _call(GATEWAY_MODEL)
    return None if model is _MISSING else (model or None)


def platform_toolsets(platform: str = API_SERVER) -> list[str] | None:
    """The toolsets config.yaml enables for `platform` (sorted); None: AIAgent's defaults."""
    config = _call(GATEWAY_CONFIG)
    if config is _MISSING:
        return None
    toolsets = _call(PLATFORM_TOOLS, config, platform)
    return None if toolsets is _MISSING else sorted(toolsets)


def reasoning_config(model: str) -> dict[str, Any] | None:
    """The reasoning settings config.yaml gives `model` (per-model override, else agent.reasoning_effort)."""
    config = _call(REASONING_CONFIG, model)
    return None if config is _MISSING else config


def fallback_model() -> list[Any] | None:
    """The fallback provider chain of config.yaml (fallback_providers / fallback_model); None: none."""
    chain = _call(FALLBACK_MODEL)
    return None if chain is _MISSING else chain


# -- during a turn --------------------------------------------------------------------------------------------


def detect_tool_failure(tool_name: str, result: Any) -> bool:
    """Whether a tool result means the tool failed, by Hermes' own test (the one its CLI shows)."""
    target = _target(DETECT_TOOL_FAILURE, tool_name, result)
    if target is not _MISSING:
        try:
            return bool(target(tool_name, result)[0])
        except Exception as exc:
            # the JSON reading below decides, rather than failing the tool's progress event
            _warn_fallback(DETECT_TOOL_FAILURE, f"raised {type(exc).__name__}: {exc}")
    try:
        data = json.loads(result) if isinstance(result, str) else result
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    return data.get("exit_code") not in (None, 0) or bool(data.get("error")) or data.get("success") is False


def bind_session_vars(session_id: str) -> list[Any] | None:
    """Mark the calling thread's context as an api_server turn of `session_id` without async delivery, as Hermes'
    own api_server does, so Hermes' tools know they run in a gateway turn. Returns the tokens for
    clear_session_vars (None: not bound). An exception of the call itself propagates and fails the turn: it is a
    fault in Hermes, not a version difference, and tools must not run in a context bound halfway."""
    tokens = _call(
        SET_SESSION_VARS,
        platform=API_SERVER,
        chat_id=session_id,
        session_key=session_id,
        session_id=session_id,
        async_delivery=False,
    )
    return None if tokens is _MISSING else tokens


def clear_session_vars(tokens: list[Any] | None) -> None:
    """Undo bind_session_vars (after the turn, in its `finally`)."""
    if tokens is None:
        return
    try:
        _call(CLEAR_SESSION_VARS, tokens)
    except Exception as exc:
        # lives in the turn's worker thread, which ends right after
        _warn_fallback(CLEAR_SESSION_VARS, f"raised {type(exc).__name__}: {exc}")


def session_db() -> Any | None:
    """Hermes' session store (`$HERMES_HOME/state.db`), so API sessions show where Hermes lists sessions; None
    when unavailable."""
    target = _target(SESSION_DB)
    if target is _MISSING:
        return None
    try:
        return target()
    except Exception as exc:
        # optional for a turn: it runs without the store
        _warn_fallback(SESSION_DB, f"could not be opened ({type(exc).__name__}: {exc})")
        return None


# -- the gateway and its platform adapters ---------------------------------------------------------------------


def hermes_home() -> Path:
    """`$HERMES_HOME` as Hermes resolves it (profiles included)."""
    home = _call(HERMES_HOME)
    if home is _MISSING:
        from ..config import default_hermes_home

        return default_hermes_home()
    return Path(home)


def gateway_runner() -> Any | None:
    """The GatewayRunner of the `hermes gateway` running in this process; None outside one."""
    runner = _call(GATEWAY_RUNNER_REF)
    return None if runner is _MISSING else runner


def gateway_adapters(runner: Any) -> dict[Any, Any]:
    """The runner's live platform adapters by Platform: the map its shutdown disconnects."""
    try:
        return runner.adapters
    except AttributeError as exc:  # renamed on GatewayRunner: nothing else can be wrong with reading it
        _warn_fallback(GATEWAY_RUNNER, f"has no adapters ({exc})")
        return {}


def gateway_platform_config(runner: Any) -> Any:
    """The runner's PlatformConfig for api_server, else an enabled default one."""
    try:
        platforms = runner.config.platforms or {}
    except AttributeError as exc:  # renamed on GatewayRunner or GatewayConfig
        _warn_fallback(GATEWAY_PLATFORMS, f"is not readable on the runner ({exc})")
        platforms = {}
    return platforms.get(api_server_platform()) or new_platform_config(enabled=True)


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
