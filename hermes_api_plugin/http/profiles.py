"""Which host profile a request is for, and what that selects (WIRE §14.3: the `/p/{profile}/…` mirror of every
route when hermes-agent's `gateway.multiplex_profiles` is on).

The listener strips a `/p/{profile}` prefix before routing (`gateway/runner.py`, `PROFILE_PREFIX`), so every route
is mirrored without a second route table and route names stay canonical. After authentication this middleware
decides, as hermes-agent 0.19.0's built-in server does:

| host                  | prefix | multiplexing | the request                                                     |
|-----------------------|--------|--------------|-----------------------------------------------------------------|
| none (reference gw)   | yes    | —            | 501 `not_supported_by_host`                                     |
| Hermes                | no     | no           | the gateway's own profile, nothing entered                      |
| Hermes                | yes    | no           | the prefix is ignored: the gateway's own profile                |
| Hermes                | no     | yes          | the gateway's own profile, inside its scope (credentials fail   |
|                       |        |              | closed outside one in a multiplexer)                            |
| Hermes                | yes    | yes          | a served profile: its `Profile`, inside its scope; else 404     |
|                       |        |              | `profile_not_found`                                             |
| any                   | yes    | any          | `GET /health`, `/v1/health` (public): the prefix is ignored, so |
|                       |        |              | served and unknown names answer alike (issue 20, defect 6)      |

A `Profile` is what differs per profile: the credential scope (WIRE §1.3: the profile name is part of it, so
responses, conversations, idempotency keys, session-key bindings and live runs of one profile are another's
404), the session store (the profile's own state.db), the advertised model name, and the submitter and chain
resolution built on those, whose turns run in the profile's home. The turn registry, the admission cap, the
plugin's store and the API key are the gateway's, shared (each turn remembers the scope that admitted it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from ..cluster.placement import Placement, host_name
from ..core.errors import ApiError, not_found, not_supported_by_host
from ..protocol.common import credential_scope
from ..runtimes.host_data import HostData
from ..store.roles import SessionStore
from ..submission.conversations import Conversations
from ..submission.submit import Submitter
from .app_keys import PROFILE_PREFIX, RUNTIME
from .middleware import PUBLIC_PATHS

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Profile:
    """What one host profile selects for a request."""

    name: str
    home: Path | None  # None: the gateway's own profile (its turns enter no other home)
    scope: str  # the credential scope (WIRE §1.3)
    model_name: str  # what /v1/models advertises and replies echo
    sessions: SessionStore
    submitter: Submitter
    conversations: Conversations


class Profiles:
    """The gateway's own profile and the multiplexed ones, each built once, on its first request."""

    def __init__(self, own: Profile, build: Callable[[str, Path], Profile]) -> None:
        self.own = own
        self._build = build
        self._built: dict[tuple[str, Path], Profile] = {}

    def names_by_scope(self) -> dict[str, str]:
        """Every profile built so far (the gateway's own first) by credential scope: what labels a turn's metrics."""
        names = {profile.scope: profile.name for profile in self._built.values()}
        names[self.own.scope] = self.own.name
        return names

    def get(self, name: str, home: Path) -> Profile:
        if name == self.own.name:
            return self.own
        key = (name, home)
        if key not in self._built:
            self._built[key] = self._build(name, home)
        return self._built[key]


PROFILES = web.AppKey("profiles", Profiles)
_PROFILE = web.RequestKey("profile", Profile)


def profile_of(request: web.Request) -> Profile:
    """The request's profile (the gateway's own unless a served `/p/{profile}` prefix chose another)."""
    return request.get(_PROFILE) or request.app[PROFILES].own


def profile_not_found() -> ApiError:
    return not_found("Unknown or unconfigured profile", code="profile_not_found", param="profile")


@web.middleware
def profile_middleware(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    """The decision table of the module docstring; runs after authentication. A request the gateway's own profile
    serves is handed on, not awaited (no coroutine of this middleware held while its reply runs: http/middleware.py)."""
    prefix = request.get(PROFILE_PREFIX)
    if prefix is not None and request.method in ("GET", "HEAD") and request.path in PUBLIC_PATHS:
        # The public liveness answer names no profile: the same for every name, served or not, so a request without
        # the key cannot enumerate the served profiles (issue 20, defect 6); upstream ignores the prefix likewise.
        return handler(request)
    host: HostData | None = request.app[RUNTIME].host_data
    if host is None:
        if prefix is not None:
            raise not_supported_by_host()
        return handler(request)
    if not host.multiplexing():
        return handler(request)
    return _in_profile(request, handler, host, prefix)


async def _in_profile(request: web.Request, handler: Handler, host: HostData, prefix: str | None) -> web.StreamResponse:
    """A multiplexing host's request, run inside its profile's scope (the prefix's, or the gateway's own)."""
    scope: AbstractContextManager[Any]
    if prefix is None:
        scope = host.profile_scope(None)
    else:
        served: Mapping[str, Path] = await asyncio.to_thread(host.served_profiles)
        home = served.get(prefix)
        if home is None:
            raise profile_not_found()
        profile = request.app[PROFILES].get(prefix, home)
        request[_PROFILE] = profile
        scope = host.profile_scope(profile.home)
    with scope:
        return await handler(request)


def profile_builder(
    own: Submitter, runtime_sessions: Callable[[Path], SessionStore | None], fallback_sessions: SessionStore
) -> Callable[[str, Path], Profile]:
    """How a multiplexed profile is built: the gateway's submitter and store, the profile's scope, sessions
    (its own state.db; the plugin's tables where the runtime keeps none), their placement, and name."""

    def build(name: str, home: Path) -> Profile:
        key = own.settings.key
        assert key is not None  # create_app refuses to start without one
        scope = credential_scope(name, key)
        profile_sessions = runtime_sessions(home)
        sessions = profile_sessions or fallback_sessions
        # The profile's own state.db is this host's: on a shared store its sessions are placed (cluster/placement.py).
        host = host_name(home) if profile_sessions is not None and own.remote_turns.shared else None
        placement = Placement(own.store, sessions, host)
        submitter = own.for_profile(scope, home, placement, name)
        conversations = Conversations(own.store, sessions, scope, placement, own.waits)
        return Profile(name, home, scope, name, sessions, submitter, conversations)

    return build
