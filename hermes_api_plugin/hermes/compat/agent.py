"""The compat boundary for Hermes' agent (`run_agent.AIAgent`): importing it, what `hermes gateway` would build one
with (provider, model, toolsets, reasoning, fallback chain — `gateway.run`'s private helpers), running and
interrupting a turn, what a turn reports (tool failures, the compaction summary), and warm agents (issue 14):
preparing a cached `AIAgent` for its conversation's next turn and releasing one, as hermes-agent 0.19.0's own
messaging gateway does with its `_agent_cache` (`GatewayRunner._init_cached_agent_for_turn`, the per-message
callback assignments, `AIAgent.release_clients`).

Nothing is imported at module level: importing `run_agent` takes seconds, loads `$HERMES_HOME/.env` and creates
files under `$HERMES_HOME`, so the hermes runtime calls these functions from its worker threads.
"""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from collections.abc import Mapping
from typing import Any

from ._core import API_SERVER, MISSING, HermesName, call, usable, warn_fallback

_MODEL_SECTION = "provider, base_url, api_key and model from the model: section of config.yaml"
_DEFAULT_TOOLSETS = "AIAgent's default toolsets instead of platform_toolsets.api_server"

AIAGENT = HermesName(
    "run_agent",
    "AIAgent",
    args=(),
    # context_compressor: the compaction summary; the rest: what the warm-agent functions below touch on a warm
    # agent, as the gateway's `_agent_cache` does (`service_tier` and `event_callback` are set too:
    # agent/agent_init.py assigns every constructor keyword to the attribute of its name, never spelled in
    # run_agent.py where the check looks)
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
        "clarify_callback",
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

NAMES: tuple[HermesName, ...] = (
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
)

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
        warn_fallback(COMPACTION_SUMMARY, f"is not readable on the agent ({exc})")
        return ""
    return summary if isinstance(summary, str) else ""


# -- what `hermes gateway` would pass to AIAgent ----------------------------------------------------------------
# A RuntimeError from these helpers (no usable provider credentials, say) propagates on purpose: it is the
# turn's error, which the client must see, not a version difference.


def runtime_agent_kwargs(provider: str | None = None) -> dict[str, Any] | None:
    """Provider, credentials, API mode (and a fallback provider's model under "model") for a new AIAgent, as
    `hermes gateway` resolves them from config.yaml and .env; for `provider` when given. None: use the model:
    section."""
    resolved = call(RUNTIME_KWARGS_FOR_PROVIDER, provider) if provider else call(RUNTIME_KWARGS)
    return None if resolved is MISSING else dict(resolved)


def gateway_model() -> str | None:
    """The model `hermes gateway` runs by default; None when unknown."""
    model = call(GATEWAY_MODEL)
    return None if model is MISSING else (model or None)


def platform_toolsets(platform: str = API_SERVER) -> list[str] | None:
    """The toolsets config.yaml enables for `platform` (sorted); None: AIAgent's defaults."""
    config = call(GATEWAY_CONFIG)
    if config is MISSING:
        return None
    toolsets = call(PLATFORM_TOOLS, config, platform)
    return None if toolsets is MISSING else sorted(toolsets)


def reasoning_config(model: str) -> dict[str, Any] | None:
    """The reasoning settings config.yaml gives `model` (per-model override, else agent.reasoning_effort)."""
    config = call(REASONING_CONFIG, model)
    return None if config is MISSING else config


def fallback_model() -> list[Any] | None:
    """The fallback provider chain of config.yaml (fallback_providers / fallback_model); None: none."""
    chain = call(FALLBACK_MODEL)
    return None if chain is MISSING else chain


# -- during a turn --------------------------------------------------------------------------------------------


def detect_tool_failure(tool_name: str, result: Any) -> bool:
    """Whether a tool result means the tool failed, by Hermes' own test (the one its CLI shows)."""
    target = usable(DETECT_TOOL_FAILURE, tool_name, result)
    if target is not MISSING:
        try:
            return bool(target(tool_name, result)[0])
        except Exception as exc:
            # the JSON reading below decides, rather than failing the tool's progress event
            warn_fallback(DETECT_TOOL_FAILURE, f"raised {type(exc).__name__}: {exc}")
    try:
        data = json.loads(result) if isinstance(result, str) else result
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    return data.get("exit_code") not in (None, 0) or bool(data.get("error")) or data.get("success") is False


# -- warm agents (issue 14): everything here runs in the turn's worker thread ------------------------------------


def prepare_reused_agent(agent: Any, per_turn: Mapping[str, Any]) -> None:
    """Make a cached agent this turn's: its per-turn settings and callbacks (None where this turn has none), no
    interrupt left over, and the per-turn counters the gateway resets — above all the SessionDB flush cursor, which
    left as it was would keep the new turn's messages out of state.db."""
    for name, value in per_turn.items():
        setattr(agent, name, value)
    agent.clear_interrupt()
    agent._last_activity_ts = time.time()
    agent._last_activity_desc = "starting new turn (cached)"
    agent._last_flushed_db_idx = 0
    agent._api_call_count = 0


def release_agent(agent: Any) -> None:
    """Close a cached agent's provider clients, leaving the session's terminal, browser and memory to the session (a
    later turn builds a new agent on them): the gateway's soft release."""
    agent.release_clients()
