"""Agent runtimes and the choice between them (`agent.runtime`)."""

from __future__ import annotations

import logging

from ..config.settings import Settings
from ..hermes import compat
from .base import AgentRuntime
from .hermes import HermesRuntime
from .scripted import ScriptedRuntime, default_script_path, load_script

log = logging.getLogger("hermes_api_plugin")

INSTALL_HINT = "pip install 'hermes-api-plugin[hermes]'"


class RuntimeUnavailable(RuntimeError):
    """The configured runtime cannot run in this installation."""


def select_runtime(settings: Settings) -> AgentRuntime:
    """`agent.runtime`: `hermes`, `scripted`, or `auto` — `hermes` when hermes-agent is importable and a model
    provider is configured, else `scripted`. The choice is logged."""
    if settings.runtime == "hermes":
        if not compat.agent.hermes_available():
            raise RuntimeUnavailable(
                f"agent.runtime is 'hermes', but hermes-agent is not installed here ({INSTALL_HINT}); "
                "or set agent.runtime: scripted"
            )
        return _hermes(settings, "agent.runtime: hermes")
    if settings.runtime == "auto":
        if settings.model.configured and compat.agent.hermes_available():
            return _hermes(settings, "hermes-agent is installed and a model provider is configured")
        if settings.model.configured:
            log.info(
                "[API Server] A model provider is configured, but hermes-agent is not installed (%s): "
                "using the scripted runtime (offline, replays a script; not a model)",
                INSTALL_HINT,
            )
        else:
            log.info(
                "[API Server] No model provider configured: using the scripted runtime "
                "(offline, replays a script; not a model)"
            )
    return scripted_runtime(settings)


def scripted_runtime(settings: Settings) -> ScriptedRuntime:
    script_path = settings.script_path or default_script_path()
    runtime = ScriptedRuntime(load_script(script_path))
    log.info("[API Server] Scripted runtime script: %s", script_path)
    return runtime


def _hermes(settings: Settings, why: str) -> HermesRuntime:
    model = settings.model
    where = (
        ", ".join(
            f"{k}={v}"
            for k, v in (("provider", model.provider), ("model", model.default), ("base_url", model.base_url))
            if v
        )
        or "resolved by Hermes"
    )
    log.info("[API Server] Agent runtime: hermes (the Hermes AIAgent; %s; %s)", why, where)
    runtime = HermesRuntime(settings)
    runtime.start_warm_up()
    return runtime


__all__ = ["AgentRuntime", "HermesRuntime", "RuntimeUnavailable", "ScriptedRuntime", "select_runtime"]
