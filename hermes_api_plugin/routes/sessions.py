"""Sessions (WIRE.md §7): list, get, create, update, delete, messages, and session chat (JSON and stream)."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from ..admissions import error_for, idempotency_key, identity_hash
from ..content import Message, canonical_json, parse_content
from ..dialects.sessions import SessionStreamRenderer
from ..errors import (
    ApiError,
    draining,
    invalid_parameter,
    invalid_request,
    missing_parameter,
    not_found,
)
from ..journals import decode_journal
from ..keys import ADMISSIONS, JOURNALS, RUNTIME, SCOPE, SESSIONS, SETTINGS, STORE, TURNS
from ..middleware import read_json
from ..runtimes.base import TurnRequest
from ..store.base import SessionMessageRow, StoreError
from ..turns import Journal, Turn
from .common import (
    body_bool,
    check_session_id,
    json_response,
    new_run_id,
    optional_string,
    parse_hermes_headers,
    parse_model_options,
)
from .delivery import deliver, keyed_settler
from .runs import new_session_id

_PATCHABLE = frozenset({"title", "pinned", "archived"})


def session_not_found() -> ApiError:
    return not_found("No session with that id", code="session_not_found")


def _int_param(request: web.Request, name: str, default: int, lo: int, hi: int | None) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise invalid_parameter(f"'{name}' must be an integer", name) from None
    if value < lo or (hi is not None and value > hi):
        raise invalid_parameter(f"'{name}' must be between {lo} and {hi}", name)
    return value


def _bool_param(request: web.Request, name: str, default: bool) -> bool:
    return body_bool({name: request.query.get(name)}, name, default)


def _path_session(request: web.Request) -> str:
    session_id = request.match_info["session_id"]
    check_session_id(session_id, "session_id")
    return session_id


async def list_sessions(request: web.Request) -> web.Response:
    limit = _int_param(request, "limit", 50, 1, 200)
    offset = _int_param(request, "offset", 0, 0, None)
    data, more = await request.app[SESSIONS].list_sessions(limit, offset, request.query.get("source"))
    return json_response({"object": "list", "data": data, "limit": limit, "offset": offset, "has_more": more})


async def get_session(request: web.Request) -> web.Response:
    session = await request.app[SESSIONS].get_session(_path_session(request))
    if session is None:
        raise session_not_found()
    return json_response({"object": "hermes.session", "session": session})


async def create_session(request: web.Request) -> web.Response:
    body = await read_json(request)
    session_id = optional_string(body, "id")
    if session_id is None:
        session_id = new_session_id()
    check_session_id(session_id, "id")
    title = optional_string(body, "title")
    if title is not None and len(title) > 200:
        raise invalid_parameter("'title' is at most 200 characters", "title")
    store = request.app[SESSIONS]
    if not await store.create_session(session_id, title):
        raise ApiError(409, "A session with that id exists", type="conflict_error", code="session_exists", param="id")
    return json_response({"object": "hermes.session", "session": await store.get_session(session_id)}, status=201)


async def update_session(request: web.Request) -> web.Response:
    session_id = _path_session(request)
    body = await read_json(request)
    for name in body:
        if name not in _PATCHABLE:
            raise invalid_parameter(f"'{name}' cannot be changed; send title, pinned or archived", name)
    fields: dict[str, Any] = {}
    if "title" in body:
        title = body["title"]
        if title is not None and (not isinstance(title, str) or len(title) > 200):
            raise invalid_parameter("'title' must be a string of at most 200 characters", "title")
        fields["title"] = title
    for flag in ("pinned", "archived"):
        if flag in body:
            fields[flag] = body_bool(body, flag, False)
    store = request.app[SESSIONS]
    if not await store.update_session(session_id, fields):
        raise session_not_found()
    return json_response({"object": "hermes.session", "session": await store.get_session(session_id)})


async def delete_session(request: web.Request) -> web.Response:
    session_id = _path_session(request)
    if request.app[TURNS].active_on(session_id):
        raise ApiError(409, "A turn is running on this session", type="conflict_error", code="session_active_turn")
    deleted = await request.app[SESSIONS].delete_session(session_id)
    await request.app[STORE].unbind_session(session_id)  # session keys no longer lead to it
    if not deleted:
        raise session_not_found()
    return json_response({"object": "hermes.session.deleted", "id": session_id, "deleted": True})


def _message_view(row: SessionMessageRow, tool_names: dict[str, str], inline_images: bool) -> dict[str, Any]:
    parts = row["content"]
    has_image = any(p.get("type") == "image_url" for p in parts)
    if has_image:
        content: Any = [
            p if p.get("type") != "image_url" or inline_images else {"type": "text", "text": "[image]"} for p in parts
        ]
    else:
        content = "".join(p.get("text", "") for p in parts)
    extra = row["extra"]
    call_id = extra.get("tool_call_id")
    return {
        "id": row["id"], "role": row["role"], "content": content, "reasoning": row["reasoning"],
        "tool_calls": extra.get("tool_calls"), "tool_call_id": call_id,
        "tool_name": tool_names.get(call_id) if call_id else None, "timestamp": row["timestamp"],
        "compacted": row["compacted"],
    }


async def session_messages(request: web.Request) -> web.Response:
    session_id = _path_session(request)
    store = request.app[SESSIONS]
    if await store.get_session(session_id) is None:
        raise session_not_found()
    limit = _int_param(request, "limit", 500, 1, 500)
    offset = _int_param(request, "offset", 0, 0, None)
    order = request.query.get("order", "latest")
    if order not in ("latest", "oldest"):
        raise invalid_parameter("'order' must be 'latest' or 'oldest'", "order")
    include_compacted = _bool_param(request, "include_compacted", False)
    inline_images = _bool_param(request, "inline_images", True)
    rows = await store.session_message_rows(session_id, limit=limit, offset=offset, newest_first=order == "latest",
                                            include_compacted=include_compacted)
    tool_names = await store.session_tool_names(session_id) if any(r["extra"].get("tool_call_id") for r in rows) else {}
    data = [_message_view(row, tool_names, inline_images) for row in rows]
    return json_response({
        "object": "list", "session_id": session_id, "data": data,
        "pagination": {"limit": limit, "offset": offset, "order": order, "returned": len(data)},
    })


def _parse_chat(body: dict[str, Any], providers: frozenset[str]) -> tuple[Message, str | None, Any]:
    raw = body.get("message", body.get("input"))
    if raw is None:
        raise missing_parameter("message")
    parts = parse_content(raw, "message")
    message = Message("user", parts)
    if not message.visible:
        raise invalid_request("missing_user_message", "'message' must contain text or an image", "message")
    instructions = body.get("instructions", body.get("system_message"))
    if instructions is not None and not isinstance(instructions, str):
        raise invalid_parameter("'instructions' must be a string", "instructions")
    provider = optional_string(body, "provider")
    if provider is not None and provider not in providers:
        raise invalid_parameter(f"Provider '{provider}' is not configured on this gateway", "provider")
    return message, instructions, raw


async def session_chat(request: web.Request) -> web.StreamResponse:
    return await _session_chat(request, stream=False)


async def session_chat_stream(request: web.Request) -> web.StreamResponse:
    return await _session_chat(request, stream=True)


async def _session_chat(request: web.Request, *, stream: bool) -> web.StreamResponse:
    app = request.app
    settings, store, registry = app[SETTINGS], app[STORE], app[TURNS]
    session_id = _path_session(request)
    hermes = parse_hermes_headers(request)
    body = await read_json(request)
    message, instructions, raw = _parse_chat(body, app[RUNTIME].providers())
    model = optional_string(body, "model")
    provider = optional_string(body, "provider")
    choice = parse_model_options(body)
    key = idempotency_key(request)
    if registry.draining:
        raise draining()
    headers = {"X-Hermes-Session-Id": session_id}
    if hermes.session_key is not None:
        headers["X-Hermes-Session-Key"] = hermes.session_key

    def admit(keyed: bool) -> Turn:
        registry.check_capacity()
        turn_request = TurnRequest(
            turn_id=new_run_id(), session_id=session_id, input=message, system_prompt=instructions, model=model,
            provider=provider, model_options=dict(choice.model_options), reasoning_enabled=choice.reasoning_enabled,
            reasoning_effort=choice.reasoning_effort, commentary_enabled=settings.interim_assistant_messages,
            max_iterations=settings.max_turns,
        )
        turn = registry.admit(turn_request, queue_key=session_id,
                              history=lambda: app[SESSIONS].load_session_messages(session_id),
                              persist=keyed_settler(app) if keyed else None, hold=True)
        if keyed:
            app[JOURNALS].watch(turn.run_id, turn.journal)
        return turn

    if key is None:
        turn = admit(False)
        return await _deliver(request, turn.journal, turn, session_id, headers, stream, keyed=False)
    admissions, scope = app[ADMISSIONS], app[SCOPE]
    identity = identity_hash({"message": raw, "instructions": instructions, "model": model, "provider": provider,
                              "model_options": _folded_options(choice)})
    target = canonical_json([session_id, hermes.session_key])
    async with admissions.serialised(scope, "session_chat", key):
        try:
            decision = await admissions.decide(scope, "session_chat", key, identity, target, registry.is_live)
        except StoreError:
            raise error_for("storage_unavailable") from None
        if decision.outcome == "new":
            turn = admit(True)
            await admissions.reserve_turn(turn, scope, "session_chat", key, identity, target,
                                          {"session_id": session_id, "model": model or settings.model_name},
                                          decision.free_expired)
    # Delivery runs outside the key's lock: a retry arriving while the turn runs attaches at once.
    if decision.outcome == "new":
        return await _deliver(request, turn.journal, turn, session_id, headers, stream, keyed=True)
    if decision.code is not None:
        raise error_for(decision.code)
    assert decision.record is not None
    run_id = decision.record.turn_id
    replay_headers = {**headers, "Idempotency-Replayed": "true"}
    live = registry.get(run_id)
    if live is not None:
        return await _deliver(request, live.journal, None, session_id, replay_headers, stream, keyed=True,
                              run_id=run_id)
    try:
        journal = decode_journal(await store.load_journal(run_id))
    except StoreError:
        raise error_for("storage_unavailable") from None
    return await _deliver(request, journal, None, session_id, replay_headers, stream, keyed=True, run_id=run_id)


def _folded_options(choice: Any) -> dict[str, Any]:
    options = dict(choice.model_options)
    if choice.reasoning_effort is not None:
        options["reasoning"] = {**(options.get("reasoning") or {}), "effort": choice.reasoning_effort}
    return options


async def _deliver(request: web.Request, journal: Journal, turn: Turn | None, session_id: str,
                   headers: dict[str, str], stream: bool, *, keyed: bool, run_id: str | None = None) -> web.StreamResponse:
    """The turn as the `/chat` reply or the named-event stream; a retry's Last-Event-ID skips what it saw."""
    run = run_id or (turn.run_id if turn is not None else "")
    headers = {**headers, "X-Hermes-Run-Id": run}
    renderer = SessionStreamRenderer(session_id, run, journal.stamps)
    raw_after = request.headers.get("Last-Event-ID", "").strip()
    after = int(raw_after) if stream and raw_after.isdigit() else 0
    head_at = journal.stamps[0] if journal.stamps else time.time()

    def numbered(records: list[tuple[int, str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any], int]]:
        return [(name, payload, seq) for seq, name, payload in records if seq > after]

    return await deliver(
        request, journal, turn, stream=stream, keep=keyed, headers=headers, first=numbered(renderer.head(head_at)),
        render=lambda batch: numbered(renderer.render(batch)), fold=renderer.render, body=renderer.reply,
    )


