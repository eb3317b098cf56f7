"""The client's answers to a run's requests: POST /v1/runs/{run_id}/approval decides a pending dangerous-command
approval (WIRE.md §14.2), POST /v1/runs/{run_id}/answer answers a suspended run's question and
POST /v1/runs/{run_id}/tool_outputs returns the outputs of its client tool calls, each by its call_id (§15.4).

Any surface's run id works: every admitted turn is a run. A decision goes to the turn's `ApprovalGate`: its runtime's
own while a Hermes turn runs (its held approvals), else the turn's suspensions (turns/suspension.py), which also take
the answers to questions. A settled or unknown-here run has no approval session (409 `approval_not_active`); a run
that waits for nothing of the kind, 409 `approval_not_pending` / `question_not_pending` / `tool_call_not_pending`
(tool outputs: when any call_id given is not pending; then none is returned). Each body (and the
`Idempotency-Key`) is checked before the turn is touched. A keyed answer is applied once: its retry gets the first
reply again with `Idempotency-Replayed: true`, the same key with another answer 409 `admission_conflict` (§15.1).

A run another gateway runs (a shared store) is answered there: the answer is forwarded through the store's feed —
after the same scope check as a stop — and applied by the owner exactly as its own route would
(turns/answers.py, cluster/remote_turns.py); this gateway replies with what came of it (W-15.4). When the owner's
reply does not come in time, nobody here knows whether the answer was applied: 503 `answer_unconfirmed` with
Retry-After — a keyed retry then gets the owner's recorded outcome (replayed, never applied twice).
"""

from __future__ import annotations

from aiohttp import web

from ..cluster.remote_turns import AnswerUnconfirmed
from ..core.errors import ApiError
from ..http.app_keys import REMOTE_TURNS
from ..http.middleware import read_json
from ..http.profiles import profile_of
from ..protocol.approvals import parse_run_answer, parse_run_approval, parse_run_tool_outputs
from ..protocol.common import idempotency_key
from ..store.base import StoreError
from ..submission.idempotency import answer_unconfirmed, conflict, error_for, store_failure
from ..turns.answers import APPROVAL, QUESTION, TOOL_OUTPUTS, ClientAnswer, apply_answer
from ..turns.suspension import Keyed
from .replies import json_response
from .runs import RunView, found_run, live_turn


def approval_not_active(run_id: str) -> ApiError:
    return ApiError(
        409, f"Run has no active approval session: {run_id}", type="conflict_error", code="approval_not_active"
    )


def approval_not_pending(run_id: str) -> ApiError:
    return ApiError(409, f"Run has no pending approval: {run_id}", type="conflict_error", code="approval_not_pending")


def question_not_pending(run_id: str) -> ApiError:
    return ApiError(409, f"Run has no pending question: {run_id}", type="conflict_error", code="question_not_pending")


def tool_call_not_pending(run_id: str) -> ApiError:
    return ApiError(
        409,
        f"Run has no pending client tool call with each call_id given: {run_id}",
        type="conflict_error",
        code="tool_call_not_pending",
    )


def _replayed(outcome: Keyed) -> dict[str, str]:
    if outcome is Keyed.CONFLICT:
        raise conflict()
    return {"Idempotency-Replayed": "true"} if outcome is Keyed.REPLAYED else {}


async def _applied(request: web.Request, run_id: str, view: RunView, answer: ClientAnswer) -> tuple[Keyed, int] | None:
    """Apply the answer to the run's turn, here or on the gateway that runs it; None when no turn takes answers."""
    turn = live_turn(request, run_id)
    if turn is not None:
        return apply_answer(turn, answer)
    if view.owner is None:
        return None
    try:  # another gateway runs it (W-15.4); view.owner is set only for a run of this scope
        return await request.app[REMOTE_TURNS].forward_answer(view.owner, run_id, profile_of(request).scope, answer)
    except AnswerUnconfirmed:
        raise answer_unconfirmed() from None
    except StoreError as exc:
        raise error_for(store_failure(exc)) from None


async def run_approval(request: web.Request) -> web.Response:
    run_id, view = await found_run(request)  # 404 run_not_found before the body, as upstream
    key = idempotency_key(request.headers)
    decision = parse_run_approval(await read_json(request))
    answer = ClientAnswer(APPROVAL, choice=decision.choice, resolve_all=decision.resolve_all, key=key)
    applied = await _applied(request, run_id, view, answer)
    if applied is None:
        raise approval_not_active(run_id)
    outcome, resolved = applied
    headers = _replayed(outcome)
    if resolved <= 0:
        raise approval_not_pending(run_id)
    return json_response(
        {"object": "hermes.run.approval_response", "run_id": run_id, "choice": decision.choice, "resolved": resolved},
        headers=headers,
    )


async def run_answer(request: web.Request) -> web.Response:
    run_id, view = await found_run(request)  # 404 run_not_found before the body, as the approval
    key = idempotency_key(request.headers)
    text = parse_run_answer(await read_json(request)).text
    applied = await _applied(request, run_id, view, ClientAnswer(QUESTION, text=text, key=key))
    if applied is None:
        raise question_not_pending(run_id)
    outcome, answered = applied
    headers = _replayed(outcome)
    if answered <= 0:
        raise question_not_pending(run_id)
    return json_response({"object": "hermes.run.answer", "run_id": run_id, "answered": answered}, headers=headers)


async def run_tool_outputs(request: web.Request) -> web.Response:
    run_id, view = await found_run(request)  # 404 run_not_found before the body, as the approval
    key = idempotency_key(request.headers)
    outputs = parse_run_tool_outputs(await read_json(request)).outputs
    applied = await _applied(request, run_id, view, ClientAnswer(TOOL_OUTPUTS, outputs=outputs, key=key))
    if applied is None:
        raise tool_call_not_pending(run_id)
    outcome, answered = applied
    headers = _replayed(outcome)
    if answered <= 0:
        raise tool_call_not_pending(run_id)
    return json_response({"object": "hermes.run.tool_outputs", "run_id": run_id, "answered": answered}, headers=headers)
