"""Start-up recovery (WIRE.md §5.4): what a previous gateway process left unsettled is settled, never re-run.

Stored Responses left queued or in progress settle `failed` / unknown_execution with their journal closed
(open items closed, a terminal record appended); admissions left running become `unknown`, their journals
closed the same way.
"""

from __future__ import annotations

import logging

from .admissions import Admissions
from .config import Settings
from .store.base import Store
from .stored_responses import head_from_snapshot, settled
from .turns.durable import close_journal

log = logging.getLogger("hermes_api_plugin")


async def settle_leftover_responses(settings: Settings, store: Store) -> None:
    """Responses a previous process left unsettled settle `failed` / unknown_execution."""
    for record in await store.unsettled_responses():
        journal, _ = await close_journal(store, record.turn_id)
        final, items = settled(settings, record, head_from_snapshot(record.snapshot), record.queued, journal.events)
        await store.put_response(final, items)
        log.warning(
            "[API Server] Response %s was left %s by a previous process: settled failed (unknown_execution)",
            record.id,
            record.status,
        )


async def recover(settings: Settings, store: Store, admissions: Admissions) -> None:
    """Everything a previous process left unsettled, in order: stored Responses, then admissions."""
    await settle_leftover_responses(settings, store)
    await admissions.recover()
