"""The compat boundary for Hermes' sessions: its session store (`hermes_state.SessionDB`, the one `hermes` lists
sessions from; `hermes/sessions.py` calls its public methods, declared in `SESSION_DB.attrs`) and the session context
a gateway turn runs in (`gateway.session_context`), so Hermes' tools know they run in an api_server turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._core import API_SERVER, MISSING, HermesName, call, usable, warn_fallback

SET_SESSION_VARS = HermesName(
    "gateway.session_context",
    "set_session_vars",
    kwargs=("platform", "chat_id", "session_key", "session_id", "async_delivery"),
    fallback="turns run without Hermes' session context (as outside a gateway)",
)
CLEAR_SESSION_VARS = HermesName(
    "gateway.session_context",
    "clear_session_vars",
    args=("tokens",),
    fallback="the session context is left to end with the turn's worker thread",
)
SESSION_DB = HermesName(
    "hermes_state",
    "SessionDB",
    args=(),
    kwargs=("db_path",),
    # the public methods hermes/sessions.py (the SessionDB-backed session store) calls
    attrs=(
        "get_session",
        "list_sessions_rich",
        "get_messages",
        "get_messages_as_conversation",
        "get_compression_tip",
        "create_session",
        "append_message",
        "archive_and_compact",
        "update_token_counts",
        "set_session_title",
        "set_session_archived",
        "get_meta",
        "set_meta",
        "delete_session",
        "end_session",
        "reopen_session",
        "replace_messages",
        "get_next_title_in_lineage",
    ),
    fallback="turns run without Hermes' session store (Hermes does not list API sessions)",
)

NAMES: tuple[HermesName, ...] = (SET_SESSION_VARS, CLEAR_SESSION_VARS, SESSION_DB)


def bind_session_vars(session_id: str, session_key: str | None = None) -> list[Any] | None:
    """Mark the calling thread's context as an api_server turn of `session_id` without async delivery, as Hermes'
    own api_server does, so Hermes' tools know they run in a gateway turn; `session_key` (default: the session id)
    is the channel's key (X-Hermes-Session-Key), as upstream binds it. Returns the tokens for
    clear_session_vars (None: not bound). An exception of the call itself propagates and fails the turn: it is a
    fault in Hermes, not a version difference, and tools must not run in a context bound halfway."""
    tokens = call(
        SET_SESSION_VARS,
        platform=API_SERVER,
        chat_id=session_id,
        session_key=session_key or session_id,
        session_id=session_id,
        async_delivery=False,
    )
    return None if tokens is MISSING else tokens


def clear_session_vars(tokens: list[Any] | None) -> None:
    """Undo bind_session_vars (after the turn, in its `finally`)."""
    if tokens is None:
        return
    try:
        call(CLEAR_SESSION_VARS, tokens)
    except Exception as exc:
        # lives in the turn's worker thread, which ends right after
        warn_fallback(CLEAR_SESSION_VARS, f"raised {type(exc).__name__}: {exc}")


def session_db(home: Path | None = None) -> Any | None:
    """Hermes' session store (`$HERMES_HOME/state.db`, or a profile's `home/state.db`), so API sessions show where
    Hermes lists sessions; None when unavailable."""
    kwargs = {} if home is None else {"db_path": home / "state.db"}
    target = usable(SESSION_DB, **kwargs)
    if target is MISSING:
        return None
    try:
        return target(**kwargs)
    except Exception as exc:
        # optional for a turn: it runs without the store
        warn_fallback(SESSION_DB, f"could not be opened ({type(exc).__name__}: {exc})")
        return None
