"""Durable state: the SessionStore and Store protocols and their SQLite backend (in memory when no file
can be used). The PostgreSQL backend (`store/postgres.py`) is not imported here: it needs the `postgres` extra, and
`store/factory.py` imports it only when `api_server.store.url` is set."""

from .base import (
    Eviction,
    IdempotencyRecord,
    SessionStore,
    Store,
    StoredResponse,
    StoreError,
    StoreRefused,
    StoreUnavailable,
)
from .sqlite import MemoryStore, SqliteStore
from .sqlite_sessions import SqliteSessionStore

__all__ = [
    "Eviction",
    "IdempotencyRecord",
    "MemoryStore",
    "SessionStore",
    "SqliteSessionStore",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreRefused",
    "StoreUnavailable",
    "StoredResponse",
]
