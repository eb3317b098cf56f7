"""Start-up recovery (WIRE.md §5.4): what a previous gateway process left unsettled is settled, never re-run.

Stored Responses left queued or in progress settle `failed` / unknown_execution with their journal closed
(open items closed, a terminal record appended); admissions left running become `unknown`, their journals
closed the same way.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from .admissions import Admissions
from .config import Settings
from .history import turn_messages
from .store.base import Store
from .stored_responses import head_from_snapshot, renderer
from .turns.durable import close_journal

log = logging.getLogger("hermes_api_plugin")


async def settle_leftover_responses(settings: Settings, store: Store) -> None:
    """Responses a previous process left unsettled settle `failed` / unknown_execution."""
    for record in await store.unsettled_responses():
        journal, _ = await close_journal(store, record.turn_id)
        r = renderer(settings, head_from_snapshot(record.snapshot), record.commentary)
        r.created(record.queued)
        r.render(journal.events)
        settled = replace(
            record, status=r.status, snapshot=r.snapshot(), messages=turn_messages(record.messages, journal.events)
        )
        await store.put_response(settled, [*record.input_items, *r.output])
        log.warning(
            "[API Server] Response %s was left %s by a previous process: settled failed (unknown_execution)",
            record.id,
            record.status,
        )


async def recover(settings: Settings, store: Store, admissions: Admissions) -> None:
    """Everything a previous process left unsettled, in order: stored Responses, then admissions."""
    await settle_leftover_responses(settings, store)
    await admissions.recover()
