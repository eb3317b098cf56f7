"""The Responses surface (WIRE.md §4): a new Response's turn plan — its head, chain (submission/conversations.py)
and history — its stored record at admission and at settlement, its `ResponsesReply`, and its delivery as
response.* events or the Response object (dialects/responses.py, dialects/response_objects.py).

Turn-taking (WIRE.md §15.3): a Response ends where its turn suspends for the client — stored `completed` at that
point, whether a client watches or not (the turn's suspensions tell `_TurnResponses`) — and the request that answers
it resumes the same turn as a new Response over the rest of its journal (`resumes`, `resuming`, `resumed`): found by
its `previous_response_id` or `conversation`, or statelessly by the `approval_request_id` / `call_id` its trailing
items answer. A turn's Responses share one `_TurnResponses` (`Turn.dialect_state`): the turn's settlement stores the
last one with the turn's whole transcript, the earlier ones keep none (a chain reads each turn once).

On a shared store a Response that ends at a request also publishes what its turn waits by (its id, the approval
request's, the calls': cluster/waits.py). An answer landing on another gateway finds the turn there, decides the answer
from the owner's journal (`responses_answer`, as locally) and streams the new Response from the followed journal; the
new Response travels with the answer (`resuming_remote` → `_TurnResponses.answered_elsewhere`), so that the owner keeps
it — stored, ended at the next request, settled — exactly as if the request had come to it (W-15.4).

Long because a Response and the turn-taking of its turn (the Responses one turn is delivered as) are one
lifecycle: plan, admission, suspension, resumption and settlement share the same records."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from ..cluster.waits import CALL, RESPONSE, Waiting, Waits, approval_wait, call_wait, response_wait, session_wait
from ..config.settings import Settings
from ..core.content import Message
from ..core.events import (
    ApprovalRequested,
    ClientRequest,
    QuestionAsked,
    ToolCallRequested,
    TurnEvent,
    TurnFinished,
    required_action,
    suspends,
    waiting_calls,
)
from ..core.transcript import turn_messages
from ..dialects.prompts import chosen
from ..dialects.record import SseRecord
from ..dialects.response_objects import render_from, renderer, settled
from ..dialects.responses import ResponseHead, ResponsesRenderer, head_to_json
from ..protocol.approval_commands import ApprovalCommand, offered
from ..protocol.common import new_chain_session_id, new_response_id, new_run_id
from ..protocol.response_settings import echoed_tools
from ..protocol.responses import (
    ApprovalAnswer,
    ResponsesRequest,
    TrailingAnswers,
    hosted_tools,
    resolve_input,
    stored_input_items,
    trailing_answers,
    unanswerable_outputs,
)
from ..store.base import Eviction, StoredResponse, StoreError
from ..store.roles import ResponseStore
from ..submission.conversations import Conversations, extended, fixed_history
from ..submission.submit import Existing, Resume, TurnPlan
from ..turns import HistoryLoader, Journal, Persister, Turn
from ..turns.answers import APPROVAL, DECLINE, QUESTION, ClientAnswer, outputs_answer
from ..turns.durable import JournalSaver
from .surface import Fold, Posted, Render, run_headers

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


def response_waits(
    response_id: str, approval_ids: Mapping[str, ApprovalRequested], events: Sequence[TurnEvent], session_id: str
) -> list[str]:
    """What a Response that ended at a request is answered by (cluster/waits.py): its id (`previous_response_id`, a
    conversation's head), the id of the approval request it waits for, the client tool calls that wait, its session."""
    asked = required_action(events)
    keys = [response_wait(response_id)]
    keys += [approval_wait(item_id) for item_id, request in approval_ids.items() if request is asked]
    keys += [call_wait(call_id) for call_id in waiting_calls(events)]
    return [*keys, session_wait(session_id)]


def responses_answer(
    asked: ClientRequest | None, mine: Sequence[ApprovalAnswer], answers: TrailingAnswers, pending: Collection[str]
) -> ClientAnswer:
    """A Responses request as the answer to `asked`, what its suspended turn waits for (WIRE.md §15.3): the question's
    answer (a non-blank text), the decision of the approval (`mine`: the `mcp_approval_response`s naming its request,
    else any), the outputs of the calls among `pending`; else DECLINE — an input without an `mcp_approval_response`
    while an approval waits is denied (it never runs), client tool calls without their outputs fail."""
    if isinstance(asked, QuestionAsked):
        text = answers.text
        if text is not None and text.strip():
            return ClientAnswer(QUESTION, text=chosen(asked, text))
    elif isinstance(asked, ApprovalRequested):
        decisions = list(mine) or list(answers.approvals)
        if decisions:
            decided = offered(ApprovalCommand(decisions[0].choice), asked.choices)
            return ClientAnswer(APPROVAL, choice=decided.choice)
    elif isinstance(asked, ToolCallRequested):
        answer = outputs_answer(pending, {o.call_id: o.output for o in answers.outputs})
        if answer.outputs:
            return answer
    return ClientAnswer(DECLINE)


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
    start: int = 0  # an answer to a suspended turn: the journal position its Response begins at (WIRE.md §15.3)

    @property
    def model(self) -> str:
        return self.head.model

    def to_json(self) -> dict[str, Any]:
        reply: dict[str, Any] = {
            "head": head_to_json(self.head),
            "commentary": self.commentary,
            "queued": self.queued,
            "session_id": self.session_id,
        }
        if self.hosted:
            reply["hosted"] = True
        if self.start:
            reply["start"] = self.start
        return reply

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> ResponsesReply:
        head = ResponseHead(**stored["head"])
        hosted, start = bool(stored.get("hosted")), int(stored.get("start", 0))
        return cls(head, stored["commentary"], stored["queued"], stored["session_id"], hosted, start)


class _TurnResponses:
    """The Responses one turn is delivered as (WIRE.md §15.3): the current one — its head, stored record (None:
    `store: false`) and the journal position it begins at — the ids of the approval requests it ended at, and the
    earlier ones of the turn stored at their suspension."""

    def __init__(
        self,
        settings: Settings,
        store: ResponseStore,
        head: ResponseHead,
        record: StoredResponse | None,
        waits: Waits | None = None,
        scope: str = "",
    ) -> None:
        self.settings = settings
        self.store = store
        self.waits = waits  # where the turn's wait keys go while it waits (an answer on another gateway, W-15.4)
        self.scope = scope
        self.head = head
        self.record = record
        self.queued = False
        self.start = 0
        self.commentary = record.commentary if record is not None else True  # how the current one renders
        self.hosted = record.hosted if record is not None else False
        self.inputs = list(record.messages) if record is not None else []  # what the turn's first request added
        self._paused_items: list[dict[str, Any]] = []  # the current one's items, as stored at its suspension
        self.earlier: list[tuple[StoredResponse, list[dict[str, Any]]]] = []  # stored paused, transcript not moved
        self.approval_ids: dict[str, ApprovalRequested] = {}  # the current one's mcp_approval_request ids
        self.ready: asyncio.Future[None] | None = None  # the current one's in-progress record is stored
        self.paused: asyncio.Future[None] | None = None  # the current one ended at a request and is stored so
        self._storing: asyncio.Task[None] | None = None
        self._listening = False

    def follow(self, turn: Turn, record: StoredResponse | None, head: ResponseHead, start: int) -> None:
        """Make a Response the current one (synchronously: before the turn may go on); when the turn next asks its
        client, the Response ends there and is stored (the turn's suspensions tell: no event is watched for it)."""
        self.record, self.head, self.start = record, head, start
        self.approval_ids = {}
        self.paused = asyncio.get_running_loop().create_future()
        if not self._listening:
            self._listening = True
            turn.suspensions.on_request(lambda: self._asked(turn))

    def _asked(self, turn: Turn) -> None:
        """The turn asked its client: the current Response ends at the first request (later ones wait for it)."""
        paused = self.paused
        if paused is None or paused.done() or (self._storing is not None and not self._storing.done()):
            return
        self._storing = asyncio.ensure_future(self._pause(turn, paused))

    async def _pause(self, turn: Turn, paused: asyncio.Future[None]) -> None:
        """Store the current Response `completed` where it ended and know its approval ids."""
        try:
            await self._store_paused(turn)
        finally:
            if not paused.done():
                paused.set_result(None)

    async def _store_paused(self, turn: Turn) -> None:
        events = list(turn.journal.events)
        record = self.record
        r = render_from(
            renderer(self.settings, self.head, self.commentary, hosted=self.hosted),
            events,
            self.start,
            self.queued,
        )
        self.approval_ids = dict(r.approval_ids)
        if record is not None:
            if self.ready is not None:
                await asyncio.shield(self.ready)
            end = next((i for i in range(self.start, len(events)) if suspends(events[i])), len(events))
            messages = turn_messages(self.inputs, events[:end])
            stored = replace(record, status=r.status, snapshot=r.snapshot(), messages=messages)
            items = [*record.input_items, *r.output]
            self.record = stored
            await self._put(stored, items)
            self._paused_items = items
        if self.waits is not None:  # after the Response is stored: an answer on another gateway reads it
            keys = response_waits(self.head.id, self.approval_ids, events, turn.request.session_id)
            await self.waits.publish(turn.run_id, self.scope, keys, turn.journal)

    def answered_elsewhere(self, turn: Turn, handoff: Mapping[str, Any]) -> None:
        """Another gateway took the answer as a new Response (`ResponsesSurface.resuming_remote`): it becomes the
        current one here, stored, ended and settled as if the request had come here (turns/answers.py `TakesOver`)."""
        stored = handoff.get("record")
        record = StoredResponse(**stored, messages=list(self.inputs)) if isinstance(stored, dict) else None
        head = ResponseHead(**handoff["head"])
        self.resume(turn, record, head, int(handoff["start"]), bool(handoff["commentary"]), bool(handoff["hosted"]))

    def resume(
        self, turn: Turn, record: StoredResponse | None, head: ResponseHead, start: int, commentary: bool, hosted: bool
    ) -> None:
        """The Response `record` answers the current one and becomes current (synchronously, before the turn goes
        on): its in-progress record is stored in the background (`ready`), the settlement waits for it."""
        before = self.record
        if before is not None and before.status == "completed":
            self.earlier.append((before, self._paused_items))
        if self._storing is not None and not self._storing.done():
            self._storing.cancel()
        self.queued = False
        self.commentary, self.hosted = commentary, hosted
        self.ready = None
        if record is not None:
            self.ready = asyncio.ensure_future(self._put_in_progress(record, head))
        self.follow(turn, record, head, start)

    async def _put_in_progress(self, record: StoredResponse, head: ResponseHead) -> None:
        r = renderer(self.settings, head, record.commentary, hosted=record.hosted)
        r.created(False)
        r.resumed()
        await self._put(replace(record, status=r.status, snapshot=r.snapshot()), record.input_items)

    async def _put(self, record: StoredResponse, items: list[dict[str, Any]]) -> None:
        try:
            log_evictions(await self.store.put_response(record, items))
        except StoreError:
            log.exception("[API Server] Could not store response %s", record.id)

    async def settle(self, turn: Turn, finished: TurnFinished, journals: JournalSaver) -> None:
        """The turn settled: the current Response is stored as its journal leaves it, with the turn's whole
        transcript; the earlier ones of the turn keep none, so that a chain reads the turn once."""
        if self.ready is not None:
            await asyncio.shield(self.ready)
        record = self.record
        if record is None:
            return
        events = [*turn.journal.events, finished]
        final, items = settled(self.settings, replace(record, messages=self.inputs), self.head, self.queued, events)
        await journals.write_now(turn.run_id, turn.journal, [finished], at=turn.finished_at)
        for earlier, earlier_items in self.earlier:  # first: the conversation name stays with the last one
            emptied = replace(earlier, messages=[], conversation=None)
            log_evictions(await self.store.put_response(emptied, earlier_items))
        self.earlier.clear()
        log_evictions(await self.store.put_response(final, items))


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
        self._chain: _TurnResponses | None = None  # the Responses of the turn this one delivers (§15.3)
        self._answered: str | None = None  # the Response a resuming request answered, as it named it
        self._run: tuple[str, Journal] | None = None  # the run delivered and its journal
        self._previous: str | None = None  # the Response the request continues (`wait_keys`)
        self.start = 0  # the journal position this Response begins at
        self._warm: StoredResponse | None = None  # a warm-up's Response (WebSocket mode's `generate: false`)

    def identity(self) -> str:
        return self.create.identity()

    def target(self) -> Any:
        return [self.hermes.session_key]

    def _head(self, response_id: str, model: str, instructions: str | None, previous: str | None) -> ResponseHead:
        """A new Response of this request, created now: its model the request's, else `model`."""
        body = self.create
        return ResponseHead(
            id=response_id,
            created_at=int(time.time()),
            model=body.selection.model or model,
            background=body.background,
            store=body.store,
            instructions=instructions,
            metadata=body.metadata,
            tools=echoed_tools(body.tools),
            tool_choice=body.tool_choice,
            parallel_tool_calls=body.parallel_tool_calls,
            previous_response_id=previous,
            **body.settings.echoed(),
        )

    async def plan(self) -> TurnPlan:
        body, conversations = self.create, self.conversations
        response_id = new_response_id()
        resolved = await resolve_input(body.input, self.store, conversations.scope, response_id)
        previous = await conversations.previous(body.previous_response_id, body.conversation)
        carried = await conversations.carried(previous) if body.store else []  # a kept chain, stored with this one
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
        if resolved.unpaired_outputs:  # outputs of calls this input does not make: the conversation must have made them
            made = previous.snapshot.get("output", []) if previous is not None else []
            answered = {i.get("call_id") for i in made if isinstance(i, dict) and i.get("type") == "function_call"}
            if not answered.issuperset(resolved.unpaired_outputs):
                unanswerable_outputs(resolved.unpaired_outputs, list(await base()) if base is not None else [], made)
        history = extended(
            base, resolved.messages[:-1], TRUNCATION_KEEP if body.settings.truncation == "auto" else None
        )
        head = self._head(response_id, self.model_name, instructions, previous.id if previous else None)
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
            messages=[*carried, *resolved.messages],  # until it settles: what a restart-settled turn leaves
            owner=self.owner,
        )
        responses = _TurnResponses(
            self.settings, self.store, head, record if body.store else None, conversations.waits, conversations.scope
        )
        responses.inputs = [*carried, *resolved.messages]
        responses.commentary, responses.hosted = self.commentary, self.hosted
        self._chain = responses
        return TurnPlan(
            chain.session_id,
            resolved.messages[-1],
            body.selection,
            system_prompt=system,
            metadata=body.metadata,
            session_key=self.hermes.session_key,
            turn_id=turn_id,
            client_tools=body.client_tools,
            tool_choice=body.choice,
            history=history,
            inputs=resolved.messages,
            bind_key=chain.bind_key,
            durable=body.store,
            persist=self._persister(responses),
        )

    def reply(self, turn: Turn | None) -> ResponsesReply:
        assert self.head is not None
        queued = turn is not None and turn.queued_at_admission and not self.start
        return ResponsesReply(self.head, self.commentary, queued, self.session_id, self.hosted, self.start)

    async def resumes(self, waiting: Sequence[Turn]) -> Resume | None:
        """The suspended turn this request answers (WIRE.md §15.3): the one waiting for the `call_id`s or the
        `approval_request_id` its trailing items answer (stateless clients resend the whole history), else the one
        its `previous_response_id` or `conversation` continues. A request that continues a suspended Response
        without answering it resolves it negatively and is a new turn."""
        chains = [(t, t.dialect_state) for t in waiting if isinstance(t.dialect_state, _TurnResponses)]
        if not chains:
            return None
        body = self.create
        answers = trailing_answers(body.input)
        previous = body.previous_response_id
        if previous is None and body.conversation is not None:
            previous = await self.conversations.store.conversation_head(self.conversations.scope, body.conversation)
        outputs = {o.call_id: o.output for o in answers.outputs}
        for turn, responses in chains:
            if outputs.keys() & set(turn.suspensions.pending_calls()):
                self._answered = previous if responses.head.id == previous else None
                return Resume(turn, outputs_answer(turn.suspensions.pending_calls(), outputs))
        for turn, responses in chains:
            asked = turn.required_action
            if any(responses.approval_ids.get(a.request_id) is asked for a in answers.approvals):
                self._answered = previous if responses.head.id == previous else None
                return self._answer(turn, responses, answers)
        found = next(((t, r) for t, r in chains if previous is not None and r.head.id == previous), None)
        if found is None:
            return None
        self._answered = previous
        return self._answer(*found, answers)

    @staticmethod
    def _answer(turn: Turn, responses: _TurnResponses, answers: TrailingAnswers) -> Resume:
        """The request as the answer to what `turn` waits for (`responses_answer`)."""
        asked = turn.required_action
        mine = [a for a in answers.approvals if responses.approval_ids.get(a.request_id) is asked]
        return Resume(turn, responses_answer(asked, mine, answers, turn.suspensions.pending_calls()))

    async def wait_keys(self) -> Sequence[str]:
        """As `resumes` looks a turn up: by the calls and the approval requests its trailing items answer, else by the
        Response its `previous_response_id` or `conversation` continues."""
        body = self.create
        answers = trailing_answers(body.input)
        keys = [call_wait(o.call_id) for o in answers.outputs] + [
            approval_wait(a.request_id) for a in answers.approvals
        ]
        previous = body.previous_response_id
        if previous is None and body.conversation is not None:
            previous = await self.conversations.store.conversation_head(self.conversations.scope, body.conversation)
        self._previous = previous
        return [*keys, response_wait(previous)] if previous is not None else keys

    def answer_from(self, events: list[TurnEvent], waiting: Waiting) -> ClientAnswer | None:
        if waiting.run.surface != self.name:
            return None  # as `resumes`: a Response resumes only a turn delivered as Responses
        answers = trailing_answers(self.create.input)
        pending = waiting_calls(events)
        if waiting.key.startswith(CALL):
            answer = outputs_answer(pending, {o.call_id: o.output for o in answers.outputs})
            return answer if answer.outputs else None
        mine = [a for a in answers.approvals if approval_wait(a.request_id) in waiting.keys]
        return responses_answer(required_action(events), mine, answers, pending)

    async def resuming_remote(self, waiting: Waiting, journal: Journal, start: int) -> Mapping[str, Any] | None:
        """This request's Response resumes the turn `waiting.run` another gateway runs, as `resuming` does a local one's
        (its Response before read from the store); the owner keeps the new Response (`answered_elsewhere`)."""
        run, before_id = waiting.run, waiting.value(RESPONSE) or ""
        before = await self.store.get_response(self.conversations.scope, before_id) if before_id else None
        self._answered = before_id if before_id and self._previous == before_id else None
        model = (before.snapshot.get("model") if before is not None else None) or run.model or self.model_name
        self._resume_as(
            run.turn_id,
            run.session_id,
            start,
            before_id,
            before.instructions if before is not None else None,
            model,
            before.conversation if before is not None else None,
            [],
            run.owner,
        )
        self._deliver_run(run.turn_id, journal, queued=False)
        record = self._record
        assert record is not None and self.head is not None
        stored = {f.name: getattr(record, f.name) for f in fields(record) if f.name != "messages"}
        return {
            "head": head_to_json(self.head),
            "record": stored if self.create.store else None,
            "start": start,
            "commentary": self.commentary,
            "hosted": self.hosted,
        }

    def resuming(self, turn: Turn, start: int) -> None:
        """This request's Response resumes `turn` from `start`: a new Response (new id, the same run), chained to the
        one it answered (named as `previous_response_id` when the request named it), on the turn's session."""
        responses = turn.dialect_state
        assert isinstance(responses, _TurnResponses)
        if self._chain is responses and self.start == start:
            return  # asked again (a keyed answer: before its key is reserved, then to apply it)
        before = responses.head
        conversation = responses.record.conversation if responses.record is not None else None
        self._chain = responses
        self._resume_as(
            turn.run_id,
            turn.request.session_id,
            start,
            before.id,
            before.instructions,
            before.model,
            conversation,
            list(responses.inputs),
            self.owner,
        )
        self.delivering(turn)

    def _resume_as(
        self,
        run_id: str,
        session_id: str,
        start: int,
        before_id: str,
        instructions: str | None,
        model: str,
        conversation: str | None,
        inputs: list[Message],
        owner: str,
    ) -> None:
        """The new Response (new id, the same run) of a request that resumes a turn from `start`: chained to the one it
        answered (`before_id`; named as `previous_response_id` when the request named it), on the turn's session,
        taking what the request leaves out (instructions, model, conversation) from the one it answered."""
        body = self.create
        response_id = new_response_id()
        instructions = body.instructions if body.instructions is not None else instructions
        self.head = self._head(response_id, model, instructions, self._answered)
        self.session_id, self.start = session_id, start
        self._record = StoredResponse(
            id=response_id,
            scope=self.conversations.scope,
            turn_id=run_id,
            session_id=session_id,
            status="in_progress",
            snapshot={},
            previous_response_id=before_id,  # the chain goes through the Response it answered
            conversation=body.conversation if body.conversation is not None else conversation,
            input_items=stored_input_items(body.input, response_id),
            instructions=instructions,
            commentary=self.commentary,
            hosted=self.hosted,
            messages=inputs,
            owner=owner,
            start=start,
        )

    async def resumed(self, turn: Turn) -> None:
        """The answer is applied: this Response becomes the turn's current one — before the first await, so before the
        turn goes on — then is stored in progress (its GET finds it)."""
        assert self._chain is not None and self.head is not None
        record = self._record if self.create.store else None
        self._chain.resume(turn, record, self.head, self.start, self.commentary, self.hosted)
        if self._chain.ready is not None:
            await asyncio.shield(self._chain.ready)

    async def admitted(self, turn: Turn) -> None:
        """A stored Response is stored in progress once admitted (WIRE.md §4.5); the journal is watched for where
        it ends (§15.3)."""
        responses = self._chain
        assert responses is not None and self.head is not None
        turn.dialect_state = responses
        responses.queued = turn.queued_at_admission
        record = self._record
        if self.create.store and record is not None:
            r = renderer(self.settings, self.head, self.commentary, hosted=self.hosted)
            r.created(turn.queued_at_admission)
            stored = replace(record, status=r.status, snapshot=r.snapshot(), queued=turn.queued_at_admission)
            responses.record = stored
            log_evictions(await self.store.put_response(stored, record.input_items))
        responses.follow(turn, responses.record, self.head, 0)

    # Delivery

    def delivering(self, turn: Turn) -> None:
        self._deliver_run(turn.run_id, turn.journal, queued=turn.queued_at_admission and not self.start)

    def _deliver_run(self, run_id: str, journal: Journal, *, queued: bool) -> None:
        assert self.head is not None
        self._deliver(self.head, self.commentary, self.hosted, queued, journal)
        self._headers = run_headers(self.session_id, run_id, self.hermes.session_key)
        self._run = (run_id, journal)

    def replaying(self, existing: Existing) -> None:
        """The original ids, from where the original delivery began (a resumed Response's start)."""
        reply = ResponsesReply.from_json(existing.record.reply)
        self.start = reply.start
        self._deliver(reply.head, reply.commentary, reply.hosted, reply.queued, existing.journal)
        self._headers = run_headers(reply.session_id, existing.run_id, self.hermes.session_key, replayed=True)
        if existing.turn is not None and isinstance(existing.turn.dialect_state, _TurnResponses):
            self._chain = existing.turn.dialect_state

    def _deliver(self, head: ResponseHead, commentary: bool, hosted: bool, queued: bool, journal: Journal) -> None:
        self._renderer = renderer(self.settings, head, commentary, self.hermes.tool_items_shown, hosted=hosted)
        self._first = self._renderer.created(queued)
        if self.start:  # a resumed turn: what came before is the earlier Responses'
            self._renderer.prime(list(journal.events[: self.start]))
            self._first += self._renderer.resumed()
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

    @property
    def paused(self) -> Callable[[], bool]:
        assert self._renderer is not None
        return self._renderer.is_paused

    async def suspended(self) -> None:
        """The Response ended at a request: it is stored `completed` (and its approval ids known) before its end is
        written, so that the client's answer finds it at once."""
        chain = self._chain
        if chain is not None and chain.paused is not None and chain.head is self.head:
            await asyncio.shield(chain.paused)
        elif chain is None and self._run is not None and self._renderer is not None and self.head is not None:
            # another gateway's turn (W-15.4): its owner stores the Response; the answer may come here at once
            run_id, journal = self._run
            keys = response_waits(self.head.id, self._renderer.approval_ids, journal.events, self.session_id)
            if self.conversations.waits is not None:
                await self.conversations.waits.publish(run_id, self.conversations.scope, keys, journal)

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

    # WebSocket mode (WIRE.md §16)

    async def warm_up(self) -> list[SseRecord]:
        """`generate: false`: a Response that runs no turn — its input resolved and its chain checked as a new turn's
        (`plan`, nothing admitted), completed with no output; stored when the request stores (its input is then its
        chain's messages), else for its connection to keep (`kept`). The records of its delivery."""
        await self.plan()
        record = self._record
        assert record is not None and self.head is not None
        r = renderer(self.settings, self.head, self.commentary, self.hermes.tool_items_shown, hosted=self.hosted)
        records = r.created() + r.warmed()
        self._renderer = r
        self._warm = replace(record, status=r.status, snapshot=r.snapshot())
        if self.create.store:
            log_evictions(await self.store.put_response(self._warm, record.input_items))
        return records

    def kept(self) -> StoredResponse | None:
        """This request's Response as its WebSocket connection keeps it for `previous_response_id` when it is not
        stored: its chain fields and the messages its part of the turn added (up to where it ended: the turn's end, or
        a request to the client). None when it is stored, ended otherwise than completed or incomplete, or is a keyed
        retry's (its journal replayed: nothing of it was planned here)."""
        if self.create.store:
            return None
        if self._warm is not None:
            return self._warm
        record, run, r = self._record, self._run, self._renderer
        if record is None or run is None or r is None or r.status not in ("completed", "incomplete"):
            return None
        events = run[1].events
        end = next((i for i in range(self.start, len(events)) if suspends(events[i])), len(events))
        inputs = list(record.messages) if not self.start else []  # a resumed turn's input is the earlier Response's
        return replace(record, status=r.status, messages=turn_messages(inputs, events[self.start : end]))

    def _persister(self, responses: _TurnResponses) -> Persister:
        journals = self.journals

        async def persist(turn: Turn, finished: TurnFinished) -> None:
            await responses.settle(turn, finished, journals)

        return persist
