"""The Responses API: POST /v1/responses and the /v1/responses/{id} read-back, cancel and delete routes.

Requests are validated, their chain resolved (WIRE.md §4.7), then admitted as a turn whose journal the
Responses dialect renders; stored responses keep their object, transcript and journal (§4.6).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import time
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Any, Awaitable, Callable, Sequence

from aiohttp import web

from ..admissions import error_for, idempotency_key, identity_hash
from ..content import (
    Message,
    TextPart,
    ToolCall,
    canonical_json,
    parse_content,
    text_message,
)
from ..dialects.responses import ResponseHead, ResponsesRenderer
from ..errors import (
    ApiError,
    draining,
    invalid_parameter,
    invalid_request,
    missing_parameter,
    not_found,
)
from ..events import TurnFinished
from ..history import turn_messages
from ..journals import close_journal, decode_events, decode_journal
from ..keys import ADMISSIONS, JOURNALS, RUNTIME, SCOPE, SESSIONS, SETTINGS, STORE, TURNS
from ..middleware import read_json
from ..runtimes.base import TurnRequest
from ..sse import SseStream
from ..store.base import Eviction, Store, StoredResponse, StoreError
from ..turns import Journal, Turn
from .common import (
    HermesHeaders,
    body_bool,
    json_response,
    new_run_id,
    optional_string,
    parse_conversation_history,
    parse_hermes_headers,
    parse_model_options,
)
from .delivery import deliver, keyed_settler, pump

log = logging.getLogger("hermes_api_plugin")

TRUNCATION_KEEP = 100
CANCEL_WAIT_S = 5.0


def _not_found(param: str | None = None) -> ApiError:
    return not_found("No response with that id", code="response_not_found", param=param)


def _input_item_id(response_id: str, index: int) -> str:
    return "msg_" + hashlib.sha256(f"{response_id}:input:{index}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class ResponsesRequest:
    """A validated POST /v1/responses body (input items not yet resolved)."""

    input: list[Any]
    instructions: str | None
    previous_response_id: str | None
    conversation: str | None
    conversation_history: list[Message] | None
    store: bool
    stream: bool
    background: bool
    truncation: str
    model: str | None
    provider: str | None
    model_options: dict[str, Any]
    reasoning_enabled: bool
    reasoning_effort: str | None
    tools: list[Any]
    tool_choice: Any
    parallel_tool_calls: bool
    metadata: dict[str, Any]


def parse_responses_request(body: dict[str, Any], providers: frozenset[str]) -> ResponsesRequest:
    raw_input = body.get("input")
    if raw_input is None:
        raise missing_parameter("input")
    if isinstance(raw_input, str):
        if not raw_input.strip():
            raise invalid_request("missing_user_message", "'input' must contain a user message", "input")
        items: list[Any] = [raw_input]
    elif isinstance(raw_input, list):
        if not raw_input:
            raise invalid_request("missing_user_message", "'input' must contain a user message", "input")
        items = raw_input
    else:
        raise invalid_parameter("'input' must be a string or an array of items", "input")
    previous = optional_string(body, "previous_response_id")
    conversation = body.get("conversation")
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
        if not isinstance(conversation, str):
            raise invalid_parameter("'conversation.id' must be a string", "conversation")
    if conversation is not None and (not isinstance(conversation, str) or not conversation.strip()):
        raise invalid_parameter("'conversation' must be a non-empty string or {\"id\": string}", "conversation")
    if previous is not None and conversation is not None:
        raise invalid_request("conflicting_parameters",
                              "Send either 'previous_response_id' or 'conversation', not both", "conversation")
    explicit = parse_conversation_history(body)
    store = body_bool(body, "store", True)
    background = body_bool(body, "background", False)
    if background and not store:
        raise invalid_parameter("'background' requires 'store': true", "background")
    truncation = body.get("truncation", "disabled")
    if truncation not in ("auto", "disabled"):
        raise invalid_parameter("'truncation' must be 'auto' or 'disabled'", "truncation")
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise invalid_parameter("'instructions' must be a string", "instructions")
    provider = optional_string(body, "provider")
    if provider is not None and provider not in providers:
        raise invalid_parameter(f"Provider '{provider}' is not configured on this gateway", "provider")
    reasoning = body.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, dict):
        raise invalid_parameter("'reasoning' must be an object", "reasoning")
    choice = parse_model_options(body, alias_effort=(reasoning or {}).get("effort"), alias_param="reasoning.effort")
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise invalid_parameter("'metadata' must be an object", "metadata")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise invalid_parameter("'tools' must be an array", "tools")
    parallel = body_bool(body, "parallel_tool_calls", True)
    return ResponsesRequest(
        input=items, instructions=instructions, previous_response_id=previous, conversation=conversation,
        conversation_history=explicit, store=store, stream=body_bool(body, "stream", False), background=background,
        truncation=truncation, model=optional_string(body, "model"), provider=provider,
        model_options=dict(choice.model_options), reasoning_enabled=choice.reasoning_enabled,
        reasoning_effort=choice.reasoning_effort, tools=tools or [], tool_choice=body.get("tool_choice", "auto"),
        parallel_tool_calls=parallel, metadata=metadata or {},
    )


@dataclass(frozen=True)
class ResolvedInput:
    messages: list[Message]  # history items first, the turn input last
    system: list[str]
    stored_items: list[dict[str, Any]]


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(p.get("text", "") for p in output if isinstance(p, dict))
    return "" if output is None else str(output)


async def resolve_input(items: Sequence[Any], store: Store, scope: str, response_id: str) -> ResolvedInput:
    """Input items → messages (item references resolved, stored tool outputs substituted)."""
    messages: list[Message] = []
    system: list[str] = []
    stored: list[dict[str, Any]] = []
    for i, raw in enumerate(items):
        param = f"input[{i}]"
        item = raw
        if isinstance(item, dict) and item.get("type") == "item_reference":
            ref = item.get("id")
            found = await store.find_item(scope, ref) if isinstance(ref, str) else None
            if found is None:
                raise invalid_request("item_reference_not_found", f"No stored item with id {ref!r}", param)
            item = found
        own_id = _input_item_id(response_id, i)
        if isinstance(item, str):
            item = {"type": "message", "role": "user", "content": item}
        if not isinstance(item, dict):
            raise invalid_parameter(f"'{param}' must be a string or an object", param)
        kind = item.get("type", "message")
        if kind == "reasoning":
            continue
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise invalid_parameter(f"'{param}.role' must be user, assistant, system or developer", param)
            parts = parse_content(item.get("content"), f"{param}.content")
            if role in ("system", "developer"):
                system.append("".join(p.text for p in parts if isinstance(p, TextPart)))
            else:
                messages.append(Message(role, parts))
            content = item.get("content")
            if isinstance(content, str):
                content = [{"type": "input_text" if role != "assistant" else "output_text", "text": content}]
            stored.append({"id": own_id, "type": "message", "role": role, "status": "completed", "content": content})
        elif kind == "function_call":
            call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments", "{}")
            if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(arguments, str):
                raise invalid_parameter(f"'{param}' needs string 'call_id', 'name' and 'arguments'", param)
            messages.append(Message("assistant", (), tool_calls=(ToolCall(call_id, name, arguments),)))
            stored.append({**item, "id": own_id.replace("msg_", "fc_", 1)})
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise invalid_parameter(f"'{param}' needs a string 'call_id'", param)
            output = await store.find_tool_output(scope, call_id)  # a tool this server ran: its real output
            text = output if output is not None else _output_text(item.get("output"))
            messages.append(text_message("tool", text, tool_call_id=call_id))
            stored.append({**item, "id": own_id.replace("msg_", "fco_", 1)})
        else:
            raise invalid_parameter(f"'{param}' has an unsupported type {kind!r}", param)
    if not messages or messages[-1].role != "user" or not messages[-1].visible:
        raise invalid_request("missing_user_message", "The last input item must be a user message with text or an image",
                              "input")
    return ResolvedInput(messages, system, stored)


def _head_from_snapshot(snapshot: dict[str, Any]) -> ResponseHead:
    return ResponseHead(
        id=snapshot["id"], created_at=snapshot["created_at"], model=snapshot["model"],
        background=snapshot["background"], store=snapshot["store"], instructions=snapshot["instructions"],
        metadata=snapshot["metadata"], tools=snapshot["tools"], tool_choice=snapshot["tool_choice"],
        parallel_tool_calls=snapshot["parallel_tool_calls"], previous_response_id=snapshot["previous_response_id"],
    )


def _renderer(app: web.Application, head: ResponseHead, commentary: bool,
              hermes: HermesHeaders | None = None) -> ResponsesRenderer:
    """A renderer for one delivery; per-request options (`X-Hermes-Tool-Items`) apply to it, never to what
    is stored."""
    return ResponsesRenderer(head, commentary=commentary, tool_output_max_chars=app[SETTINGS].tool_output_max_chars,
                             tool_items=hermes.tool_items if hermes is not None else True)


def _log_evictions(evictions: Sequence[Eviction]) -> None:
    for eviction in evictions:
        if eviction.conversations:
            log.info("[API Server] Evicted response %s (responses.max_stored); conversation name(s) %s no longer "
                     "resolve", eviction.response_id, ", ".join(eviction.conversations))


def responses_identity(raw: dict[str, Any], body: ResponsesRequest) -> str:
    """WIRE.md §5.2: the identity fields as sent, string input and effort spellings folded."""
    value = raw.get("input")
    options = dict(body.model_options)
    if body.reasoning_effort is not None:
        options["reasoning"] = {**(options.get("reasoning") or {}), "effort": body.reasoning_effort}
    fields: dict[str, Any] = {
        "input": [{"role": "user", "content": value}] if isinstance(value, str) else value,
        "instructions": body.instructions, "previous_response_id": body.previous_response_id,
        "conversation": body.conversation, "conversation_history": raw.get("conversation_history"),
        "model": body.model, "provider": body.provider, "model_options": options, "tools": raw.get("tools"),
    }
    if "truncation" in raw:
        fields["truncation"] = raw["truncation"]
    return identity_hash(fields)


async def create_response(request: web.Request) -> web.StreamResponse:
    app = request.app
    hermes = parse_hermes_headers(request)
    raw = await read_json(request)
    body = parse_responses_request(raw, app[RUNTIME].providers())
    key = idempotency_key(request)
    registry = app[TURNS]
    if registry.draining:
        raise draining()
    if key is None:
        return await (await _Creation(request, body, hermes, None).admit())()
    admissions, scope = app[ADMISSIONS], app[SCOPE]
    identity = responses_identity(raw, body)
    target = canonical_json([hermes.session_key])
    async with admissions.serialised(scope, "responses", key):
        try:
            decision = await admissions.decide(scope, "responses", key, identity, target, registry.is_live)
        except StoreError:
            raise error_for("storage_unavailable") from None
        if decision.outcome == "new":
            keyed = _Keyed(key, identity, target, decision.free_expired)
            deliver = await _Creation(request, body, hermes, keyed).admit()
    # The key's lock covered lookup, admission and reservation; delivery runs outside it, so a retry
    # arriving while the turn runs attaches at once.
    if decision.outcome == "new":
        return await deliver()
    if decision.code is not None:
        raise error_for(decision.code)
    record = decision.record
    assert record is not None
    reply = record.reply
    head = ResponseHead(**reply["head"])
    renderer = _renderer(app, head, reply["commentary"], hermes)
    first = renderer.created(reply["queued"])
    headers = _headers(reply["session_id"], record.turn_id, hermes.session_key, replayed=True)
    live = registry.get(record.turn_id)
    if decision.outcome == "attach" and live is not None:
        if body.background and not body.stream:
            renderer.render(list(live.journal.events))
            return json_response(renderer.snapshot(), headers=headers)
        return await _deliver(request, body, live.journal, None, renderer, first, headers)
    try:
        journal = decode_journal(await app[STORE].load_journal(record.turn_id))
    except StoreError:
        raise error_for("storage_unavailable") from None
    return await _deliver(request, body, journal, None, renderer, first, headers)


def _headers(session_id: str, run_id: str, session_key: str | None, replayed: bool = False) -> dict[str, str]:
    headers = {"X-Hermes-Session-Id": session_id, "X-Hermes-Run-Id": run_id}
    if session_key is not None:
        headers["X-Hermes-Session-Key"] = session_key
    if replayed:
        headers["Idempotency-Replayed"] = "true"
    return headers


@dataclass(frozen=True)
class _Keyed:
    key: str
    identity: str
    target: str
    replace_expired: bool


class _Creation:
    """A new Response: resolve its input and chain, admit the turn, reserve its key, store it, deliver it."""

    def __init__(self, request: web.Request, body: ResponsesRequest, hermes: HermesHeaders,
                 keyed: _Keyed | None) -> None:
        self.request = request
        self.app = request.app
        self.body = body
        self.hermes = hermes
        self.keyed = keyed

    async def admit(self) -> Callable[[], Awaitable[web.StreamResponse]]:
        """Everything up to the head (validation, chain, admission, reservation, storage); returns the
        delivery, which the caller awaits outside the key's lock."""
        app, body, hermes = self.app, self.body, self.hermes
        settings, store, scope = app[SETTINGS], app[STORE], app[SCOPE]
        response_id = "resp_" + secrets.token_hex(16)
        resolved = await resolve_input(body.input, store, scope, response_id)

        # Which session and history (WIRE.md §4.7): explicit chain, conversation name, session key, or new.
        previous: StoredResponse | None = None
        if body.previous_response_id is not None:
            previous = await store.get_response(scope, body.previous_response_id)
            if previous is None:
                raise _not_found("previous_response_id")
        elif body.conversation is not None:
            head_id = await store.conversation_head(scope, body.conversation)
            previous = await store.get_response(scope, head_id) if head_id else None
        bind_key = False
        if previous is not None:
            session_id = previous.session_id
        elif body.conversation is None and hermes.session_key is not None:
            session_id = await store.session_for_key(scope, hermes.session_key) or "api-" + secrets.token_hex(8)
            bind_key = True
        else:
            session_id = "api-" + secrets.token_hex(8)
        inherited = previous.instructions if previous else None
        instructions = body.instructions if body.instructions is not None else inherited
        system = "\n".join(s for s in ([instructions] if instructions else []) + resolved.system if s) or None

        async def history() -> list[Message]:
            if body.conversation_history is not None:
                base = list(body.conversation_history)
            elif previous is not None:
                base = await store.chain_messages(scope, previous.id)
            elif bind_key:
                base = await app[SESSIONS].load_session_messages(session_id)
            else:
                base = []
            base += resolved.messages[:-1]
            return base[-TRUNCATION_KEEP:] if body.truncation == "auto" else base

        registry = app[TURNS]
        registry.check_capacity()
        if bind_key:
            assert hermes.session_key is not None
            await store.bind_session_key(scope, hermes.session_key, session_id)
        turn_request = TurnRequest(
            turn_id=new_run_id(), session_id=session_id, input=resolved.messages[-1], system_prompt=system,
            model=body.model, provider=body.provider, model_options=body.model_options,
            reasoning_enabled=body.reasoning_enabled, reasoning_effort=body.reasoning_effort,
            commentary_enabled=settings.interim_assistant_messages, max_iterations=settings.max_turns,
            metadata=body.metadata,
        )
        head = ResponseHead(
            id=response_id, created_at=int(time.time()), model=body.model or settings.model_name,
            background=body.background, store=body.store, instructions=instructions, metadata=body.metadata,
            tools=body.tools, tool_choice=body.tool_choice, parallel_tool_calls=body.parallel_tool_calls,
            previous_response_id=previous.id if previous else None,
        )
        commentary = settings.interim_assistant_messages
        record = StoredResponse(
            id=response_id, scope=scope, turn_id=turn_request.turn_id, session_id=session_id, status="in_progress",
            snapshot={}, previous_response_id=head.previous_response_id, conversation=body.conversation,
            input_items=resolved.stored_items, instructions=instructions, commentary=commentary,
            messages=list(resolved.messages),  # until it settles: what a restart-settled turn leaves in the chain
        )
        saver, admissions = app[JOURNALS], app[ADMISSIONS]
        keyed = self.keyed
        settle_keyed = keyed_settler(app)

        async def persist(turn: Turn, finished: TurnFinished) -> None:
            if body.store:
                renderer = _renderer(app, head, commentary)
                renderer.created(turn.queued_at_admission)
                renderer.render([*turn.journal.events, finished])
                final = replace(record, status=renderer.status, snapshot=renderer.snapshot(),
                                queued=turn.queued_at_admission,
                                messages=turn_messages(turn.inputs, turn.journal.events))
                await saver.write_now(turn.run_id, turn.journal, [finished])
                _log_evictions(await store.put_response(final, [*record.input_items, *renderer.output]))
            if keyed is not None:
                await settle_keyed(turn, finished)

        turn = registry.admit(
            turn_request, queue_key=session_id, history=history, inputs=resolved.messages,
            persist=persist if body.store or keyed else None, hold=True,
        )
        renderer = _renderer(app, head, commentary, hermes)
        first = renderer.created(turn.queued_at_admission)
        if keyed is not None:
            reply = {"head": asdict(head), "commentary": commentary, "queued": turn.queued_at_admission,
                     "session_id": session_id}
            await admissions.reserve_turn(turn, scope, "responses", keyed.key, keyed.identity, keyed.target, reply,
                                          keyed.replace_expired)
        try:
            if body.store:
                stored = replace(record, status=renderer.status, snapshot=renderer.snapshot(),
                                 queued=turn.queued_at_admission)
                _log_evictions(await store.put_response(stored, record.input_items))
        except BaseException as exc:
            turn.cancel()
            turn.release()
            if isinstance(exc, StoreError):
                raise error_for("storage_unavailable") from exc
            raise
        if body.store or keyed is not None:
            saver.watch(turn.run_id, turn.journal)
        headers = _headers(session_id, turn.run_id, hermes.session_key)
        if body.background and not body.stream:
            turn.release()
            snapshot = renderer.snapshot()

            async def at_once() -> web.StreamResponse:
                return json_response(snapshot, headers=headers)

            return at_once
        return partial(_deliver, self.request, body, turn.journal, turn, renderer, first, headers,
                       keyed=keyed is not None)


async def _deliver(request: web.Request, body: ResponsesRequest, journal: Journal, turn: Turn | None,
                   renderer: ResponsesRenderer, first: list[Any], headers: dict[str, str],
                   keyed: bool = True) -> web.StreamResponse:
    """Render a journal (a new turn's, an attached one's, or a replayed one) as SSE or the final object."""
    saver = request.app[JOURNALS]
    # Durable journals show no event before it is saved: a resume after a crash loses nothing.
    durable = (lambda: saver.durable(journal)) if saver.watching(journal) else None
    return await deliver(
        request, journal, turn, stream=body.stream, keep=body.background or keyed, headers=headers, first=first,
        render=renderer.render, fold=renderer.render, body=renderer.snapshot, before_send=durable,
    )



async def _stored(request: web.Request) -> StoredResponse:
    record = await request.app[STORE].get_response(request.app[SCOPE], request.match_info["response_id"])
    if record is None:
        raise _not_found()
    return record


def _live_snapshot(app: web.Application, record: StoredResponse, turn: Turn) -> dict[str, Any]:
    renderer = _renderer(app, _head_from_snapshot(record.snapshot), record.commentary)
    renderer.created(record.queued)
    renderer.render(list(turn.journal.events))
    return renderer.snapshot()


async def get_response(request: web.Request) -> web.StreamResponse:
    app = request.app
    record = await _stored(request)
    turn = app[TURNS].get(record.turn_id)
    if request.query.get("stream", "").lower() not in ("true", "1"):
        return json_response(_live_snapshot(app, record, turn) if turn is not None else record.snapshot)
    raw_after = request.query.get("starting_after")
    try:
        after = int(raw_after) if raw_after is not None else -1
    except ValueError:
        raise invalid_parameter("'starting_after' must be an integer", "starting_after") from None
    renderer = _renderer(app, _head_from_snapshot(record.snapshot), record.commentary, parse_hermes_headers(request))

    def after_n(records: list[Any]) -> list[Any]:
        return [r for r in records if r[1]["sequence_number"] > after]

    stream = await SseStream.open(request, {"X-Hermes-Session-Id": record.session_id,
                                            "X-Hermes-Run-Id": record.turn_id},
                                  after_n(renderer.created(record.queued)))
    if turn is not None:
        saver = app[JOURNALS]
        await pump(stream, turn.journal, lambda batch: after_n(renderer.render(batch)),
                   app[SETTINGS].sse_keepalive_seconds, before_send=lambda: saver.durable(turn.journal))
    else:
        events = decode_events(await app[STORE].load_journal(record.turn_id))
        await stream.send(after_n(renderer.render(events)))
    await stream.close()
    return stream.response


async def delete_response(request: web.Request) -> web.Response:
    app = request.app
    record = await _stored(request)
    if app[TURNS].get(record.turn_id) is not None:
        raise ApiError(409, "response_in_progress", type="conflict_error", code="response_in_progress")
    await app[STORE].delete_response(app[SCOPE], record.id)
    return json_response({"id": record.id, "object": "response", "deleted": True})


async def cancel_response(request: web.Request) -> web.Response:
    app = request.app
    record = await _stored(request)
    turn = app[TURNS].get(record.turn_id)
    background = bool(record.snapshot.get("background"))
    if turn is None:
        if background:
            return json_response(record.snapshot)
        raise invalid_request("response_not_cancellable", "Only background or detached responses can be cancelled")
    if not (background or turn.detached):
        raise invalid_request("response_not_cancellable",
                              "This response's client is still connected; stop it through its run instead")
    turn.cancel()
    try:
        await asyncio.wait_for(asyncio.shield(turn.wait()), CANCEL_WAIT_S)
    except asyncio.TimeoutError:
        return json_response(_live_snapshot(app, record, turn))
    settled = await app[STORE].get_response(app[SCOPE], record.id)
    return json_response(settled.snapshot if settled is not None else _live_snapshot(app, record, turn))


async def list_input_items(request: web.Request) -> web.Response:
    record = await _stored(request)
    query = request.query
    try:
        limit = int(query.get("limit", "20"))
    except ValueError:
        raise invalid_parameter("'limit' must be an integer from 1 to 100", "limit") from None
    if not 1 <= limit <= 100:
        raise invalid_parameter("'limit' must be an integer from 1 to 100", "limit")
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise invalid_parameter("'order' must be 'asc' or 'desc'", "order")
    items = list(record.input_items) if order == "asc" else list(reversed(record.input_items))
    after = query.get("after")
    if after is not None:
        ids = [item["id"] for item in items]
        if after not in ids:
            raise invalid_parameter("'after' is not an item of this response", "after")
        items = items[ids.index(after) + 1:]
    page = items[:limit]
    return json_response({
        "object": "list", "data": page, "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None, "has_more": len(items) > limit,
    })


async def settle_leftovers(app: web.Application) -> None:
    """At startup: responses a previous process left unsettled settle `failed` / unknown_execution (§5.4)."""
    store = app[STORE]
    for record in await store.unsettled_responses():
        journal, _ = await close_journal(store, record.turn_id)
        renderer = _renderer(app, _head_from_snapshot(record.snapshot), record.commentary)
        renderer.created(record.queued)
        renderer.render(journal.events)
        settled = replace(record, status=renderer.status, snapshot=renderer.snapshot(),
                          messages=turn_messages(record.messages, journal.events))
        await store.put_response(settled, [*record.input_items, *renderer.output])
        log.warning("[API Server] Response %s was left %s by a previous process: settled failed (unknown_execution)",
                    record.id, record.status)
