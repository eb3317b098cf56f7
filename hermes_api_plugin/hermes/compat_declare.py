"""What a hermes-agent name declaration is (`HermesName`) and which imports are hermes-agent's: the vocabulary of
the compat boundary (`compat.py`, `compat_names.py`), apart from the declarations themselves."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

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
