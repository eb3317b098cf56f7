"""The curated model list of `GET /api/model/options` (WIRE.md §8.2, §14.3), cached per app."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .base import AgentRuntime

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


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def options_from_inventory(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Hermes' picker rows (`providers`: slug, name, models, capabilities {model: {fast, reasoning}}, pricing
    {model: {input, output, cache, free}}) as §8.2 entries, one per (provider, model), in the rows' order."""
    options: list[dict[str, Any]] = []
    for row in payload.get("providers") or []:
        if not isinstance(row, Mapping):
            continue
        caps = _mapping(row.get("capabilities"))
        prices = _mapping(row.get("pricing"))
        for model in row.get("models") or []:
            entry = {
                "provider": row.get("slug"),
                "model": model,
                "label": model,
                "provider_label": row.get("name"),
                "capabilities": caps.get(model) or {},
                "pricing": prices.get(model),
            }
            options.append(normalise_option(entry))
    return options


@dataclass(frozen=True)
class ModelOptions:
    """One build of the list: the §8.2 entries, and the host's own payload when it came from the host."""

    options: list[dict[str, Any]]
    inventory: dict[str, Any] | None
    fetched_at: int


class ModelOptionsCache:
    """The host's inventory (Hermes' dashboard payload), else the runtime's list, else `api_server.model_options`;
    refreshed on demand."""

    def __init__(self) -> None:
        self.built: ModelOptions | None = None
        self._lock = asyncio.Lock()

    async def get(
        self, runtime: AgentRuntime, configured: Sequence[Mapping[str, Any]], refresh: bool
    ) -> tuple[ModelOptions, bool]:
        """(the list, cached): `cached` is False when this call built it."""
        async with self._lock:
            if self.built is not None and not refresh:
                return self.built, True
            inventory: dict[str, Any] | None = None
            if runtime.host_data is not None:
                inventory = await runtime.host_data.model_inventory(refresh)
                options = options_from_inventory(inventory)
            else:
                listed = await runtime.model_inventory(refresh=refresh)
                options = [normalise_option(e) for e in (listed if listed is not None else configured)]
            self.built = ModelOptions(options, inventory, int(time.time()))
            return self.built, False
