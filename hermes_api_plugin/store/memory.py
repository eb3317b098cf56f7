"""In-memory Store: the fallback when the SQLite file cannot be opened (nothing survives a restart)."""

from __future__ import annotations

from typing import Sequence

from ..content import Message


class MemoryStore:
    durable = False

    def __init__(self) -> None:
        self._sessions: dict[str, list[Message]] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def load_session_messages(self, session_id: str) -> list[Message]:
        return list(self._sessions.get(session_id, ()))

    async def append_session_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        self._sessions.setdefault(session_id, []).extend(messages)
