"""The compat boundary for Hermes' profile multiplexing (WIRE §14.3: `/p/{profile}/…` when
`gateway.multiplex_profiles` is on): whether this process multiplexes, which profiles it serves, and the runtime
scope that points a request or a turn at one profile's home (its config, skills, memory, sessions, cron jobs) and
its credentials.

hermes-agent 0.19.0's `GatewayRunner` marks the process a multiplexer from its config at start-up
(`agent.secret_scope.set_multiplex_active`); from then on a credential read outside a profile scope fails closed
(`UnscopedSecretError`), which is why the built-in api_server enters the default profile's scope for requests
without a prefix, and so does this plugin. Everything fails closed here too: without the scope function no profile
is served, so a profile's request never runs with another profile's home or keys.

"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from . import home
from ._core import MISSING, HermesName, call, usable

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

NAMES: tuple[HermesName, ...] = (MULTIPLEX_ACTIVE, PROFILES_TO_SERVE, PROFILE_RUNTIME_SCOPE)


def multiplexing() -> bool:
    """Whether this process serves several profiles (`gateway.multiplex_profiles`, as the gateway runner set it)."""
    return call(MULTIPLEX_ACTIVE) is True  # MISSING (no such flag here) is not True


def served_profiles() -> Mapping[str, Path]:
    """The profiles a multiplexer serves, by name (the default one included), each with its home; empty when
    hermes-agent cannot say or cannot scope them. Scans the profiles folder: call it in a worker thread."""
    if usable(PROFILE_RUNTIME_SCOPE, Path()) is MISSING:
        return {}
    served = call(PROFILES_TO_SERVE, multiplex=True)
    if served is MISSING:
        return {}
    return {str(name): Path(profile_home) for name, profile_home in served}


def profile_scope(profile_home: Path | None) -> AbstractContextManager[Any]:
    """Hermes' runtime scope for `profile_home` (None: the gateway's own profile — its scope while multiplexing, as
    the built-in server enters it, else nothing to enter). Enter and leave it in one thread or task: it sets
    context variables."""
    if profile_home is None:
        if not multiplexing():
            return nullcontext()
        profile_home = home.hermes_home()
    scope = usable(PROFILE_RUNTIME_SCOPE, profile_home)
    if scope is MISSING:
        # served_profiles() serves none without it: only the gateway's own profile gets here, unscoped as upstream
        return nullcontext()
    return scope(profile_home)
