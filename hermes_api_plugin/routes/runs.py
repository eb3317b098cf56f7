"""Runs: POST /v1/runs, GET /v1/runs/{id}, its SSE events, and stop (WIRE.md §6).

Every admitted turn is a run, whichever surface admitted it. Runs are read from the live registry
(running, or settled within the last hour) or, for keyed runs, from their durable admission and journal.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..admissions import error_for, idempotency_key, identity_hash
from ..content import Message, canonical_json, parse_content
from ..dialects.runs import RunEventsRenderer, run_object
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
from ..sse import SseStream
from ..store.base import StoreError
from ..turns import Journal, Turn
from .common import (
    check_session_id,
    json_response,
    new_run_id,
    optional_string,
    parse_conversation_history,
    parse_hermes_headers,
    parse_model_options,
)
from .delivery import keyed_settler, pump

_ROLES = frozenset({"user", "assistant", "system", "developer"})


def run_not_found() -> ApiError:
    return not_found("No run with that id", code="run_not_found")


def new_session_id() -> str:
    return f"api_{int(time.time())}_{secrets.token_hex(4)}"


@dataclass(frozen=True)
class RunRequest:
    messages: list[Message]  # earlier input messages, then the turn input
    system: str | None
    session_id: str | None
    previous_response_id: str | None
    conversation_history: list[Message] | None
    model: str | None
    provider: str | None
    model_options: dict[str, Any]
    reasoning_enabled: bool
    reasoning_effort: str | None


def parse_run_request(body: dict[str, Any], header_session: str | None, providers: frozenset[str]) -> RunRequest:
    raw = body.get("input")
    if raw is None:
        raise missing_parameter("input")
    messages: list[Message] = []
    system: list[str] = []
    if isinstance(raw, str):
        messages.append(Message.from_json({"role": "user", "content": raw}))
    elif isinstance(raw, list):
        for i, item in enumerate(raw):
            param = f"input[{i}]"
            if not isinstance(item, dict) or item.get("role") not in _ROLES:
                raise invalid_parameter(f"'{param}' must be an object with role user, assistant, system or developer",
                                        param)
            parts = parse_content(item.get("content"), f"{param}.content")
            if item["role"] in ("system", "developer"):
                system.append("".join(getattr(p, "text", "") for p in parts))
            else:
                messages.append(Message(item["role"], parts))
    else:
        raise invalid_parameter("'input' must be a string or an array of messages", "input")
    if not messages or messages[-1].role != "user" or not messages[-1].visible:
        raise invalid_request("missing_user_message", "The last input message must be a user message with text or an "
                              "image", "input")
    instructions = optional_string(body, "instructions")
    session_id = optional_string(body, "session_id")
    if session_id is not None:
        check_session_id(session_id, "session_id")
    history = parse_conversation_history(body)
    provider = optional_string(body, "provider")
    if provider is not None and provider not in providers:
        raise invalid_parameter(f"Provider '{provider}' is not configured on this gateway", "provider")
    choice = parse_model_options(body, alias_effort=body.get("reasoning_effort"))
    prompt = "\n".join(s for s in ([instructions] if instructions else []) + system if s) or None
    return RunRequest(
        messages=messages, system=prompt, session_id=session_id or header_session,
        previous_response_id=optional_string(body, "previous_response_id"), conversation_history=history,
        model=optional_string(body, "model"), provider=provider, model_options=dict(choice.model_options),
        reasoning_enabled=choice.reasoning_enabled, reasoning_effort=choice.reasoning_effort,
    )


def runs_identity(body: dict[str, Any], run: RunRequest) -> str:
    """WIRE.md §5.2, runs: input, instructions, conversation_history, previous_response_id, model, provider,
    model_options (string input and the effort alias folded)."""
    raw = body.get("input")
    options = dict(run.model_options)
    if run.reasoning_effort is not None:
        options["reasoning"] = {**(options.get("reasoning") or {}), "effort": run.reasoning_effort}
    return identity_hash({
        "input": [{"role": "user", "content": raw}] if isinstance(raw, str) else raw,
        "instructions": body.get("instructions"), "conversation_history": body.get("conversation_history"),
        "previous_response_id": run.previous_response_id, "model": run.model, "provider": run.provider,
        "model_options": options,
    })


async def create_run(request: web.Request) -> web.Response:
    app = request.app
    hermes = parse_hermes_headers(request)
    body = await read_json(request)
    run = parse_run_request(body, hermes.session_id, app[RUNTIME].providers())
    key = idempotency_key(request)
    registry = app[TURNS]
    if registry.draining:
        raise draining()
    headers = {"X-Hermes-Session-Key": hermes.session_key} if hermes.session_key is not None else {}
    if key is None:
        turn = await _admit(request, run, hermes.session_key, None)
        return json_response({"run_id": turn.run_id, "status": "started"}, status=202, headers=headers)
    admissions, scope = app[ADMISSIONS], app[SCOPE]
    identity = runs_identity(body, run)
    target = canonical_json([run.session_id, hermes.session_key])
    async with admissions.serialised(scope, "runs", key):
        try:
            decision = await admissions.decide(scope, "runs", key, identity, target, registry.is_live)
        except StoreError:
            raise error_for("storage_unavailable") from None
        if decision.outcome == "new":
            turn = await _admit(request, run, hermes.session_key, (key, identity, target, decision.free_expired))
            return json_response({"run_id": turn.run_id, "status": "started"}, status=202, headers=headers)
    if decision.code is not None:
        raise error_for(decision.code)
    assert decision.record is not None
    run_id = decision.record.turn_id
    view = await _find(request, run_id)
    status = view[0] if view is not None else "failed"
    return json_response({"run_id": run_id, "status": status, "replayed": True}, status=202,
                         headers={**headers, "Idempotency-Replayed": "true"})


async def _admit(request: web.Request, run: RunRequest, session_key: str | None,
                 keyed: tuple[str, str, str, bool] | None) -> Turn:
    """Resolve the run's session and history (WIRE.md §6.1), admit it, reserve its key."""
    app = request.app
    settings, store, scope, registry = app[SETTINGS], app[STORE], app[SCOPE], app[TURNS]
    previous = None
    if run.previous_response_id is not None:
        previous = await store.get_response(scope, run.previous_response_id)
        if previous is None:
            raise not_found("No response with that id", code="response_not_found", param="previous_response_id")
    bound = False
    if run.session_id is not None:
        session_id = run.session_id
    elif previous is not None:
        session_id = previous.session_id
    elif session_key is not None:
        session_id = await store.session_for_key(scope, session_key) or new_session_id()
        bound = True
    else:
        session_id = new_session_id()

    async def history() -> list[Message]:
        if run.conversation_history is not None:
            return list(run.conversation_history)
        if previous is not None:
            return await store.chain_messages(scope, previous.id) + run.messages[:-1]
        if len(run.messages) > 1:
            return run.messages[:-1]
        return await app[SESSIONS].load_session_messages(session_id)

    registry.check_capacity()
    if bound:
        assert session_key is not None
        await store.bind_session_key(scope, session_key, session_id)
    turn_request = TurnRequest(
        turn_id=new_run_id(), session_id=session_id, input=run.messages[-1], system_prompt=run.system,
        model=run.model, provider=run.provider, model_options=run.model_options,
        reasoning_enabled=run.reasoning_enabled, reasoning_effort=run.reasoning_effort,
        commentary_enabled=settings.interim_assistant_messages, max_iterations=settings.max_turns,
    )
    saver, admissions = app[JOURNALS], app[ADMISSIONS]
    turn = registry.admit(turn_request, queue_key=session_id, history=history, inputs=run.messages,
                          persist=keyed_settler(app) if keyed else None, hold=True)
    if keyed is not None:
        key, identity, target, replace_expired = keyed
        reply = {"session_id": session_id, "model": run.model or settings.model_name}
        await admissions.reserve_turn(turn, scope, "runs", key, identity, target, reply, replace_expired)
        saver.watch(turn.run_id, turn.journal)
    turn.release()
    return turn


async def _find(request: web.Request, run_id: str) -> tuple[str, Journal, dict[str, Any]] | None:
    """(status, journal, metadata) of a run this scope may see, live or durable; None when unknown."""
    app = request.app
    turn = app[TURNS].find(run_id)
    settings = app[SETTINGS]
    if turn is not None:
        journal = turn.journal
        if journal.finished is not None:
            status = journal.finished.status.value
        elif turn.agent_turn.interrupted:
            status = "stopping"
        else:
            status = turn.status.value
        meta = {"created_at": turn.created_at, "session_id": turn.request.session_id,
                "model": turn.request.model or settings.model_name}
        return status, journal, meta
    store = app[STORE]
    try:
        record = await store.admission_for_turn(app[SCOPE], run_id)
        if record is None:
            return None
        journal = decode_journal(await store.load_journal(run_id))
    except StoreError:
        raise error_for("storage_unavailable") from None
    status = journal.finished.status.value if journal.finished is not None else "failed"
    meta = {"created_at": record.created_at, "session_id": record.reply.get("session_id", ""),
            "model": record.reply.get("model") or record.reply.get("head", {}).get("model") or settings.model_name}
    return status, journal, meta


async def get_run(request: web.Request) -> web.Response:
    run_id = request.match_info["run_id"]
    found = await _find(request, run_id)
    if found is None:
        raise run_not_found()
    status, journal, meta = found
    renderer = RunEventsRenderer(run_id, journal.stamps)
    renderer.render(list(journal.events))
    updated = journal.stamps[-1] if journal.stamps else meta["created_at"]
    return json_response(run_object(run_id, status=status, created_at=meta["created_at"], updated_at=updated,
                                    session_id=meta["session_id"], model=meta["model"], renderer=renderer))


def _last_event_id(request: web.Request) -> int:
    raw = request.headers.get("Last-Event-ID", "").strip()
    return int(raw) if raw.isdigit() else 0


async def run_events(request: web.Request) -> web.StreamResponse:
    run_id = request.match_info["run_id"]
    found = await _find(request, run_id)
    if found is None:
        raise run_not_found()
    _, journal, _ = found
    after = _last_event_id(request)
    renderer = RunEventsRenderer(run_id, journal.stamps)
    if after:
        # A value that is not a known id (yet) replays from the start (WIRE.md §6.3).
        probe = RunEventsRenderer(run_id, journal.stamps)
        if after > len(probe.render(list(journal.events))):
            after = 0

    def render(batch: list[Any]) -> list[tuple[None, dict[str, Any], int]]:
        return [(None, payload, rid) for rid, payload in renderer.render(batch) if rid > after]

    stream = await SseStream.open(request, {})
    # A subscriber never affects the run: leaving only ends this stream.
    if await pump(stream, journal, render, request.app[SETTINGS].sse_keepalive_seconds):
        await stream.close()
    return stream.response


async def stop_run(request: web.Request) -> web.Response:
    run_id = request.match_info["run_id"]
    turn = request.app[TURNS].get(run_id)
    if turn is not None:
        turn.cancel()
        return json_response({"run_id": run_id, "status": "stopping"})
    found = await _find(request, run_id)
    if found is None:
        raise run_not_found()
    return json_response({"run_id": run_id, "status": found[0]})
