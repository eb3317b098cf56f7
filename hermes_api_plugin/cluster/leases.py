"""Ownership by leases (issue 15): which gateway process runs a turn, and whether it still lives.

Every gateway process owns the turns it admits under its boot id (a random id per process start) and keeps a
lease in the store: `expires_at = now + lease_seconds`, renewed every lease_seconds / 3 by `LeaseKeeper`. Another
gateway judges an owner by its lease alone:

    no lease                                    → gone (released on a clean shutdown, or never taken)
    lease expired (expires_at < now)            → gone (killed, host lost, or cut off from the store that long)
    same process space, its pid not running     → gone at once (a crash on this host: no need to wait it out;
                                                  a zombie — killed, not yet reaped by its parent — is not running)
    otherwise                                   → alive, however long its turns run

The "process space" is the kernel's boot id plus the pid namespace (Linux): only there does a pid name the same
process for both gateways, so only there is "pid not running" evidence; elsewhere (other hosts, containers with
their own pid namespace, other systems) the lease's expiry decides alone.

A renewal that fails (the store is down) is logged and retried after a second; it never ends the gateway. After
each successful renewal the keeper runs `after_renewal` (recovery.py's sweep: the leftovers of gone owners settle).
On a clean shutdown the lease is released (deleted) after the drain settled every turn.

Clocks: `expires_at` is written in the owner's clock and compared with the reader's, so the gateways' clocks must
agree to well within lease_seconds / 3 (NTP does); every time is taken from the injected `clock`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..store.base import Lease, StoreError
from ..store.roles import LeaseStore

log = logging.getLogger("hermes_api_plugin")

Clock = Callable[[], float]
RETRY_S = 1.0  # a failed renewal is tried again this soon (the lease itself lasts lease_seconds)


def process_space() -> str | None:
    """The kernel boot id and pid namespace of this process (Linux), None where that cannot be read."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except (OSError, UnicodeDecodeError):
        return None
    return f"{boot}/{namespace}" if boot else None


def pid_running(pid: int) -> bool:
    """Whether a process with this pid runs here (a pid owned by another user runs too). A zombie does not: a killed
    gateway whose parent has not reaped it yet still answers `kill(pid, 0)` (issue 20), so /proc decides."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # EPERM and the like: someone's process holds it
    return not _dead(pid)


def _dead(pid: int) -> bool:
    """Whether /proc shows `pid` as a zombie or dead (state Z or X); False where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return Path("/proc/self/stat").exists()  # gone between kill() and here; without /proc nothing is known
    except OSError:
        return False
    # "pid (comm) state …": comm may hold spaces and parentheses, so the state follows the last ')'.
    state = stat[stat.rfind(b")") + 1 :].split(maxsplit=1)[:1]
    return state in ([b"Z"], [b"X"])


class LeaseKeeper:
    """This gateway process's lease (`owner` = its boot id) and the judge of everyone's."""

    def __init__(
        self,
        store: LeaseStore,
        owner: str,
        lease_seconds: float,
        *,
        clock: Clock = time.time,
        space: str | None = None,
        pid: int | None = None,
        pid_running: Callable[[int], bool] = pid_running,
    ) -> None:
        self.store = store
        self.owner = owner
        self.lease_seconds = lease_seconds
        self.clock = clock
        self.space = space
        self.pid = pid
        self._pid_running = pid_running
        self.after_renewal: Callable[[], Awaitable[object]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._released = False

    @classmethod
    def for_this_process(cls, store: LeaseStore, owner: str, lease_seconds: float) -> LeaseKeeper:
        return cls(store, owner, lease_seconds, space=process_space(), pid=os.getpid())

    # -- judging ------------------------------------------------------------------------------------------
    def alive(self, lease: Lease | None, now: float | None = None) -> bool:
        """The table of the module docstring, for a lease read from the store (None: no lease)."""
        if lease is None:
            return False
        if lease.expires_at < (self.clock() if now is None else now):
            return False
        if lease.owner == self.owner:
            return True
        same_space = self.space is not None and lease.space == self.space
        return not (same_space and lease.pid is not None and not self._pid_running(lease.pid))

    async def owner_alive(self, owner: str | None) -> bool:
        """Whether the gateway process `owner` still runs its turns (StoreError when the store fails)."""
        if owner is None:
            return False
        return self.alive(await self.store.get_lease(owner))

    async def gone_owners(self) -> list[str]:
        """The owners whose leases say they are gone (expired, or their process is not running here)."""
        now = self.clock()
        return [lease.owner for lease in await self.store.leases() if not self.alive(lease, now)]

    async def expiry(self, owner: str) -> float | None:
        """When `owner`'s lease runs out as stored now (None: no lease)."""
        lease = await self.store.get_lease(owner)
        return lease.expires_at if lease is not None else None

    @property
    def holding(self) -> bool:
        """This process keeps its lease: taken and renewed, not yet stopped."""
        return self._task is not None and not self._released

    # -- keeping ours -------------------------------------------------------------------------------------
    async def renew(self) -> None:
        """Extend this process's lease by lease_seconds from now (StoreError when the store fails)."""
        now = self.clock()
        await self.store.renew_lease(
            Lease(self.owner, now + self.lease_seconds, self.space, self.pid, socket.gethostname(), now)
        )

    async def start(self) -> None:
        """Take the lease (StoreError when the store fails: nothing may be admitted without it), then keep it."""
        await self.renew()
        self._task = asyncio.get_running_loop().create_task(self._keep(), name="hermes-api lease")

    async def _keep(self) -> None:
        interval = self.lease_seconds / 3
        delay = interval
        while True:
            await asyncio.sleep(delay)
            try:
                await self.renew()
            except StoreError as exc:
                log.warning("[API Server] could not renew this gateway's lease (%s); retrying in %.0f s", exc, RETRY_S)
                delay = min(RETRY_S, interval)
                continue
            delay = interval
            if self.after_renewal is not None:
                try:
                    await self.after_renewal()
                except Exception:  # a failing sweep is retried with the next renewal
                    log.exception("[API Server] could not settle what gone gateways left running")

    async def stop(self, *, release: bool) -> None:
        """Stop renewing; `release` drops the lease (a clean shutdown, after the drain). Once: hosts may call the
        close path twice (their shutdown hook, then the app's cleanup)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if release and not self._released:
            self._released = True
            try:
                await self.store.release_lease(self.owner)
            except StoreError as exc:
                log.warning("[API Server] could not release this gateway's lease (%s); it runs out by itself", exc)
