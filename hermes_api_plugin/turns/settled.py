"""A settled turn as a registry keeps it readable (recent.py): what runs read of it — its journal, ids, scope and
times — not the turn that ran.

Why not the `Turn`: what ran it — its callbacks and the bound methods they hold, its interrupt listeners and lock,
its callback sink, suspensions, meter and gate — is some 60 objects the cyclic garbage collector tracks, and a
registry keeps up to `max_recent` settled turns for an hour. Every full collection walked all of them: at 1 000
streams those collections were the event loop's longest stalls, the latency p99 (issue 25). A record is a handful.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.events import TurnStatus
from .journal import Journal, journal_bytes
from .turn import Turn

SETTLED_TURN_BYTES = 512  # a kept record's own objects (ids, scope, times), besides its journal
UNSTORED_TURN_BYTES = 2048  # what the turn an unstored record holds keeps besides (request fields, callback sink)


@dataclass(slots=True)
class SettledTurn:
    """A settled turn, kept readable: its status, journal, ids and times (WIRE.md §6.2)."""

    run_id: str
    status: TurnStatus
    journal: Journal
    scope: str  # the credential scope that admitted it: only it may read the run (WIRE §1.3)
    session_id: str
    model: str | None
    created_at: float
    # Its settlement could not be stored: the turn itself, whose persister recovery calls again
    # (cluster/recovery.py); None once stored.
    unstored: Turn | None = None

    @classmethod
    def of(cls, turn: Turn) -> SettledTurn:
        request = turn.request
        return cls(
            turn.run_id,
            turn.status,
            turn.journal,
            request.scope,
            request.session_id,
            request.model,
            turn.created_at,
            None if turn.stored else turn,
        )

    def weight(self) -> int:
        """Estimated bytes this record keeps in memory (what bounds the records a registry keeps)."""
        held = UNSTORED_TURN_BYTES if self.unstored is not None else 0
        return SETTLED_TURN_BYTES + held + journal_bytes(self.journal.events)
