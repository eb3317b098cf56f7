"""HermesJobs: Hermes' cron job store (`cron.jobs` under `$HERMES_HOME/cron`), as the built-in api_server's
`/api/jobs` routes and its `/api/cron/fire` webhook use it (WIRE §14.3).

The same store the `cronjob` tool, `hermes cron` and the gateway's scheduler read, so a job made here is the one
they list and run. Every call reads or writes files under a file lock: each runs in a worker thread. After a
change the active scheduler provider is told, as upstream does after its REST mutations (not after `run`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from . import compat


class HermesJobs:
    """HostJobs over the functions `compat.cron.cron_functions()` resolved."""

    def __init__(self, functions: dict[str, Callable[..., Any]]) -> None:
        self._f = functions

    async def _changed(self, operation: str, *args: Any) -> Any:
        def call() -> Any:
            result = self._f[operation](*args)
            if result:
                compat.cron.notify_jobs_changed()
            return result

        return await asyncio.to_thread(call)

    async def list(self, include_disabled: bool) -> list[dict[str, Any]]:
        return list(await asyncio.to_thread(self._f["list"], include_disabled=include_disabled))

    async def create(self, fields: dict[str, Any]) -> dict[str, Any]:
        def call() -> dict[str, Any]:
            job = self._f["create"](**fields)
            compat.cron.notify_jobs_changed()
            return dict(job)

        return await asyncio.to_thread(call)

    async def get(self, job_id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._f["get"], job_id)

    async def update(self, job_id: str, fields: dict[str, Any]) -> dict[str, Any] | None:
        return await self._changed("update", job_id, fields)

    async def remove(self, job_id: str) -> bool:
        return bool(await self._changed("remove", job_id))

    async def pause(self, job_id: str) -> dict[str, Any] | None:
        return await self._changed("pause", job_id)

    async def resume(self, job_id: str) -> dict[str, Any] | None:
        return await self._changed("resume", job_id)

    async def trigger(self, job_id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._f["trigger"], job_id)

    async def scan_prompt(self, prompt: str) -> str:
        return await asyncio.to_thread(compat.cron.scan_cron_prompt, prompt)

    async def fire(self, job_id: str) -> bool:
        # The whole agent run happens in this worker thread; the loop is handed over for the delivery, as upstream.
        return await asyncio.to_thread(compat.cron.fire_due, job_id, asyncio.get_running_loop())


async def hermes_jobs() -> HermesJobs | None:
    """The job store, None when `cron.jobs` does not import here (the first import runs off the event loop)."""
    functions = await asyncio.to_thread(compat.cron.cron_functions)
    return None if functions is None else HermesJobs(functions)
