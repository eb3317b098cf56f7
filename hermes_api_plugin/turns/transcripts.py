"""Writing a settled turn's transcript into its session: the registry's persistence dependency."""

from __future__ import annotations

from ..core.events import Compacted, TurnFinished
from ..store.roles import SessionStore
from .turn import Persister, Turn


def session_transcripts(sessions: SessionStore) -> Persister:
    """Append what a turn said (its inputs, tool calls and results, its answer) to its session, with its
    usage; a context compaction during the turn archives the earlier transcript first (WIRE.md §7.2)."""

    async def write(turn: Turn, finished: TurnFinished) -> None:
        compactions = [e.summary for e in turn.journal.events.coalesced() if isinstance(e, Compacted)]
        await sessions.append_session_messages(
            turn.request.session_id,
            [*turn.inputs, *turn.said()],
            model=turn.request.model,
            usage=(finished.usage.prompt_tokens, finished.usage.completion_tokens),
            compaction=compactions[-1] if compactions else None,
        )

    return write
