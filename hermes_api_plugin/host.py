"""HostData: what only the host agent knows — its skills, toolsets, model inventory and gateway health (WIRE §14.3).

A runtime exposes it as `runtime.host`; None means the host has no such data (the bundled reference gateway with
the scripted runtime), and the routes built on it answer 501 `not_supported_by_host` while `/v1/capabilities`
reports them `false`. The Hermes implementation is `hermes/host.py`. No aiohttp here.
"""

from __future__ import annotations

from typing import Any, Protocol


class HostData(Protocol):
    """The host's own data, each call reading it fresh (the host's files change under a running gateway)."""

    async def skills(self) -> list[dict[str, Any]]:
        """The installed skills the agent loads (disabled ones left out), in the host's own order and entry shape."""
        ...

    async def toolsets(self) -> dict[str, Any]:
        """`{"platform", "data": [{name, label, description, enabled, configured, tools}]}` for this platform."""
        ...

    async def model_inventory(self, refresh: bool) -> dict[str, Any]:
        """The host's model picker payload (`{"providers", "model", "provider"}`); `refresh` re-probes."""
        ...

    async def health(self, *, active_api_runs: int) -> dict[str, Any]:
        """Gateway state, platforms, readiness and version as the host reports them (keys of `/health/detailed`)."""
        ...
