"""A Store that opens its durable backend and falls back to memory when that fails (WIRE.md §5.4)."""

from __future__ import annotations

import logging
from typing import Sequence

from ..content import Message
from .base import Store, StoreError
from .memory import MemoryStore

log = logging.getLogger("hermes_api_plugin")


class FallbackStore:
    """Delegates to `primary` once opened; to an in-memory store if opening failed."""

    def __init__(self, primary: Store) -> None:
        self.primary = primary
        self._active: Store = primary

    @property
    def durable(self) -> bool:
        return self._active.durable

    async def open(self) -> None:
        try:
            await self.primary.open()
        except StoreError as exc:
            log.error("[API Server] Store unavailable (%s); keeping state in memory until restart", exc)
            self._active = MemoryStore()
            await self._active.open()

    async def close(self) -> None:
        await self._active.close()

    async def load_session_messages(self, session_id: str) -> list[Message]:
        return await self._active.load_session_messages(session_id)

    async def append_session_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        await self._active.append_session_messages(session_id, messages)
