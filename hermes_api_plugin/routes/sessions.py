"""Sessions (WIRE.md §7): list, get, create, update, delete, messages, and session chat (JSON and stream: parse →
submit → deliver; its turn plan, reply and rendering are the surface's, surfaces/sessions.py)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..core.errors import ApiError, invalid_request, not_found
from ..http.app_keys import RUNTIME, SETTINGS, STORE, TURNS
from ..http.delivery import deliver_outcome
from ..http.middleware import large_body, percent_decodes_to_utf8, read_json, read_parsed
from ..http.profiles import profile_of
from ..protocol.common import (
    check_session_id,
    idempotency_key,
    last_event_id,
    new_session_id,
    parse_hermes_headers,
)
from ..protocol.params import parse_params
from ..protocol.sessions import (
    LIST_QUERY,
    MESSAGES_QUERY,
    SessionChatRequest,
    parse_session_chat,
    parse_session_create,
    parse_session_fork,
    parse_session_update,
)
from ..store.base import SessionMessageRow
from ..submission.submit import Refusal, Submission, refusal_error
from ..surfaces.sessions import SessionChatSurface
from ..surfaces.surface import Posted
from .replies import json_response


def session_not_found() -> ApiError:
    return not_found("No session with that id", code="session_not_found")


async def missing(request: web.Request, session_id: str) -> ApiError:
    """A session this host's store lacks: 404 session_not_found, or 409 session_on_other_host when another gateway
    host keeps it (sessions per host on a shared store, placement.py)."""
    await profile_of(request).conversations.placement.check(session_id)
    return session_not_found()


def _path_session(request: web.Request) -> str:
    session_id = request.match_info["session_id"]
    if not percent_decodes_to_utf8(request.raw_path.partition("?")[0]):
        # `/api/sessions/%FF` would otherwise name the session literally called "%FF" (`/api/sessions/%25FF`).
        raise invalid_request("invalid_session_id", "session_id is not valid UTF-8", "session_id")
    check_session_id(session_id, "session_id")
    return session_id


async def list_sessions(request: web.Request) -> web.Response:
    query = parse_params(request.query, LIST_QUERY)
    limit, offset = query["limit"], query["offset"]
    sessions = profile_of(request).sessions
    data, more = await sessions.list_sessions(limit, offset, query["source"], query["include_children"])
    return json_response({"object": "list", "data": data, "limit": limit, "offset": offset, "has_more": more})


async def get_session(request: web.Request) -> web.Response:
    session_id = _path_session(request)
    session = await profile_of(request).sessions.get_session(session_id)
    if session is None:
        raise await missing(request, session_id)
    return json_response({"object": "hermes.session", "session": session})


async def create_session(request: web.Request) -> web.Response:
    create = parse_session_create(await read_json(request))
    session_id = create.id or new_session_id()
    profile = profile_of(request)
    store = profile.sessions
    await profile.conversations.placement.check(session_id)  # kept by another host: never a second one of that id here
    if not await store.create_session(session_id, create.title):
        raise session_exists()
    await profile.conversations.placement.record(session_id)
    return json_response({"object": "hermes.session", "session": await store.get_session(session_id)}, status=201)


def session_exists() -> ApiError:
    return ApiError(409, "A session with that id exists", type="conflict_error", code="session_exists", param="id")


async def fork_session(request: web.Request) -> web.Response:
    """Branch a session (WIRE §14.1): a new session with the messages copied and the original as its parent."""
    session_id = _path_session(request)
    fork = parse_session_fork(await read_json(request) if request.can_read_body else {})
    fork_id = fork.id or new_session_id()
    profile = profile_of(request)
    store = profile.sessions
    result = await store.fork_session(session_id, fork_id, fork.title)
    if result == "no_source":
        raise await missing(request, session_id)
    if result == "exists":
        raise session_exists()
    await profile.conversations.placement.record(fork_id)
    return json_response({"object": "hermes.session", "session": await store.get_session(fork_id)}, status=201)


async def update_session(request: web.Request) -> web.Response:
    session_id = _path_session(request)
    fields = parse_session_update(await read_json(request))
    store = profile_of(request).sessions
    if not await store.update_session(session_id, fields):
        raise await missing(request, session_id)
    return json_response({"object": "hermes.session", "session": await store.get_session(session_id)})


async def delete_session(request: web.Request) -> web.Response:
    session_id = _path_session(request)
    if request.app[TURNS].active_on(session_id):
        raise ApiError(409, "A turn is running on this session", type="conflict_error", code="session_active_turn")
    profile = profile_of(request)
    deleted = await profile.sessions.delete_session(session_id)
    request.app[RUNTIME].forget_conversation(session_id, profile.home)  # its warm agent goes with it
    error = None if deleted else await missing(request, session_id)  # another host's session: 409, nothing unbound
    await request.app[STORE].unbind_session(session_id)  # session keys no longer lead to it; no host keeps it
    if error is not None:
        raise error
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
        "id": row["id"],
        "role": row["role"],
        "content": content,
        "reasoning": row["reasoning"],
        "tool_calls": extra.get("tool_calls"),
        "tool_call_id": call_id,
        "tool_name": tool_names.get(call_id) if call_id else None,
        "timestamp": row["timestamp"],
        "compacted": row["compacted"],
    }


async def session_messages(request: web.Request) -> web.Response:
    requested = _path_session(request)
    query = parse_params(request.query, MESSAGES_QUERY)
    store = profile_of(request).sessions
    if await store.get_session(requested) is None:
        raise await missing(request, requested)
    session_id = await store.live_session_id(requested)  # a compacted Hermes session goes on under its tip
    limit, offset, order = query["limit"], query["offset"], query["order"]
    include_compacted, inline_images = query["include_compacted"], query["inline_images"]
    rows = await store.session_message_rows(
        session_id, limit=limit, offset=offset, newest_first=order == "latest", include_compacted=include_compacted
    )
    tool_names = await store.session_tool_names(session_id) if any(r["extra"].get("tool_call_id") for r in rows) else {}
    data = [_message_view(row, tool_names, inline_images) for row in rows]
    return json_response(
        {
            "object": "list",
            "session_id": session_id,
            "data": data,
            "pagination": {"limit": limit, "offset": offset, "order": order, "returned": len(data)},
        }
    )


async def session_chat(request: web.Request) -> web.StreamResponse:
    return await _session_chat(request, stream=False)


async def session_chat_stream(request: web.Request) -> web.StreamResponse:
    return await _session_chat(request, stream=True)


async def _session_chat(request: web.Request, *, stream: bool) -> web.StreamResponse:
    requested = _path_session(request)
    post = await _posted_chat(request, stream)
    profile = profile_of(request)
    conversations, model_name = profile.conversations, profile.model_name
    hold = post.hermes.holds_approvals(request.app[SETTINGS].approvals_chat)
    surface = await SessionChatSurface.on_live_tip(conversations, model_name, post, requested, stream, hold)
    outcome: Submission[None] = await profile.submitter.submit(surface)
    if isinstance(outcome, Refusal):
        raise refusal_error(outcome)
    return await deliver_outcome(request, outcome, surface)


async def _posted_chat(request: web.Request, stream: bool) -> Posted[SessionChatRequest]:
    """Every header is read here, before admission: nothing after `submit` may refuse the request (issue 20, defect
    1); a stream's Last-Event-ID is the last record its retry saw (WIRE.md §7.4)."""
    hermes = parse_hermes_headers(request.headers)
    key = idempotency_key(request.headers)
    after = last_event_id(request.headers) if stream else 0
    providers = request.app[RUNTIME].providers()
    chat = await read_parsed(request, lambda body: parse_session_chat(body, providers))
    return Posted(chat, hermes, key, await large_body(request), after)
