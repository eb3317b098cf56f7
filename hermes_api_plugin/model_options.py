"""The curated model list of `GET /api/model/options` (WIRE.md §8.2), cached per app."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .runtimes.base import AgentRuntime

_CAPABILITY_HINTS = ("reasoning", "vision", "tools", "context_length")


def normalise_option(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One model option in the §8.2 shape: unknown hints null, extra keys passed through."""
    data = dict(entry)
    raw = data.get("capabilities")
    hints: dict[str, Any] = raw if isinstance(raw, dict) else {}
    data["capabilities"] = {**{h: None for h in _CAPABILITY_HINTS}, **hints}
    data.setdefault("label", data.get("model"))
    data.setdefault("pricing", None)
    return data


class ModelOptionsCache:
    """The runtime's inventory when it has one, else `api_server.model_options`; refreshed on demand."""

    def __init__(self) -> None:
        self.options: list[dict[str, Any]] | None = None
        self.fetched_at = 0
        self._lock = asyncio.Lock()

    async def get(
        self, runtime: AgentRuntime, configured: Sequence[Mapping[str, Any]], refresh: bool
    ) -> tuple[list[dict[str, Any]], bool]:
        """(options, cached): `cached` is False when this call built the list."""
        async with self._lock:
            if self.options is not None and not refresh:
                return self.options, True
            inventory = await runtime.model_inventory(refresh=refresh)
            source = inventory if inventory is not None else configured
            self.options = [normalise_option(e) for e in source]
            self.fetched_at = int(time.time())
            return self.options, False
