"""Durable state: the Store protocol and its SQLite backend (in memory when no file can be used)."""

from .base import Eviction, Store, StoredResponse, StoreError
from .sqlite import MemoryStore, SqliteStore

__all__ = ["Eviction", "MemoryStore", "SqliteStore", "Store", "StoreError", "StoredResponse"]
