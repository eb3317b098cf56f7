"""The core of the compat boundary: what a hermes-agent name declaration is (`HermesName`), which imports are
hermes-agent's, and the call/fallback machinery every feature module of `hermes/compat/` calls its names through.

It imports none of its siblings: each feature module (`agent.py`, `gateway.py`, …) declares its own names with
`HermesName` and calls them with `call` / `usable`; the package (`__init__.py`) collects the declarations.

- **Required** names (`fallback` empty) raise where they are used when missing: the plugin cannot work without
  them; the version pin and the name test (tests/hermes/test_compat.py) protect them.
- **Optional** names: when one is missing (ImportError / AttributeError) or no longer accepts the arguments the
  plugin passes (bound to its signature *before* the call, so a TypeError raised inside the call is not taken for
  a changed signature), its fallback is taken and logged once per process at WARNING, naming the hermes-agent
  name and the fallback. Whether an exception of the call itself has a fallback is decided, and said, per call.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
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


# -- fallbacks ----------------------------------------------------------------------------------------------

MISSING: Any = object()  # "the name is unusable": the caller takes its fallback
_warned: set[str] = set()  # qualnames whose fallback was logged in this process
_warned_lock = threading.Lock()  # fallbacks are taken on worker threads and the event loop alike


def warn_fallback(name: HermesName, problem: str) -> None:
    """Log the fallback of `name` at WARNING once per process: a version difference is one line, not one a turn."""
    with _warned_lock:
        if name.qualname in _warned:
            return
        _warned.add(name.qualname)
    log.warning("[API Server] hermes-agent %s %s; falling back to: %s", name.qualname, problem, name.fallback)


def usable(name: HermesName, *args: Any, **kwargs: Any) -> Any:
    """The optional callable `name`, checked to accept these arguments, or MISSING (logged once)."""
    assert name.fallback and len(args) == len(name.args or ()) and set(kwargs) <= set(name.kwargs), name
    try:
        target = name.resolve()
    except (ImportError, AttributeError) as exc:  # the module or the attribute is gone (another hermes-agent)
        warn_fallback(name, f"is missing ({type(exc).__name__}: {exc})")
        return MISSING
    try:
        inspect.signature(target).bind(*args, **kwargs)
    except TypeError as exc:  # its signature changed (or it is no longer callable): calling it would be a guess
        warn_fallback(name, f"no longer accepts the arguments the plugin passes ({exc})")
        return MISSING
    except ValueError:  # no introspectable signature (a builtin, e.g. a weakref): the call itself will tell
        pass
    return target


class Installation:
    """A stand-in the plugin puts into hermes-agent (or the SDK it sends with) at most once per process.

    `once(put)` runs `put` the first time only; `put` returns whether it installed the stand-in (False: it logged its
    fallback, and hermes-agent stays as it ships for the life of the process — a check that failed once is not run
    again on every turn). Threads that race to it wait for the first.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tried = False
        self.done = False

    def once(self, put: Callable[[], bool]) -> None:
        if self._tried:
            return
        with self._lock:
            if not self._tried:
                self.done = put()
                self._tried = True


def call(name: HermesName, *args: Any, **kwargs: Any) -> Any:
    """Call the optional callable `name`; MISSING when it is unusable. Exceptions of the call propagate."""
    target = usable(name, *args, **kwargs)
    return MISSING if target is MISSING else target(*args, **kwargs)
