"""BackgroundWork: work a request answers for before it ends (the cron fire's job run, WIRE §14.3), kept so the
gateway's drain waits for it instead of losing it.

Agent turns have the turn registry; this is for the host's own work that no turn journal describes. Each piece is
an asyncio task held here until it ends: the host counts it as live work (`active`, Hermes' drain waits on it) and
the shutdown awaits it (`drain`). Once the drain began, nothing new is taken (503 `gateway_draining`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from ..core.errors import draining

log = logging.getLogger("hermes_api_plugin")


class BackgroundWork:
    """The tasks still running, and whether the drain began."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False

    @property
    def active(self) -> int:
        return len(self._tasks)

    def spawn(self, work: Coroutine[Any, Any, None], *, name: str) -> asyncio.Task[None]:
        """Run `work` as a task held until it ends; 503 `gateway_draining` (and `work` closed unrun) once the drain
        began. Synchronous on purpose: no await between the drain check and the task joining the set, so a drain
        that starts meanwhile cannot miss it."""
        if self.closed:
            work.close()
            raise draining()
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        # The work reports its own failures; this only keeps an escaped one from vanishing with the task.
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("[API Server] background task %s failed: %s: %s", task.get_name(), type(exc).__name__, exc)

    async def drain(self, grace_s: float) -> None:
        """Take nothing new, then wait up to `grace_s` for what runs. Work still running after that is cancelled
        here; a blocking call it waits on in a worker thread cannot be stopped and finishes there unobserved."""
        self.closed = True
        tasks = set(self._tasks)
        if not tasks:
            return
        log.info("[API Server] Waiting for %d background task(s)", len(tasks))
        _, pending = await asyncio.wait(tasks, timeout=grace_s)
        if not pending:
            return
        log.warning(
            "[API Server] %d background task(s) still running after %g s: %s",
            len(pending),
            grace_s,
            ", ".join(sorted(task.get_name() for task in pending)),
        )
        for task in pending:
            task.cancel()
        await asyncio.wait(pending)
