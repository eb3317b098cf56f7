"""HermesHost: Hermes Agent's own skills, toolsets, model inventory, gateway health, cron jobs (`hermes/jobs.py`),
cron fire tokens and platform adapters (WIRE §14.3).

Each read is what hermes-agent 0.19.0's built-in api_server (skills, toolsets, detailed health) or its dashboard
(`GET /api/model/options`) calls: public names, declared in `compat_names` (checked against the pinned
hermes-agent); the private ones are read by `compat`. All of it reads files and config (the inventory may
probe provider endpoints), so every call runs in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from . import compat, compat_host, compat_profiles
from .compat_names import (
    GATEWAY_BUSY,
    GATEWAY_DRAINABLE,
    MODELS_PAYLOAD,
    PARSE_ACTIVE_AGENTS,
    PICKER_CONTEXT,
    READ_RUNTIME_STATUS,
    RUNTIME_READINESS,
)
from .jobs import HermesJobs, hermes_jobs


def hermes_version() -> str:
    """hermes-agent's version as its own health routes report it ("dev" when unknown)."""
    try:
        return importlib.metadata.version("hermes-agent")
    except importlib.metadata.PackageNotFoundError:
        return "dev"


def _inventory(refresh: bool) -> dict[str, Any]:
    """The dashboard's call: default opens probe only the current custom endpoint, a refresh probes them all."""
    payload = MODELS_PAYLOAD.resolve()(
        PICKER_CONTEXT.resolve()(),
        explicit_only=False,
        include_unconfigured=False,
        picker_hints=True,
        canonical_order=True,
        pricing=True,
        capabilities=True,
        refresh=refresh,
        probe_custom_providers=refresh,
        probe_current_custom_provider=not refresh,
    )
    return dict(payload)


def _health(active_api_runs: int) -> dict[str, Any]:
    """The host keys of the built-in `/health/detailed`, from Hermes' runtime status file and readiness probes.

    The status file (`gateway_state.json`) describes the `hermes gateway` of this `$HERMES_HOME`; it is this
    process only when a gateway runs here, so outside one (the reference gateway with the hermes runtime) its
    state and platforms are not reported as ours."""
    inside_gateway = compat.gateway_runner() is not None
    status = (READ_RUNTIME_STATUS.resolve()() or {}) if inside_gateway else {}
    state = status.get("gateway_state")
    active = PARSE_ACTIVE_AGENTS.resolve()(status.get("active_agents", 0))
    readiness = RUNTIME_READINESS.resolve()(
        configured_model=compat.gateway_model() or "",
        runtime_status=status,
        active_api_runs=active_api_runs,
        # Hermes' process-completion queue and async delegations are its own tools' work, counted by upstream
        # through private module state; this server's turns are what it can count.
        process_completion_queue_depth=0,
        active_delegations=0,
    )
    return {
        "readiness": readiness,
        "version": hermes_version(),
        "gateway_state": state,
        "platforms": status.get("platforms", {}),
        "active_agents": active,
        # served by the gateway process itself, so it is running by definition (as upstream reasons)
        "gateway_busy": GATEWAY_BUSY.resolve()(gateway_running=True, gateway_state=state, active_agents=active),
        "gateway_drainable": GATEWAY_DRAINABLE.resolve()(gateway_running=True, gateway_state=state),
        "exit_reason": status.get("exit_reason"),
        "updated_at": status.get("updated_at"),
    }


class HermesHost:
    """HostData read from the installed hermes-agent and `$HERMES_HOME`."""

    def __init__(self) -> None:
        self._multiplexing: bool | None = None

    def multiplexing(self) -> bool:
        # The gateway runner marks its process a multiplexer before any adapter connects; read once, on the first
        # request, so the hot path does not ask hermes-agent again.
        if self._multiplexing is None:
            self._multiplexing = compat_profiles.multiplexing()
        return self._multiplexing

    def served_profiles(self) -> Mapping[str, Path]:
        return compat_profiles.served_profiles()

    def profile_scope(self, home: Path | None) -> AbstractContextManager[Any]:
        return compat_profiles.profile_scope(home)

    async def skills(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(compat.all_skills)

    async def toolsets(self) -> dict[str, Any]:
        data = await asyncio.to_thread(compat.toolsets_listing)
        return {"platform": compat.API_SERVER, "data": data}

    async def model_inventory(self, refresh: bool) -> dict[str, Any]:
        return await asyncio.to_thread(_inventory, refresh)

    async def health(self, *, active_api_runs: int) -> dict[str, Any]:
        return await asyncio.to_thread(_health, active_api_runs)

    async def jobs(self) -> HermesJobs | None:
        return await hermes_jobs()

    async def fire_token_valid(self, token: str) -> bool:
        # Reads config.yaml and may fetch the NAS JWKS: off the event loop.
        return await asyncio.to_thread(compat_host.fire_token_valid, token)

    def platform_adapter(self, platform: str) -> Any | None:
        """Among the adapters of the `hermes gateway` running in this process (none outside one)."""
        runner = compat.gateway_runner()
        return None if runner is None else compat_host.platform_adapter(runner, platform)
