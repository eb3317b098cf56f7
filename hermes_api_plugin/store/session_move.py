"""Moving the plugin's own sessions into the host's session store, once (WIRE §14.1).

Before sessions were Hermes' sessions, the plugin kept the API's sessions in its own SQLite tables, beside
`state.db`. A gateway whose sessions are now Hermes' (the `hermes` runtime) moves them at start-up: each session the
host does not know yet is created there with its live transcript (the messages a compaction archived stay behind:
Hermes' store has no place for a foreign archive) and its title, pinned and archived flags; then it is deleted from
the plugin's tables, which keep only responses, admissions, journals and conversation names. Copy first, delete
after: a start interrupted midway copies nothing twice (a session the host already has is only deleted here).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from ..core.errors import ApiError
from .roles import SessionStore

log = logging.getLogger("hermes_api_plugin")
_PAGE = 100


async def move_sessions(
    source: SessionStore, target: SessionStore, moved_here: Callable[[str], Awaitable[None]] | None = None
) -> int:
    """Move every session of `source` into `target`; returns how many moved. A session that cannot be moved (the
    target refuses it) stays in `source`, logged, and is tried again at the next start. `moved_here(id)` runs for
    each moved session (a shared store then records that this host keeps it, placement.py)."""
    moved = kept = 0
    while True:
        page, _ = await source.list_sessions(_PAGE, kept, None, include_children=True)
        if not page:
            if moved:
                log.info("[API Server] moved %d session(s) into the host's session store", moved)
            return moved
        for info in page:
            session_id = info["id"]
            try:
                if await target.get_session(session_id) is None:
                    await target.seed_session(session_id, await source.load_session_messages(session_id))
                    await _copy_fields(target, session_id, info["title"], info["pinned"], info["archived"])
                if moved_here is not None:
                    await moved_here(session_id)
                await source.delete_session(session_id)
                moved += 1
            except Exception:
                kept += 1
                log.exception("[API Server] could not move session %s into the host's session store", session_id)


async def _copy_fields(target: SessionStore, session_id: str, title: str | None, pinned: bool, archived: bool) -> None:
    await target.update_session(session_id, {"pinned": pinned, "archived": archived})
    if title:
        try:
            await target.update_session(session_id, {"title": title})
        except ApiError as exc:  # Hermes keeps titles unique: the session moves without it
            log.warning("[API Server] session %s moved without its title %r: %s", session_id, title, exc.message)
