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
import json
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from . import compat_tls
from .compat_names import (  # noqa: F401 - re-exported: compat is the one entry point
    _MISSING,
    ADAPTER_BASE,
    AIAGENT,
    API_SERVER,
    APPROVAL_BLOCKING,
    APPROVAL_REGISTER,
    APPROVAL_RESET_KEY,
    APPROVAL_RESOLVE,
    APPROVAL_SET_KEY,
    APPROVAL_UNREGISTER,
    CLEAR_SESSION_VARS,
    COMPACTION_SUMMARY,
    CONFIGURABLE_TOOLSETS,
    DETECT_TOOL_FAILURE,
    FALLBACK_MODEL,
    FIND_SKILLS,
    GATEWAY_CONFIG,
    GATEWAY_MODEL,
    GATEWAY_PLATFORMS,
    GATEWAY_RUNNER,
    GATEWAY_RUNNER_REF,
    HERMES_HOME,
    HERMES_NAMES,
    HERMES_TOP_LEVEL_MODULES,
    LOAD_CONFIG,
    PLATFORM_API_SERVER,
    PLATFORM_CONFIG,
    PLATFORM_TOOLS,
    REASONING_CONFIG,
    REDACT_APPROVAL_COMMAND,
    REGISTER_PLATFORM,
    RESOLVE_TOOLSET,
    RUNTIME_KWARGS,
    RUNTIME_KWARGS_FOR_PROVIDER,
    SEND_RESULT,
    SESSION_DB,
    SET_SESSION_VARS,
    SORT_SKILLS,
    TOOLSET_HAS_KEYS,
    HermesName,
    _call,
    _target,
    _warn_fallback,
)

log = logging.getLogger("hermes_api_plugin")

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


def share_tls_contexts() -> None:
    """One SSL context per CA bundle for every provider client of this process (`compat_tls.py`); when hermes-agent's
    TLS helpers are not what the plugin knows, its fallback (a context per client, as shipped) is logged once."""
    try:
        compat_tls.share_tls_contexts()
    except (ImportError, AttributeError) as exc:
        _warn_fallback(compat_tls.RESOLVE_HTTPX_VERIFY, f"is unusable ({type(exc).__name__}: {exc})")


def tls_stats() -> compat_tls.TlsStats:
    """Whether provider TLS contexts are shared, and how often one was built and reused (`/health/detailed`)."""
    return compat_tls.tls_stats()


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


def bind_session_vars(session_id: str, session_key: str | None = None) -> list[Any] | None:
    """Mark the calling thread's context as an api_server turn of `session_id` without async delivery, as Hermes'
    own api_server does, so Hermes' tools know they run in a gateway turn; `session_key` (default: the session id)
    is the channel's key (X-Hermes-Session-Key), as upstream binds it. Returns the tokens for
    clear_session_vars (None: not bound). An exception of the call itself propagates and fails the turn: it is a
    fault in Hermes, not a version difference, and tools must not run in a context bound halfway."""
    tokens = _call(
        SET_SESSION_VARS,
        platform=API_SERVER,
        chat_id=session_id,
        session_key=session_key or session_id,
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


def session_db(home: Path | None = None) -> Any | None:
    """Hermes' session store (`$HERMES_HOME/state.db`, or a profile's `home/state.db`), so API sessions show where
    Hermes lists sessions; None when unavailable."""
    kwargs = {} if home is None else {"db_path": home / "state.db"}
    target = _target(SESSION_DB, **kwargs)
    if target is _MISSING:
        return None
    try:
        return target(**kwargs)
    except Exception as exc:
        # optional for a turn: it runs without the store
        _warn_fallback(SESSION_DB, f"could not be opened ({type(exc).__name__}: {exc})")
        return None


# -- dangerous-command approvals (tools.approval, WIRE.md §14.2) ------------------------------------------------


def bind_approvals(key: str, notify: Callable[[dict[str, Any]], None]) -> Any | None:
    """Make `key` the calling thread's approval session key and register `notify` for it, so a flagged command
    blocks for a decision instead of failing. The token for unbind_approvals; None: no approvals here."""
    token = _call(APPROVAL_SET_KEY, key)
    if token is _MISSING:
        return None
    if _call(APPROVAL_REGISTER, key, notify) is _MISSING:
        _call(APPROVAL_RESET_KEY, token)
        return None
    return token


def release_approvals(key: str) -> None:
    """Unregister the notify callback of `key`; Hermes wakes every request still waiting, denied. Idempotent."""
    _call(APPROVAL_UNREGISTER, key)


def unbind_approvals(key: str, token: Any) -> None:
    """Undo bind_approvals (after the turn, in its worker thread's `finally`)."""
    try:
        release_approvals(key)
    finally:
        _call(APPROVAL_RESET_KEY, token)


def resolve_approval(key: str, choice: str, resolve_all: bool) -> int:
    """Decide the oldest waiting request of `key` (all of them with `resolve_all`); how many were decided."""
    resolved = _call(APPROVAL_RESOLVE, key, choice, resolve_all=resolve_all)
    return 0 if resolved is _MISSING else int(resolved)


def approval_waiting(key: str) -> bool | None:
    """Whether a request of `key` still waits in Hermes' queue; None when that cannot be asked."""
    waiting = _call(APPROVAL_BLOCKING, key)
    return None if waiting is _MISSING else bool(waiting)


def redact_approval_command(command: Any) -> str:
    """The command as the gateway shows it in an approval prompt: credentials redacted (force, as upstream)."""
    target = _target(REDACT_APPROVAL_COMMAND, command)
    if target is _MISSING:
        return "[redacted]"
    try:
        return str(target(command))
    except Exception as exc:
        # never the raw command: it may hold the very credential the guard flagged
        _warn_fallback(REDACT_APPROVAL_COMMAND, f"raised {type(exc).__name__}: {exc}")
        return "[redacted]"


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


# -- host data (WIRE §14.3; hermes/host.py reads the public names) --------------------------------------------
# Blocking (files, config): callers run these in a worker thread. Their exceptions propagate: the route answers 500.


def all_skills() -> list[dict[str, Any]]:
    """The installed skills the agent loads (disabled ones left out), sorted as the built-in `GET /v1/skills` lists
    them."""
    return list(SORT_SKILLS.resolve()(FIND_SKILLS.resolve()(skip_disabled=False)))


def toolsets_listing(platform: str = API_SERVER) -> list[dict[str, Any]]:
    """The configurable toolsets with their state for `platform`, as the built-in `GET /v1/toolsets` builds them."""
    config = LOAD_CONFIG.resolve()()
    enabled = PLATFORM_TOOLS.resolve()(config, platform, include_default_mcp_servers=False)
    has_keys = TOOLSET_HAS_KEYS.resolve()
    data = []
    for name, label, description in CONFIGURABLE_TOOLSETS.resolve()():
        entry = {"name": name, "label": label, "description": description, "enabled": name in enabled}
        data.append({**entry, "configured": has_keys(name, config), "tools": _toolset_tools(name)})
    return data


def _toolset_tools(name: str) -> list[str]:
    try:
        return sorted(set(RESOLVE_TOOLSET.resolve()(name)))
    except Exception:  # one unresolvable toolset (a broken plugin) lists no tools, as upstream
        return []
