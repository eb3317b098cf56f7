"""HostData: what only the host agent knows — its skills, toolsets, model inventory, gateway health, cron jobs (and
the fire tokens of its managed-cron scheduler) and platform adapters (WIRE §14.3).

A runtime exposes it as `runtime.host_data`; None means the host has no such data (the bundled reference gateway with
the scripted runtime), and the routes built on it answer 501 `not_supported_by_host` while `/v1/capabilities`
reports them `false`. The Hermes implementation is `hermes/host.py`. No aiohttp here.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol


class HostJobs(Protocol):
    """The host's cron job store (hermes-agent's `cron.jobs`): jobs are the host's own dicts, returned as stored."""

    async def list(self, include_disabled: bool) -> list[dict[str, Any]]: ...

    async def create(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A new job from the create call's keyword arguments (prompt, schedule, name, deliver, origin, …)."""
        ...

    async def get(self, job_id: str) -> dict[str, Any] | None: ...

    async def update(self, job_id: str, fields: dict[str, Any]) -> dict[str, Any] | None: ...

    async def remove(self, job_id: str) -> bool: ...

    async def pause(self, job_id: str) -> dict[str, Any] | None: ...

    async def resume(self, job_id: str) -> dict[str, Any] | None: ...

    async def trigger(self, job_id: str) -> dict[str, Any] | None:
        """Mark the job due now (the scheduler runs it); None: no such job."""
        ...

    async def scan_prompt(self, prompt: str) -> str:
        """Why the host refuses this prompt (its injection and exfiltration scanner), "" when it passes."""
        ...

    async def fire(self, job_id: str) -> bool:
        """Run the job now through the host's cron scheduler, which claims it first so a retried fire runs it once;
        returns when the run ended: True when this call ran it, False when the claim was lost, the job is paused or
        gone, or its run raised (the host logs why)."""
        ...


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

    async def jobs(self) -> HostJobs | None:
        """The host's cron job store; None when the host has cron but it is unavailable here (503)."""
        ...

    async def fire_token_valid(self, token: str) -> bool:
        """Whether `token` (a bearer token, never API_SERVER_KEY) may fire a cron job: the host's verifier with the
        audience, keys and issuer of its configuration decides. May raise; the caller refuses then."""
        ...

    def platform_adapter(self, platform: str) -> Any | None:
        """The host's live adapter of another messaging platform (`google_chat`), for its HTTP event ingress;
        None when that platform is not connected in this process."""
        ...

    def multiplexing(self) -> bool:
        """Whether this process serves several host profiles under `/p/{profile}/…` (`gateway.multiplex_profiles`);
        when it does not, a profile prefix is ignored, as the built-in server ignores it."""
        ...

    def served_profiles(self) -> Mapping[str, Path]:
        """The profiles a multiplexing host serves, by name, each with its home (empty: none can be served here).
        Reads the profiles folder: call it in a worker thread."""
        ...

    def profile_scope(self, home: Path | None) -> AbstractContextManager[Any]:
        """The host's scope for one profile's home (None: the gateway's own profile): config, skills, memory, jobs
        and credentials read inside it are that profile's. Context variables: enter and leave it in one task or
        thread."""
        ...
