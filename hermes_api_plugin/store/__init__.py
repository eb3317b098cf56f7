"""Durable state: the SessionStore and Store protocols and their SQLite backend (in memory when no file
can be used)."""

from .base import AdmissionRecord, Eviction, SessionStore, Store, StoredResponse, StoreError
from .sqlite import MemoryStore, SqliteStore
from .sqlite_sessions import SqliteSessionStore

__all__ = [
    "AdmissionRecord",
    "Eviction",
    "MemoryStore",
    "SessionStore",
    "SqliteSessionStore",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoredResponse",
]
