"""The Responses surface's turn plan and stored state: a new Response's head, chain and history; its stored
record at admission and at settlement; live snapshots for read-back (WIRE.md §4.5–§4.7)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

from ..config.settings import Settings
from ..core.events import TurnFinished
from ..dialects.response_objects import renderer, settled
from ..dialects.responses import ResponseHead, ResponsesRenderer
from ..protocol.common import HermesHeaders, new_chain_session_id, new_response_id, new_run_id
from ..protocol.responses import ResponsesRequest, resolve_input
from ..store.base import Eviction, StoredResponse
from ..store.roles import ResponseStore
from ..submission.conversations import Conversations, extended, fixed_history
from ..submission.submit import TurnPlan
from ..turns import HistoryLoader, Persister, Turn
from ..turns.durable import JournalSaver

log = logging.getLogger("hermes_api_plugin")

TRUNCATION_KEEP = 100


def log_evictions(evictions: Sequence[Eviction]) -> None:
    for eviction in evictions:
        if eviction.conversations:
            log.info(
                "[API Server] Evicted response %s (responses.max_stored); conversation name(s) %s no longer resolve",
                eviction.response_id,
                ", ".join(eviction.conversations),
            )


class ResponseCreation:
    """A new Response: `plan()` resolves its input and chain and describes its turn; after admission `head`,
    `session_id` and `commentary` say how to render it."""

    def __init__(
        self,
        settings: Settings,
        store: ResponseStore,
        conversations: Conversations,
        journals: JournalSaver,
        body: ResponsesRequest,
        hermes: HermesHeaders,
        model_name: str,
        owner: str,
    ) -> None:
        self.settings = settings
        self.owner = owner  # the boot id of this gateway process: stored with the Response until it settles
        self.model_name = model_name  # the advertised name (the profile's, WIRE §14.3) a request without one gets
        self.store = store
        self.conversations = conversations
        self.journals = journals
        self.body = body
        self.hermes = hermes
        self.commentary = settings.interim_assistant_messages
        self.head: ResponseHead | None = None
        self.session_id = ""

    async def plan(self) -> TurnPlan:
        body, conversations = self.body, self.conversations
        response_id = new_response_id()
        resolved = await resolve_input(body.input, self.store, conversations.scope, response_id)
        previous = await conversations.previous(body.previous_response_id, body.conversation)
        # A conversation name never falls back to the session key (WIRE.md §4.7).
        key = self.hermes.session_key if body.conversation is None else None
        chain = await conversations.resolve(
            explicit_session=None, previous=previous, session_key=key, new_session=new_chain_session_id
        )
        inherited = previous.instructions if previous else None
        instructions = body.instructions if body.instructions is not None else inherited
        system = "\n".join(s for s in ([instructions] if instructions else []) + resolved.system if s) or None
        base: HistoryLoader | None = None
        if body.conversation_history is not None:
            base = fixed_history(body.conversation_history)
        elif previous is not None:
            base = conversations.chain_history(previous)
        elif chain.key_session:
            base = conversations.session_history(chain.session_id)
        history = extended(base, resolved.messages[:-1], TRUNCATION_KEEP if body.truncation == "auto" else None)
        head = ResponseHead(
            id=response_id,
            created_at=int(time.time()),
            model=body.selection.model or self.model_name,
            background=body.background,
            store=body.store,
            instructions=instructions,
            metadata=body.metadata,
            tools=body.tools,
            tool_choice=body.tool_choice,
            parallel_tool_calls=body.parallel_tool_calls,
            previous_response_id=previous.id if previous else None,
        )
        self.head, self.session_id = head, chain.session_id
        turn_id = new_run_id()
        record = StoredResponse(
            id=response_id,
            scope=conversations.scope,
            turn_id=turn_id,
            session_id=chain.session_id,
            status="in_progress",
            snapshot={},
            previous_response_id=head.previous_response_id,
            conversation=body.conversation,
            input_items=resolved.stored_items,
            instructions=instructions,
            commentary=self.commentary,
            messages=list(resolved.messages),  # until it settles: what a restart-settled turn leaves in the chain
            owner=self.owner,
        )
        return TurnPlan(
            session_id=chain.session_id,
            input=resolved.messages[-1],
            selection=body.selection,
            system_prompt=system,
            metadata=body.metadata,
            history=history,
            inputs=resolved.messages,
            bind_key=chain.bind_key,
            session_key=self.hermes.session_key,
            durable=body.store,
            surface="responses",
            turn_id=turn_id,
            reply=self._reply,
            persist=self._persister(record) if body.store else None,
            admitted=self._storer(record) if body.store else None,
        )

    def _reply(self, turn: Turn) -> dict[str, Any]:
        assert self.head is not None
        return {
            "head": asdict(self.head),
            "commentary": self.commentary,
            "queued": turn.queued_at_admission,
            "session_id": self.session_id,
        }

    def renderer(self) -> ResponsesRenderer:
        assert self.head is not None
        return renderer(self.settings, self.head, self.commentary, self.hermes.tool_items)

    def _storer(self, record: StoredResponse) -> Callable[[Turn], Awaitable[None]]:
        async def store_admitted(turn: Turn) -> None:
            assert self.head is not None
            r = renderer(self.settings, self.head, self.commentary)
            r.created(turn.queued_at_admission)
            stored = replace(record, status=r.status, snapshot=r.snapshot(), queued=turn.queued_at_admission)
            log_evictions(await self.store.put_response(stored, record.input_items))

        return store_admitted

    def _persister(self, record: StoredResponse) -> Persister:
        assert self.head is not None
        head, settings, store, journals = self.head, self.settings, self.store, self.journals

        async def persist(turn: Turn, finished: TurnFinished) -> None:
            # record.messages are the turn's inputs (resolved.messages): the transcript starts with them.
            final, items = settled(settings, record, head, turn.queued_at_admission, [*turn.journal.events, finished])
            await journals.write_now(turn.run_id, turn.journal, [finished], at=turn.finished_at)
            log_evictions(await store.put_response(final, items))

        return persist
