"""The compat boundary for Hermes' profile multiplexing (WIRE §14.3: `/p/{profile}/…` when
`gateway.multiplex_profiles` is on): whether this process multiplexes, which profiles it serves, and the runtime
scope that points a request or a turn at one profile's home (its config, skills, memory, sessions, cron jobs) and
its credentials.

hermes-agent 0.19.0's `GatewayRunner` marks the process a multiplexer from its config at start-up
(`agent.secret_scope.set_multiplex_active`); from then on a credential read outside a profile scope fails closed
(`UnscopedSecretError`), which is why the built-in api_server enters the default profile's scope for requests
without a prefix, and so does this plugin. Everything fails closed here too: without the scope function no profile
is served, so a profile's request never runs with another profile's home or keys.

Part of the compat boundary (with `compat.py` and `compat_names.py`, which lists these declarations in
`HERMES_NAMES`): only these modules spell hermes-agent's private names.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from .compat_declare import HermesName

MULTIPLEX_ACTIVE = HermesName(
    "agent.secret_scope",
    "is_multiplex_active",
    args=(),
    fallback="the process is not a profile multiplexer: a /p/{profile} prefix is ignored",
)
PROFILES_TO_SERVE = HermesName(
    "hermes_cli.profiles",
    "profiles_to_serve",
    args=(),
    kwargs=("multiplex",),
    fallback="no profile is served under /p/{profile} (404 profile_not_found)",
)
PROFILE_RUNTIME_SCOPE = HermesName(
    "gateway.run",
    "_profile_runtime_scope",
    args=("profile_home",),
    fallback="no profile is served under /p/{profile} (404 profile_not_found): none can be scoped",
)

PROFILE_NAMES: tuple[HermesName, ...] = (MULTIPLEX_ACTIVE, PROFILES_TO_SERVE, PROFILE_RUNTIME_SCOPE)


def multiplexing() -> bool:
    """Whether this process serves several profiles (`gateway.multiplex_profiles`, as the gateway runner set it)."""
    from .compat_names import _call

    return _call(MULTIPLEX_ACTIVE) is True  # _MISSING (no such flag here) is not True


def served_profiles() -> Mapping[str, Path]:
    """The profiles a multiplexer serves, by name (the default one included), each with its home; empty when
    hermes-agent cannot say or cannot scope them. Scans the profiles folder: call it in a worker thread."""
    from .compat_names import _MISSING, _call, _target

    if _target(PROFILE_RUNTIME_SCOPE, Path()) is _MISSING:
        return {}
    served = _call(PROFILES_TO_SERVE, multiplex=True)
    if served is _MISSING:
        return {}
    return {str(name): Path(home) for name, home in served}


def profile_scope(home: Path | None) -> AbstractContextManager[Any]:
    """Hermes' runtime scope for `home` (None: the gateway's own profile — its scope while multiplexing, as the
    built-in server enters it, else nothing to enter). Enter and leave it in one thread or task: it sets
    context variables."""
    from .compat_names import _MISSING, _target

    if home is None:
        if not multiplexing():
            return nullcontext()
        from .compat import hermes_home

        home = hermes_home()
    scope = _target(PROFILE_RUNTIME_SCOPE, home)
    if scope is _MISSING:
        # served_profiles() serves none without it: only the gateway's own profile gets here, unscoped as upstream
        return nullcontext()
    return scope(home)
