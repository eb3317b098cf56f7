"""The compat boundary for hermes-agent's config reads (issue 25): the copy `load_config` hands out, made cheaper.

hermes-agent 0.19.0's `hermes_cli.config.load_config()` caches the parsed config.yaml and returns a
`copy.deepcopy` of it on every call, because its callers may change what they get. A turn calls it four times before
its provider request leaves (the tool-output spill settings, the streaming call's timeouts, …) and about as often
after the answer: with the default config (about 730 dicts, lists and values) each copy takes ~0.6 ms of CPU, 2.9 ms
of a follow-up turn's first reasoning byte here. `copy.deepcopy` pays for its generality per object: a memo and
keep-alive entry, a dispatch on the type, a reduce protocol for what it does not know.

`copy_config_plainly()` (idempotent, thread-safe) puts a stand-in for the `copy` module into `hermes_cli.config`
whose `deepcopy(x)` copies plain data — dicts and lists, with str, int, float, bool, None and bytes leaves: what YAML
gives — in one pass, and hands everything else (a `memo` argument, a tuple, a set, a dict subclass, any other type)
to the real `copy.deepcopy`, with the same memo. The copy is the one `copy.deepcopy` makes: new dicts and lists all
the way down, the same immutable leaves, a container reached twice (a YAML alias) copied once and shared as in the
original. Every other name of the stand-in is the real module's. `api_server.agents.fast_config_copies: false`
leaves hermes-agent as it ships.
"""

from __future__ import annotations

import copy
import importlib
from types import ModuleType
from typing import Any

from ._core import HermesName, Installation, warn_fallback

CONFIG_COPY = HermesName(
    "hermes_cli.config",
    "copy",
    fallback="copy.deepcopy of the whole config on every load_config(), as hermes-agent ships",
)
NAMES: tuple[HermesName, ...] = (CONFIG_COPY,)

# Immutable leaves a deep copy returns as they are (copy.deepcopy's atomic types that YAML produces).
_LEAVES = frozenset({str, int, float, bool, type(None), bytes})


def plain_deepcopy(value: Any) -> Any:
    """What `copy.deepcopy(value)` returns, made without its per-object machinery while the data is plain."""
    memo: dict[int, Any] = {}
    leaves = _LEAVES

    def copied(item: Any) -> Any:
        kind = type(item)
        if kind is dict:
            done = memo.get(id(item))
            if done is not None:
                return done
            out: dict[Any, Any] = {}
            memo[id(item)] = out
            for key, inner in item.items():
                if type(key) not in leaves:
                    key = copy.deepcopy(key, memo)
                out[key] = inner if type(inner) in leaves else copied(inner)
            return out
        if kind is list:
            done = memo.get(id(item))
            if done is not None:
                return done
            listed: list[Any] = []
            memo[id(item)] = listed
            for inner in item:
                listed.append(inner if type(inner) in leaves else copied(inner))
            return listed
        if kind in leaves:
            return item
        # not plain (a tuple, a set, a subclass, an object): the real thing, sharing the memo so aliases still hold
        return copy.deepcopy(item, memo)

    return copied(value)


class _PlainCopy(ModuleType):
    """`copy` as `hermes_cli.config` sees it: `deepcopy` without a memo is `plain_deepcopy`; the rest is `copy`."""

    def __init__(self) -> None:
        super().__init__("copy")

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    def deepcopy(self, x: Any, memo: dict[int, Any] | None = None) -> Any:
        if memo is not None:
            return copy.deepcopy(x, memo)
        return plain_deepcopy(x)


_installation = Installation()


def copy_config_plainly() -> None:
    """Make `load_config()`'s defensive copy with `plain_deepcopy` (once per process); when `hermes_cli.config` is
    not what the plugin knows, its fallback (hermes-agent's own copy) is logged once."""
    _installation.once(_put)


def _put() -> bool:
    try:
        module: Any = importlib.import_module(CONFIG_COPY.module)
        if CONFIG_COPY.resolve() is not copy:  # someone else's stand-in, or no longer the copy module: leave it
            raise AttributeError(f"{CONFIG_COPY.qualname} is not the copy module")
    except (ImportError, AttributeError) as exc:
        warn_fallback(CONFIG_COPY, f"is unusable ({type(exc).__name__}: {exc})")
        return False
    setattr(module, CONFIG_COPY.path, _PlainCopy())
    return True


def config_copies_plain() -> bool:
    """Whether `copy_config_plainly()` is in place in this process."""
    return _installation.done
