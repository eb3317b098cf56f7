"""Agent runtimes and the choice between them (`agent.runtime`)."""

from __future__ import annotations

import logging

from ..config import Settings
from .base import AgentRuntime
from .scripted import ScriptedRuntime, default_script_path, load_script

log = logging.getLogger("hermes_api_plugin")


class RuntimeUnavailable(RuntimeError):
    """The configured runtime cannot run in this installation."""


def select_runtime(settings: Settings) -> AgentRuntime:
    """`scripted` unless the configuration asks for (and can run) the real agent."""
    if settings.runtime == "hermes":
        raise RuntimeUnavailable(
            "agent.runtime is 'hermes', but this build has no hermes runtime yet; set agent.runtime: scripted"
        )
    if settings.runtime == "auto":
        if settings.model.configured:
            log.info("[API Server] A model provider is configured, but this build has no hermes runtime yet: "
                     "using the scripted runtime (offline, replays a script; not a model)")
        else:
            log.info("[API Server] No model provider configured: using the scripted runtime "
                     "(offline, replays a script; not a model)")
    script_path = settings.script_path or default_script_path()
    runtime = ScriptedRuntime(load_script(script_path))
    log.info("[API Server] Scripted runtime script: %s", script_path)
    return runtime


__all__ = ["AgentRuntime", "RuntimeUnavailable", "ScriptedRuntime", "select_runtime"]
