"""HermesHost: Hermes Agent's own skills, toolsets, model inventory, gateway health, cron jobs (`hermes/jobs.py`),
cron fire tokens and platform adapters (WIRE §14.3), read through `compat` (`compat/catalog.py`,
`compat/gateway.py`, `compat/cron.py`, `compat/profiles.py`) as hermes-agent 0.19.0's built-in api_server (skills,
toolsets, detailed health) or its dashboard (`GET /api/model/options`) reads them. All of it reads files and config
(the inventory may probe provider endpoints), so every call runs in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from . import compat
from .jobs import HermesJobs, hermes_jobs


class HermesHost:
    """HostData read from the installed hermes-agent and `$HERMES_HOME`."""

    def __init__(self) -> None:
        self._multiplexing: bool | None = None

    def multiplexing(self) -> bool:
        # The gateway runner marks its process a multiplexer before any adapter connects; read once, on the first
        # request, so the hot path does not ask hermes-agent again.
        if self._multiplexing is None:
            self._multiplexing = compat.profiles.multiplexing()
        return self._multiplexing

    def served_profiles(self) -> Mapping[str, Path]:
        return compat.profiles.served_profiles()

    def profile_scope(self, home: Path | None) -> AbstractContextManager[Any]:
        return compat.profiles.profile_scope(home)

    async def skills(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(compat.catalog.all_skills)

    async def toolsets(self) -> dict[str, Any]:
        data = await asyncio.to_thread(compat.catalog.toolsets_listing)
        return {"platform": compat.API_SERVER, "data": data}

    async def model_inventory(self, refresh: bool) -> dict[str, Any]:
        return await asyncio.to_thread(compat.catalog.model_inventory, refresh)

    async def health(self, *, active_api_runs: int) -> dict[str, Any]:
        return await asyncio.to_thread(compat.gateway.detailed_health, active_api_runs)

    async def jobs(self) -> HermesJobs | None:
        return await hermes_jobs()

    async def fire_token_valid(self, token: str) -> bool:
        # Reads config.yaml and may fetch the NAS JWKS: off the event loop.
        return await asyncio.to_thread(compat.cron.fire_token_valid, token)

    def platform_adapter(self, platform: str) -> Any | None:
        """Among the adapters of the `hermes gateway` running in this process (none outside one)."""
        runner = compat.gateway.gateway_runner()
        return None if runner is None else compat.gateway.platform_adapter(runner, platform)
