"""Where a session lives when each gateway host keeps its own sessions (issue 15, part 3).

With the `hermes` runtime the sessions are Hermes' own: `state.db` in the Hermes home of each host (of each profile,
WIRE §14.3), not the shared PostgreSQL store. Everything else is shared, so a request bound to a session — an
`X-Hermes-Session-Id`, `/api/sessions/{id}/…`, a session-key binding, a `previous_response_id` or conversation
chain — can arrive at a gateway whose `state.db` does not have that session. Running it there would start an empty
conversation under the old id, or fork the session's history in two. Instead the shared store records which host
holds each session the API created or ran a turn on (`session_hosts`), and such a request answers

    409 session_on_other_host   (type conflict_error, param session_id; the message names the host)

before anything is admitted: the client (or its load balancer, by sticky sessions) sends it to that host. A stateless
chat whose derived session another host keeps is another conversation here: it gets a session of its own
(submission/continuity.py), never that id.

A host is named `<hostname>:<Hermes home>` — two gateways on one machine with one Hermes home share their
`state.db`, so they are one host here. `Placement(None)` (sessions in the shared store, or a store nobody shares)
checks and records nothing.
"""

from __future__ import annotations

import socket
from pathlib import Path

from ..core.errors import ApiError
from ..store.roles import PlacementStore, SessionStore


def host_name(home: Path) -> str:
    """This host's name for the sessions of the Hermes home `home`."""
    return f"{socket.gethostname()}:{home.expanduser().resolve()}"


def session_on_other_host(session_id: str, host: str) -> ApiError:
    return ApiError(
        409,
        f"Session {session_id} is kept by another gateway host ({host}); send requests for it there",
        type="conflict_error",
        code="session_on_other_host",
        param="session_id",
    )


class Placement:
    """The session placement of one session store: `host` names it, None when sessions are shared."""

    def __init__(self, store: PlacementStore, sessions: SessionStore, host: str | None) -> None:
        self.store = store
        self.sessions = sessions
        self.host = host

    async def other_host(self, session_id: str) -> str | None:
        """The other host recorded as keeping `session_id`, if any (whether this host's store has it too is not
        looked at)."""
        if self.host is None:
            return None
        elsewhere = await self.store.session_host(session_id)
        return None if elsewhere == self.host else elsewhere

    async def check(self, session_id: str) -> None:
        """409 session_on_other_host when another host keeps `session_id` and this host's store lacks it."""
        elsewhere = await self.other_host(session_id)
        if elsewhere is not None and await self.sessions.get_session(session_id) is None:
            raise session_on_other_host(session_id, elsewhere)

    async def record(self, session_id: str) -> None:
        """This host keeps `session_id` (a session created here, or a turn admitted on it here)."""
        if self.host is not None:
            await self.store.set_session_host(session_id, self.host)
