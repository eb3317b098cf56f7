"""Which store a gateway opens: PostgreSQL when `api_server.store.url` is set, else the embedded SQLite file.

The PostgreSQL modules (and psycopg) are imported only then, so a gateway without the `postgres` extra never needs
the driver.
"""

from __future__ import annotations

from ..config.settings import Settings
from .roles import SessionStore, Store
from .sqlite.store import SqliteStore


def build_store(settings: Settings) -> Store:
    """The store of this gateway, not yet opened."""
    if settings.store_url is not None:
        from .postgres.store import PostgresStore

        return PostgresStore(settings.store_url, max_responses=settings.responses_max_stored)
    # One gateway: a file in its Hermes home, in memory (logged) when the file cannot be opened.
    return SqliteStore(settings.store_path, max_responses=settings.responses_max_stored, fallback_to_memory=True)


def own_sessions(store: Store) -> SessionStore | None:
    """The session store in `store`'s own database (SQLite's and PostgreSQL's `sessions`), None for a store that
    keeps no session tables. Not a Store method: the plugin roles stay free of sessions."""
    sessions: SessionStore | None = getattr(store, "sessions", None)
    return sessions
