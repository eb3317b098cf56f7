"""Durable state: the Store protocol, its SQLite backend and the in-memory fallback."""

from .base import Store, StoreError
from .fallback import FallbackStore
from .memory import MemoryStore
from .sqlite import SqliteStore

__all__ = ["FallbackStore", "MemoryStore", "SqliteStore", "Store", "StoreError"]
