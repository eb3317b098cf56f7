"""The Store protocol every backend implements (SQLite embedded default, in-memory fallback)."""

from __future__ import annotations

from typing import Protocol, Sequence

from ..content import Message


class StoreError(RuntimeError):
    """The backing store failed (cannot open, disk full, corrupt file)."""


class Store(Protocol):
    durable: bool  # False for the in-memory fallback: capabilities report it

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def load_session_messages(self, session_id: str) -> list[Message]:
        """The live transcript of a session, oldest first; empty for an unknown session."""
        ...

    async def append_session_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append messages to a session, creating it when new."""
        ...
