"""Settling what gone gateway processes left unsettled (WIRE.md §5.4), never re-running it.

A turn belongs to the gateway process that admitted it (its boot id, `leases.py`). When that owner is gone — its
lease expired or was never renewed, or its process is not running on this host — everything it left unsettled
settles here, in order: stored Responses left queued or in progress settle `failed` / unknown_execution (journal
closed: open items closed, a terminal record appended), idempotency records left running become `unknown` and run
records left running become `failed`, their journals closed the same way.

`sweep()` is safe at any time and from any gateway: it runs at start-up (after this process took its lease), after
every lease renewal, and when a keyed retry finds its turn's owner gone. Of two gateways sweeping at once each
idempotency record and run record goes to one of them; a stored Response both find is settled twice to the same outcome.
The turns of a live owner are never touched, however long they run. Each sweep also drops the run records (and
journals nothing else renders) of runs that settled more than an hour ago (WIRE.md §6.2).

The sweep also looks at this gateway's own records: a turn that settled here but whose settlement could not be
stored (the database was down at that moment) still shows running to every other gateway, whose followers would
wait for it as long as this gateway lives. Its persistence (stored Response, journal with the terminal record,
idempotency record, run record) is run again, until it gets through.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from ..config.settings import Settings
from ..core.metrics import Metrics
from ..dialects.response_objects import head_from_snapshot, settled
from ..store.roles import IdempotencyStore, JournalStore, LeaseStore, ResponseStore, RunStore
from ..turns.durable import close_journal
from ..turns.recent import RECENT_S
from ..turns.registry import TurnRegistry
from ..turns.settled import SettledTurn
from .leases import LeaseKeeper

log = logging.getLogger("hermes_api_plugin")


class RecoveryStore(ResponseStore, IdempotencyStore, RunStore, LeaseStore, JournalStore, Protocol):
    """The roles a sweep settles leftovers in."""


class Recovery:
    """Settles the leftovers of gone owners (one sweep at a time per gateway)."""

    def __init__(
        self,
        settings: Settings,
        store: RecoveryStore,
        leases: LeaseKeeper,
        registry: TurnRegistry,
        metrics: Metrics | None = None,
    ) -> None:
        self.metrics = metrics  # takeovers and recovered turns (None: metrics off)
        self.settings = settings
        self.store = store
        self.leases = leases
        self.registry = registry
        self._lock = asyncio.Lock()

    async def sweep(self) -> list[str]:
        """Settle what gone owners left; returns the turn ids whose journals this sweep closed. Raises StoreError."""
        async with self._lock:
            closed = await self._sweep()
            await self._restore_own()
            return closed

    async def _restore_own(self) -> None:
        """Store again the settlement of this gateway's turns that settled here but could not be stored."""
        for turn_id in await self.store.owned_unsettled(self.leases.owner):
            if self.registry.get(turn_id) is not None:
                continue  # still running here
            kept = self.registry.find(turn_id)
            turn = kept.unstored if isinstance(kept, SettledTurn) else None
            finished = turn.journal.finished if turn is not None else None
            if not isinstance(kept, SettledTurn) or turn is None or finished is None or turn.persist is None:
                continue  # not known here any more: it stays until this gateway's lease is gone
            await turn.persist(turn, finished)
            turn.stored, turn.persist = True, None
            kept.unstored = None  # stored now: the turn (what it held of the request) can go
            log.info("[API Server] turn %s: its settlement is stored now", turn_id)

    async def _sweep(self) -> list[str]:
        store, now = self.store, self.leases.clock()
        dead = await self.leases.gone_owners()
        closed: list[str] = []
        for record in await store.unsettled_responses(now, dead):
            journal, _ = await close_journal(store, record.turn_id)
            final, items = settled(
                self.settings, record, head_from_snapshot(record.snapshot), record.queued, journal.events
            )
            await store.put_response(final, items)
            closed.append(record.turn_id)
            log.warning(
                "[API Server] Response %s was left %s by a gateway process that is gone: settled failed "
                "(unknown_execution)",
                record.id,
                record.status,
            )
        for turn_id in [
            *await store.mark_unknown_idempotency_records(now, dead),
            *await store.mark_unknown_runs(now, dead),
        ]:
            if turn_id not in closed:
                await close_journal(store, turn_id)
                closed.append(turn_id)
        if dead:
            await store.purge_leases(dead, now)
        if self.metrics is not None:
            self.metrics.lease_takeovers.inc(len(dead))
            self.metrics.turns_recovered.inc(len(closed))
        await store.purge_runs(now - RECENT_S)  # a run is readable this long after it settled (WIRE.md §6.2)
        return closed
