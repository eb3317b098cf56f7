"""Durable state: the store roles (`roles.py`), the values they exchange (`base.py`), the SQL both backends share
(`sql/`) and the SQLite backend (`sqlite/`, in memory when no file can be used). The PostgreSQL backend
(`postgres/`) is not imported here: it needs the `postgres` extra, and `factory.py` imports it only when
`api_server.store.url` is set."""

from .base import (
    Eviction,
    IdempotencyRecord,
    StoredResponse,
    StoreError,
    StoreRefused,
    StoreUnavailable,
)
from .roles import SessionStore, Store
from .sqlite.sessions import SqliteSessionStore
from .sqlite.store import MemoryStore, SqliteStore

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
