"""Runs: POST /v1/runs, GET /v1/runs/{id}, its SSE events, and stop (WIRE.md §6).

Every admitted turn is a run, whichever surface admitted it. Runs are read from the live registry
(running, or settled within the last hour and still kept: turns/recent.py), from their durable run record and
journal on a shared store — on any gateway: a run another gateway runs is followed through its journal
(cluster/remote_turns.py) and stopped through the store's feed, with the same scope check — or, for keyed runs, from
their durable admission and journal. POST reads as parse → submit → deliver (a 202 at once); the run's plan and reply
are the surface's (surfaces/runs.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..core.errors import ApiError, not_found
from ..core.events import ClientRequest, StatusChanged, required_action, unanswered_approvals
from ..dialects.record import SseRecord, after_id
from ..dialects.runs import RunEventsRenderer, run_object
from ..http.app_keys import LEASES, REMOTE_TURNS, SETTINGS, STORE, TURNS
from ..http.delivery import open_stream, pump, start_detached
from ..http.profiles import profile_of
from ..protocol.common import last_event_id
from ..protocol.params import parse_params
from ..protocol.runs import RUN_PATH, parse_run_request
from ..store.base import RunRecord, StoreError
from ..submission.idempotency import error_for, store_failure
from ..submission.submit import Existing, NewTurn, Refusal, Submission, refusal_error
from ..surfaces.runs import RunSurface, stored_reply
from ..turns import Journal, SettledTurn, Turn
from ..turns.durable import stored_journal
from .posted import posted
from .replies import json_response


def run_not_found() -> ApiError:
    return not_found("No run with that id", code="run_not_found")


def live_turn(request: web.Request, run_id: str) -> Turn | None:
    """The registry's undecided turn with this run id when the request's credential scope admitted it (WIRE §1.3:
    with profile multiplexing each profile is a scope; another scope's run is 404, issue 20 defect 6), else None
    (stopping, approving: a turn whose settlement is being stored is decided, and answers those as a settled run
    does)."""
    turn = request.app[TURNS].get(run_id)
    if turn is None or turn.request.scope != profile_of(request).scope or turn.settling is not None:
        return None
    return turn


def _kept_turn(request: web.Request, run_id: str) -> Turn | SettledTurn | None:
    """The registry's unsettled turn with this run id, or its record of a recently settled one, when the request's
    credential scope admitted it."""
    turn = request.app[TURNS].find(run_id)
    scope = turn.scope if isinstance(turn, SettledTurn) else turn.request.scope if turn is not None else None
    return turn if scope == profile_of(request).scope else None


async def create_run(request: web.Request) -> web.Response:
    post = await posted(request, lambda raw, hermes, providers: parse_run_request(raw, hermes.session_id, providers))
    profile = profile_of(request)
    surface = RunSurface(profile.conversations, profile.model_name, post)
    outcome: Submission[None] = await profile.submitter.submit(surface)
    if isinstance(outcome, Refusal):
        raise refusal_error(outcome)
    if isinstance(outcome, NewTurn):
        async with outcome.held:  # started at once; were anything to fail first, the turn is cancelled, not kept
            turn = start_detached(outcome.held)
        return json_response({"run_id": turn.run_id, "status": "started"}, status=202, headers=surface.headers())
    assert isinstance(outcome, Existing)  # a run never resumes another: answers have their own endpoints
    return await _replayed(request, outcome, surface)


async def _replayed(request: web.Request, existing: Existing, surface: RunSurface) -> web.Response:
    """A keyed retry of a run: the run's id and its status now (202, WIRE.md §6.1)."""
    view = await _find(request, existing.run_id)
    status = view.status if view is not None else "failed"
    return json_response(
        {"run_id": existing.run_id, "status": status, "replayed": True},
        status=202,
        headers={**surface.headers(), "Idempotency-Replayed": "true"},
    )


@dataclass(frozen=True)
class RunView:
    """A run this scope may see, live or durable."""

    status: str
    journal: Journal
    created_at: float
    session_id: str
    model: str
    owner: str | None = None  # the gateway process that runs it, when that is another one and it is unsettled
    required_action: ClientRequest | None = None  # suspended: what it waits for its client to answer (§15.1)


def _unsettled_status(journal: Journal) -> str:
    """The status of a run another gateway runs, from its journal so far (WIRE.md §6.2, §14.2, §15.1)."""
    if required_action(journal.events) is not None:
        return "requires_action"
    if unanswered_approvals(journal.events):
        return "waiting_for_approval"
    return "running" if any(isinstance(e, StatusChanged) for e in journal.events) else "queued"


async def _shared(request: web.Request, run: RunRecord, follow: bool) -> RunView:
    """A run of the shared store's run records (StoreError when the store fails)."""
    app = request.app
    owner = run.owner if run.status == "running" and run.owner != app[LEASES].owner else None
    if owner is not None and follow:
        journal = await app[REMOTE_TURNS].journal(run.turn_id, owner)  # followed as the owner writes it
    else:
        journal = await stored_journal(app[STORE], run.turn_id)
    finished = journal.finished
    status = finished.status.value if finished is not None else _unsettled_status(journal)
    if finished is not None:
        owner = None
    model = run.model or profile_of(request).model_name
    action = required_action(journal.events) if finished is None else None
    return RunView(status, journal, run.created_at, run.session_id, model, owner, action)


async def _find(request: web.Request, run_id: str, *, follow: bool = False) -> RunView | None:
    """The run as this scope may see it; `follow`: a run another gateway runs is followed live (its events)."""
    app = request.app
    profile = profile_of(request)
    turn = _kept_turn(request, run_id)
    if isinstance(turn, SettledTurn):
        model = turn.model or profile.model_name
        return RunView(turn.status.value, turn.journal, turn.created_at, turn.session_id, model)
    if turn is not None:
        journal = turn.journal
        if journal.finished is None and (settling := turn.settling) is not None:
            # Its status reads settled while the settlement is stored: so does the rest of the run (output, usage,
            # last_event), from the terminal record it will journal — what another gateway reads already.
            journal = Journal.settled([*journal.events, settling], [*journal.stamps, settling.at or time.time()])
        status = turn.status.value if journal.finished is not None or not turn.stopping else "stopping"
        action = turn.required_action if not turn.stopping else None
        if action is not None:
            status = "requires_action"  # WIRE.md §15.1
        elif turn.awaiting_approval and not turn.stopping:
            status = "waiting_for_approval"  # WIRE.md §14.2
        model = turn.request.model or profile.model_name
        return RunView(status, journal, turn.created_at, turn.request.session_id, model, required_action=action)
    store = app[STORE]
    try:
        run = await store.get_run(profile.scope, run_id) if app[REMOTE_TURNS].shared else None
        if run is not None:
            return await _shared(request, run, follow)
        record = await store.idempotency_record_for_turn(profile.scope, run_id)
        if record is None:
            return None
        journal = await stored_journal(store, run_id)
    except StoreError as exc:
        raise error_for(store_failure(exc)) from None
    status = journal.finished.status.value if journal.finished is not None else "failed"
    reply = stored_reply(record)
    return RunView(status, journal, record.created_at, reply.session_id or "", reply.model or profile.model_name)


def path_run_id(request: web.Request) -> str:
    """The path's run id, held to its limits (issue 20, defect 5): 400 before any lookup."""
    run_id: str = parse_params(request.match_info, RUN_PATH)["run_id"]
    return run_id


async def found_run(request: web.Request, *, follow: bool = False) -> tuple[str, RunView]:
    run_id = path_run_id(request)
    view = await _find(request, run_id, follow=follow)
    if view is None:
        raise run_not_found()
    return run_id, view


async def get_run(request: web.Request) -> web.Response:
    run_id, view = await found_run(request)
    journal = view.journal
    renderer = RunEventsRenderer(run_id, journal.stamps)
    renderer.render(list(journal.events))
    updated = journal.stamps[-1] if journal.stamps else view.created_at
    return json_response(
        run_object(
            run_id,
            status=view.status,
            created_at=view.created_at,
            updated_at=updated,
            session_id=view.session_id,
            model=view.model,
            renderer=renderer,
            required_action=view.required_action,
        )
    )


async def run_events(request: web.Request) -> web.StreamResponse:
    after = last_event_id(request.headers)  # headers first, before any lookup (issue 20, defect 1)
    run_id, view = await found_run(request, follow=True)
    journal = view.journal
    if after:
        # A value that is not a known id (yet) replays from the start (WIRE.md §6.3).
        probe = RunEventsRenderer(run_id, journal.stamps)
        probe.render(list(journal.events))
        if after > probe.last_id:
            after = 0
    renderer = RunEventsRenderer(run_id, journal.stamps)

    def render(batch: list[Any]) -> list[SseRecord]:
        return after_id(renderer.render(batch), after)

    stream = await open_stream(request, {})
    # A subscriber never affects the run: leaving only ends this stream.
    if await pump(stream, journal, render, request.app[SETTINGS].sse_keepalive_seconds):
        await stream.close()
    return stream.response


async def stop_run(request: web.Request) -> web.Response:
    run_id = path_run_id(request)
    if live_turn(request, run_id) is not None:
        request.app[TURNS].stop(run_id)
        return json_response({"run_id": run_id, "status": "stopping"})
    _, view = await found_run(request)
    if view.owner is not None:  # another gateway runs it: the stop reaches it through the store's feed
        try:
            await request.app[REMOTE_TURNS].request_stop(view.owner, run_id)
        except StoreError as exc:
            raise error_for(store_failure(exc)) from None
        return json_response({"run_id": run_id, "status": "stopping"})
    return json_response({"run_id": run_id, "status": view.status})
