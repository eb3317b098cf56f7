"""The Responses surface (WIRE.md §4): a new Response's turn plan — its head, chain (submission/conversations.py)
and history — its stored record at admission and at settlement, its `ResponsesReply`, and its delivery as
response.* events or the Response object (dialects/responses.py, dialects/response_objects.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..config.settings import Settings
from ..core.events import TurnFinished
from ..dialects.record import SseRecord
from ..dialects.response_objects import renderer, settled
from ..dialects.responses import ResponseHead, ResponsesRenderer
from ..protocol.common import new_chain_session_id, new_response_id, new_run_id
from ..protocol.responses import ResponsesRequest, hosted_tools, resolve_input
from ..store.base import Eviction, StoredResponse
from ..store.roles import ResponseStore
from ..submission.conversations import Conversations, extended, fixed_history
from ..submission.submit import Existing, Resume, TurnPlan, turn_request
from ..turns import HistoryLoader, Journal, Persister, Turn
from ..turns.durable import JournalSaver
from .surface import Fold, Posted, Render, never_paused, run_headers

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


@dataclass(frozen=True)
class ResponsesReply:
    """What a keyed Responses retry re-renders with: the Response's head (its id, creation time, model…), whether it
    renders commentary and was queued at admission, its session, and whether its server tools are `mcp_call` items
    (§15.3; absent in records written before: false)."""

    head: ResponseHead
    commentary: bool
    queued: bool
    session_id: str
    hosted: bool = False

    @property
    def model(self) -> str:
        return self.head.model

    def to_json(self) -> dict[str, Any]:
        reply = {
            "head": asdict(self.head),
            "commentary": self.commentary,
            "queued": self.queued,
            "session_id": self.session_id,
        }
        if self.hosted:
            reply["hosted"] = True
        return reply

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> ResponsesReply:
        head = ResponseHead(**stored["head"])
        return cls(head, stored["commentary"], stored["queued"], stored["session_id"], bool(stored.get("hosted")))


class ResponsesSurface:
    """One POST /v1/responses: `plan()` resolves its input and chain and describes its turn; after admission `head`
    and `session_id` say how to render it, the stored record is kept in step, and the delivery renders the Response
    (new, attached or replayed)."""

    name = "responses"

    def __init__(
        self,
        settings: Settings,
        store: ResponseStore,
        conversations: Conversations,
        journals: JournalSaver,
        model_name: str,
        owner: str,
        posted: Posted[ResponsesRequest],
    ) -> None:
        self.settings = settings
        self.owner = owner  # the boot id of this gateway process: stored with the Response until it settles
        self.model_name = model_name  # the advertised name (the profile's, WIRE §14.3) a request without one gets
        self.store = store
        self.conversations = conversations
        self.journals = journals
        self.create = posted.body  # the request body
        self.hermes = posted.hermes
        self.key = posted.key
        self.large = posted.large
        self.commentary = settings.interim_assistant_messages
        # How this Response renders the server's own tools (WIRE.md §15.3): fixed now, stored with it, so that its
        # replays and read-back render as this request asked.
        self.hosted = hosted_tools(posted.body, posted.hermes.tool_items, settings.responses_tool_items)
        self.head: ResponseHead | None = None
        self.session_id = ""
        self._record: StoredResponse | None = None  # what is stored at admission (store: true)
        # the delivery: its renderer, first records, headers, and the wait for a durable journal
        self._renderer: ResponsesRenderer | None = None
        self._first: list[SseRecord] = []
        self._headers: dict[str, str] = {}
        self._before_send: Callable[[], Awaitable[None]] | None = None

    def identity(self) -> str:
        return self.create.identity()

    def target(self) -> Any:
        return [self.hermes.session_key]

    async def plan(self) -> TurnPlan:
        body, conversations = self.create, self.conversations
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
        self._record = record = StoredResponse(
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
            hosted=self.hosted,
            messages=list(resolved.messages),  # until it settles: what a restart-settled turn leaves in the chain
            owner=self.owner,
        )
        request = turn_request(
            chain.session_id,
            resolved.messages[-1],
            body.selection,
            system_prompt=system,
            metadata=body.metadata,
            session_key=self.hermes.session_key,
            turn_id=turn_id,
        )
        return TurnPlan(
            request,
            history=history,
            inputs=resolved.messages,
            bind_key=chain.bind_key,
            durable=body.store,
            persist=self._persister(record) if body.store else None,
        )

    def reply(self, turn: Turn) -> ResponsesReply:
        assert self.head is not None
        return ResponsesReply(self.head, self.commentary, turn.queued_at_admission, self.session_id, self.hosted)

    async def resumes(self, waiting: Sequence[Turn]) -> Resume | None:
        """Not yet: a Response does not end at a suspension (issue 22, §15.3)."""
        return None

    def resuming(self, turn: Turn, start: int) -> None:
        raise AssertionError("never resumes")

    async def admitted(self, turn: Turn) -> None:
        """A stored Response is stored in progress once admitted (WIRE.md §4.5)."""
        record = self._record
        if not self.create.store or record is None:
            return
        assert self.head is not None
        r = renderer(self.settings, self.head, self.commentary, hosted=self.hosted)
        r.created(turn.queued_at_admission)
        stored = replace(record, status=r.status, snapshot=r.snapshot(), queued=turn.queued_at_admission)
        log_evictions(await self.store.put_response(stored, record.input_items))

    # Delivery

    def delivering(self, turn: Turn) -> None:
        assert self.head is not None
        self._deliver(self.head, self.commentary, self.hosted, turn.queued_at_admission, turn.journal)
        self._headers = run_headers(self.session_id, turn.run_id, self.hermes.session_key)

    def replaying(self, existing: Existing) -> None:
        reply = ResponsesReply.from_json(existing.record.reply)
        self._deliver(reply.head, reply.commentary, reply.hosted, reply.queued, existing.journal)
        self._headers = run_headers(reply.session_id, existing.run_id, self.hermes.session_key, replayed=True)

    def _deliver(self, head: ResponseHead, commentary: bool, hosted: bool, queued: bool, journal: Journal) -> None:
        self._renderer = renderer(self.settings, head, commentary, self.hermes.tool_items_shown, hosted=hosted)
        self._first = self._renderer.created(queued)
        # Durable journals show no event before it is saved: a resume after a crash loses nothing.
        saver = self.journals
        self._before_send = (lambda: saver.durable(journal)) if saver.watching(journal) else None

    @property
    def detached(self) -> bool:
        """A background Response asked for as JSON: its reply is the object as it stands, the turn runs on."""
        return self.create.background and not self.create.stream

    @property
    def stream(self) -> bool:
        return self.create.stream

    @property
    def keep(self) -> bool:
        return self.create.background or self.key is not None

    @property
    def done_marker(self) -> bool:
        return False

    @property
    def render(self) -> Render:
        assert self._renderer is not None
        return self._renderer.render

    @property
    def fold(self) -> Fold:
        return self.render

    start = 0  # from the journal's start (a delivery here does not yet end at a suspension)

    @property
    def paused(self) -> Callable[[], bool]:
        return never_paused

    async def suspended(self) -> None:
        pass

    @property
    def before_send(self) -> Callable[[], Awaitable[None]] | None:
        return self._before_send

    def headers(self) -> dict[str, str]:
        return self._headers

    def first(self) -> list[SseRecord]:
        return self._first

    def body(self) -> dict[str, Any]:
        assert self._renderer is not None
        return self._renderer.snapshot()

    def _persister(self, record: StoredResponse) -> Persister:
        assert self.head is not None
        head, settings, store, journals = self.head, self.settings, self.store, self.journals

        async def persist(turn: Turn, finished: TurnFinished) -> None:
            # record.messages are the turn's inputs (resolved.messages): the transcript starts with them.
            final, items = settled(settings, record, head, turn.queued_at_admission, [*turn.journal.events, finished])
            await journals.write_now(turn.run_id, turn.journal, [finished], at=turn.finished_at)
            log_evictions(await store.put_response(final, items))

        return persist
