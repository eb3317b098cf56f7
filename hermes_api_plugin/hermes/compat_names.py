"""The declarations behind `compat.py`: every hermes-agent name the plugin uses, and the fallback machinery.

Part of the compat boundary (see `compat.py`): only these two modules spell hermes-agent's private names.
"""

from __future__ import annotations

import inspect
import logging
import threading
from typing import Any

from .compat_declare import HERMES_TOP_LEVEL_MODULES, HermesName  # noqa: F401 - re-exported with the declarations
from .compat_host import HOST_NAMES
from .compat_profiles import PROFILE_NAMES
from .compat_tls import TLS_NAMES

log = logging.getLogger("hermes_api_plugin")

API_SERVER = "api_server"  # the platform name the plugin serves (gateway.config.Platform.API_SERVER)

_MODEL_SECTION = "provider, base_url, api_key and model from the model: section of config.yaml"
_DEFAULT_TOOLSETS = "AIAgent's default toolsets instead of platform_toolsets.api_server"

# -- the declared list: every hermes-agent name the plugin uses ------------------------------------------------

AIAGENT = HermesName(
    "run_agent",
    "AIAgent",
    args=(),
    # context_compressor: the compaction summary; the rest: what compat_agents.py touches on a warm agent, as the
    # gateway's `_agent_cache` does (`service_tier` and `event_callback` are set too: agent/agent_init.py assigns
    # every constructor keyword to the attribute of its name, never spelled in run_agent.py where the check looks)
    attrs=(
        "context_compressor",
        "clear_interrupt",
        "release_clients",
        "session_id",
        "max_iterations",
        "reasoning_config",
        "_last_activity_ts",
        "_last_activity_desc",
        "_last_flushed_db_idx",
        "_api_call_count",
    ),
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
        "gateway_session_key",
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
    "hermes_cli.tools_config",
    "_get_platform_tools",
    args=("config", "platform"),
    kwargs=("include_default_mcp_servers",),
    fallback=_DEFAULT_TOOLSETS,
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
    kwargs=("db_path",),
    # the public methods hermes/sessions.py (the SessionDB-backed session store) calls
    attrs=(
        "get_session",
        "list_sessions_rich",
        "get_messages",
        "get_messages_as_conversation",
        "get_compression_tip",
        "create_session",
        "append_message",
        "archive_and_compact",
        "update_token_counts",
        "set_session_title",
        "set_session_archived",
        "get_meta",
        "set_meta",
        "delete_session",
        "end_session",
        "reopen_session",
        "replace_messages",
        "get_next_title_in_lineage",
    ),
    fallback="turns run without Hermes' session store (Hermes does not list API sessions)",
)
_NO_APPROVALS = "no approvals: a flagged command is refused at once, as without a decision"
APPROVAL_SET_KEY = HermesName(
    "tools.approval", "set_current_session_key", args=("session_key",), fallback=_NO_APPROVALS
)
APPROVAL_RESET_KEY = HermesName(
    "tools.approval", "reset_current_session_key", args=("token",), fallback="the key binding ends with the thread"
)
APPROVAL_REGISTER = HermesName(
    "tools.approval", "register_gateway_notify", args=("session_key", "cb"), fallback=_NO_APPROVALS
)
APPROVAL_UNREGISTER = HermesName(
    "tools.approval",
    "unregister_gateway_notify",
    args=("session_key",),
    fallback="pending requests end with Hermes' approval timeout (denied)",
)
APPROVAL_RESOLVE = HermesName(
    "tools.approval",
    "resolve_gateway_approval",
    args=("session_key", "choice"),
    kwargs=("resolve_all",),
    fallback="nothing can be decided: requests end with Hermes' approval timeout (denied)",
)
APPROVAL_BLOCKING = HermesName(
    "tools.approval",
    "has_blocking_approval",
    args=("session_key",),
    fallback="a request's denial by timeout is reported when the turn ends",
)
REDACT_APPROVAL_COMMAND = HermesName(
    "gateway.run", "_redact_approval_command", args=("cmd",), fallback="the command is shown as [redacted]"
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

# The host data of WIRE §14.3 (hermes/host.py): what the built-in api_server reads for /v1/skills, /v1/toolsets,
# /health/detailed, and the dashboard for /api/model/options. Required: a route built on a missing one fails 500.
FIND_SKILLS = HermesName("tools.skills_tool", "_find_all_skills", args=(), kwargs=("skip_disabled",))
SORT_SKILLS = HermesName("tools.skills_tool", "_sort_skills", args=("skills",))
LOAD_CONFIG = HermesName("hermes_cli.config", "load_config", args=())
CONFIGURABLE_TOOLSETS = HermesName("hermes_cli.tools_config", "_get_effective_configurable_toolsets", args=())
TOOLSET_HAS_KEYS = HermesName("hermes_cli.tools_config", "_toolset_has_keys", args=("ts_key", "config"))
RESOLVE_TOOLSET = HermesName("toolsets", "resolve_toolset", args=("name",))
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
PICKER_CONTEXT = HermesName("hermes_cli.inventory", "load_picker_context", args=())
MODELS_PAYLOAD = HermesName(
    "hermes_cli.inventory",
    "build_models_payload",
    args=("ctx",),
    kwargs=(
        "explicit_only",
        "include_unconfigured",
        "picker_hints",
        "canonical_order",
        "pricing",
        "capabilities",
        "refresh",
        "probe_custom_providers",
        "probe_current_custom_provider",
    ),
)

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
    APPROVAL_SET_KEY,
    APPROVAL_RESET_KEY,
    APPROVAL_REGISTER,
    APPROVAL_UNREGISTER,
    APPROVAL_RESOLVE,
    APPROVAL_BLOCKING,
    REDACT_APPROVAL_COMMAND,
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
    FIND_SKILLS,
    SORT_SKILLS,
    LOAD_CONFIG,
    CONFIGURABLE_TOOLSETS,
    TOOLSET_HAS_KEYS,
    RESOLVE_TOOLSET,
    READ_RUNTIME_STATUS,
    PARSE_ACTIVE_AGENTS,
    GATEWAY_BUSY,
    GATEWAY_DRAINABLE,
    RUNTIME_READINESS,
    PICKER_CONTEXT,
    MODELS_PAYLOAD,
    *HOST_NAMES,  # cron jobs and platform ingress (compat_host.py)
    *PROFILE_NAMES,  # profile multiplexing (compat_profiles.py)
    *TLS_NAMES,  # shared provider TLS contexts (compat_tls.py)
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
