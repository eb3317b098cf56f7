"""The Responses API: POST /v1/responses and the /v1/responses/{id} read-back, cancel, delete and input items.

POST reads as parse → submit → deliver; what a new Response is made of (chain, head, stored record, reply) lives
in `surfaces/responses.py`, chain resolution in `submission/conversations.py`, the rendering in `dialects/responses.py`
and `dialects/response_objects.py`. On a shared store a Response another gateway runs is read, resumed
(`?stream=true&starting_after=`) and cancelled here too: its journal is followed through the store
(cluster/remote_turns.py), the cancel reaches its owner through the store's feed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from ..core.errors import ApiError, invalid_parameter, invalid_request
from ..dialects.record import SseRecord
from ..dialects.response_objects import live_snapshot, stored_renderer
from ..dialects.responses import without_tool_items
from ..http.app_keys import JOURNALS, LEASES, REMOTE_TURNS, SETTINGS, STORE, TURNS
from ..http.delivery import deliver_outcome, open_stream, pump, start_detached
from ..http.profiles import profile_of
from ..protocol.common import tool_items_shown
from ..protocol.params import parse_params
from ..protocol.responses import (
    GET_QUERY,
    INPUT_ITEMS_QUERY,
    RESPONSE_PATH,
    parse_responses_request,
)
from ..store.base import StoredResponse, StoreError
from ..submission.conversations import response_not_found
from ..submission.idempotency import error_for, store_failure
from ..submission.submit import Existing, NewTurn, Refusal, Resumed, Submission, refusal_error
from ..surfaces.responses import ResponsesSurface
from ..surfaces.surface import run_headers
from ..turns import Journal
from ..turns.durable import stored_journal
from .posted import posted
from .replies import json_response

CANCEL_WAIT_S = 5.0


async def create_response(request: web.Request) -> web.StreamResponse:
    post = await posted(request, lambda raw, _, providers: parse_responses_request(raw, providers))
    app, profile = request.app, profile_of(request)
    conversations, owner = profile.conversations, app[LEASES].owner
    surface = ResponsesSurface(app[SETTINGS], app[STORE], conversations, app[JOURNALS], profile.model_name, owner, post)
    outcome: Submission[None] = await profile.submitter.submit(surface)
    if isinstance(outcome, Refusal):
        raise refusal_error(outcome)
    if isinstance(outcome, Resumed) and outcome.turn is not None:  # §15.3: at once — the turn is about to go on
        await surface.resumed(outcome.turn)  # (another gateway's turn: its owner keeps the new Response, W-15.4)
    if surface.detached and not (isinstance(outcome, Existing) and outcome.kind == "replay"):
        return await _as_it_stands(outcome, surface)
    return await deliver_outcome(request, outcome, surface)


async def _as_it_stands(outcome: NewTurn[None] | Existing | Resumed, surface: ResponsesSurface) -> web.Response:
    """A background Response asked for as JSON, new, resumed or attached: the object as it stands; a new turn runs on,
    detached (a replayed one has settled: it is delivered as any other)."""
    if isinstance(outcome, Resumed):
        surface.fold(list(outcome.journal.events[outcome.start :]))
        return json_response(surface.body(), headers=surface.headers())
    if isinstance(outcome, Existing):
        surface.replaying(outcome)
        surface.fold(list(outcome.journal.events))
        return json_response(surface.body(), headers=surface.headers())
    async with outcome.held as turn:  # were anything to fail before it starts, the turn is cancelled, not kept
        surface.delivering(turn)
        start_detached(outcome.held)
        return json_response(surface.body(), headers=surface.headers())


async def _stored(request: web.Request) -> StoredResponse:
    response_id = parse_params(request.match_info, RESPONSE_PATH)["response_id"]  # its limits: issue 20, defect 5
    record = await request.app[STORE].get_response(profile_of(request).scope, response_id)
    if record is None:
        raise response_not_found()
    return record


def _unsettled(record: StoredResponse) -> bool:
    return record.status in ("queued", "in_progress")


async def _remote_journal(request: web.Request, record: StoredResponse, *, follow: bool) -> Journal | None:
    """The journal of an unsettled response another gateway runs (shared stores): followed live, or as stored."""
    app = request.app
    if not (_unsettled(record) and app[REMOTE_TURNS].shared and record.owner and record.owner != app[LEASES].owner):
        return None
    try:
        if follow:
            return await app[REMOTE_TURNS].journal(record.turn_id, record.owner)
        return await stored_journal(app[STORE], record.turn_id)
    except StoreError as exc:
        raise error_for(store_failure(exc)) from None


async def get_response(request: web.Request) -> web.StreamResponse:
    app = request.app
    # Per delivery (WIRE.md §1.6): the header filters what this GET shows, never what is stored; a resume
    # numbers its events like the stream it resumes only when it sends the same value.
    tool_items = tool_items_shown(request.headers)
    query = parse_params(request.query, GET_QUERY)  # headers and query first, before any lookup
    record = await _stored(request)
    turn = app[TURNS].get(record.turn_id)
    live = turn.journal if turn is not None else await _remote_journal(request, record, follow=query["stream"])
    if not query["stream"]:
        if live is not None and _unsettled(record):
            return json_response(live_snapshot(app[SETTINGS], record, live.events, tool_items))
        return json_response(record.snapshot if tool_items else without_tool_items(record.snapshot))
    after = query["starting_after"]
    # The response's own mode (§15.3: mcp_call items or pairs) is the one it was created with, whatever this GET sends.
    r = stored_renderer(app[SETTINGS], record, tool_items)
    start = record.start  # a Response that resumed its turn covers the journal from there (§15.3)

    def after_n(records: list[SseRecord]) -> list[SseRecord]:
        return [rec for rec in records if rec.data["sequence_number"] > after]

    following = live is not None
    if live is None:
        live = await stored_journal(app[STORE], record.turn_id)
    first = r.created(record.queued)
    if start:
        r.prime(list(live.events[:start]))
        first += r.resumed()
    stream = await open_stream(request, run_headers(record.session_id, record.turn_id, None), after_n(first))
    if following:
        saver = app[JOURNALS]
        await pump(
            stream,
            live,
            lambda batch: after_n(r.render(batch)),
            app[SETTINGS].sse_keepalive_seconds,
            before_send=(lambda: saver.durable(live)) if turn is not None else None,
            start=start,
            paused=r.is_paused,
        )
    else:
        await stream.send(after_n(r.render(list(live.events[start:]))))
    await stream.close()
    return stream.response


def response_in_progress() -> ApiError:
    return ApiError(409, "response_in_progress", type="conflict_error", code="response_in_progress")


async def delete_response(request: web.Request) -> web.Response:
    app = request.app
    record = await _stored(request)
    if app[TURNS].get(record.turn_id) is not None:
        raise response_in_progress()
    if _unsettled(record) and record.owner != app[LEASES].owner and await app[LEASES].owner_alive(record.owner):
        raise response_in_progress()  # another gateway runs it
    await app[STORE].delete_response(profile_of(request).scope, record.id)
    return json_response({"id": record.id, "object": "response", "deleted": True})


async def cancel_response(request: web.Request) -> web.Response:
    app = request.app
    record = await _stored(request)
    turn = app[TURNS].get(record.turn_id)
    background = bool(record.snapshot.get("background"))
    if turn is None:
        remote = await _remote_journal(request, record, follow=True) if background else None
        if remote is not None and record.owner is not None:
            return await _cancel_remote(request, record, record.owner, remote)
        if background:
            return json_response(record.snapshot)
        raise invalid_request("response_not_cancellable", "Only background or detached responses can be cancelled")
    if not (background or turn.detached):
        raise invalid_request(
            "response_not_cancellable", "This response's client is still connected; stop it through its run instead"
        )
    app[TURNS].stop(turn.run_id)
    try:
        await asyncio.wait_for(asyncio.shield(turn.wait()), CANCEL_WAIT_S)
    except TimeoutError:
        return json_response(live_snapshot(app[SETTINGS], record, turn.journal.events))
    settled = await app[STORE].get_response(profile_of(request).scope, record.id)
    return json_response(
        settled.snapshot if settled is not None else live_snapshot(app[SETTINGS], record, turn.journal.events)
    )


_UNSETTLED = frozenset({"queued", "in_progress"})


async def _cancel_remote(request: web.Request, record: StoredResponse, owner: str, journal: Journal) -> web.Response:
    """Cancel a background response another gateway runs: the stop goes to it through the store's feed; the answer
    waits (up to CANCEL_WAIT_S) for the turn to settle, as a local cancel does."""
    app = request.app
    try:
        await app[REMOTE_TURNS].request_stop(owner, record.turn_id)
    except StoreError as exc:
        raise error_for(store_failure(exc)) from None

    async def settled() -> None:
        async for _ in journal.follow(len(journal.events)):
            pass

    try:
        await asyncio.wait_for(settled(), CANCEL_WAIT_S)
    except TimeoutError:
        return json_response(live_snapshot(app[SETTINGS], record, journal.events))
    again = await app[STORE].get_response(profile_of(request).scope, record.id)
    if again is not None and again.status not in _UNSETTLED:
        return json_response(again.snapshot)
    # The journal's terminal record can reach this gateway before the owner's update of the stored object: the
    # journal is the truth either way, and it has settled.
    return json_response(live_snapshot(app[SETTINGS], record, journal.events))


async def list_input_items(request: web.Request) -> web.Response:
    query = parse_params(request.query, INPUT_ITEMS_QUERY)
    record = await _stored(request)
    limit, order, after = query["limit"], query["order"], query["after"]
    items: list[Any] = list(record.input_items) if order == "asc" else list(reversed(record.input_items))
    if after is not None:
        ids = [item["id"] for item in items]
        if after not in ids:
            raise invalid_parameter("'after' is not an item of this response", "after")
        items = items[ids.index(after) + 1 :]
    page = items[:limit]
    return json_response(
        {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(items) > limit,
        }
    )
