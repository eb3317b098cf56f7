"""The client's answers to a run's requests: POST /v1/runs/{run_id}/approval decides a pending dangerous-command
approval (WIRE.md §14.2), POST /v1/runs/{run_id}/answer answers a suspended run's question (§15.4).

Any surface's run id works: every admitted turn is a run. A decision goes to the turn's `ApprovalGate`: its runtime's
own while a Hermes turn runs (its held approvals), else the turn's suspensions (turns/suspension.py), which also take
the answers to questions. A settled or unknown-here run has no approval session (409 `approval_not_active`); a run
that waits for nothing of the kind, 409 `approval_not_pending` / `question_not_pending`. Each body (and the
`Idempotency-Key`) is checked before the turn is touched. A keyed answer is applied once: its retry gets the first
reply again with `Idempotency-Replayed: true`, the same key with another answer 409 `admission_conflict` (§15.1).
"""

from __future__ import annotations

from aiohttp import web

from ..core.errors import ApiError
from ..http.middleware import read_json
from ..protocol.approvals import parse_run_answer, parse_run_approval
from ..protocol.common import idempotency_key
from ..submission.idempotency import conflict
from ..turns.suspension import Keyed
from .replies import json_response
from .runs import found_run, live_turn


def approval_not_active(run_id: str) -> ApiError:
    return ApiError(
        409, f"Run has no active approval session: {run_id}", type="conflict_error", code="approval_not_active"
    )


def approval_not_pending(run_id: str) -> ApiError:
    return ApiError(409, f"Run has no pending approval: {run_id}", type="conflict_error", code="approval_not_pending")


def question_not_pending(run_id: str) -> ApiError:
    return ApiError(409, f"Run has no pending question: {run_id}", type="conflict_error", code="question_not_pending")


def _replayed(outcome: Keyed) -> dict[str, str]:
    if outcome is Keyed.CONFLICT:
        raise conflict()
    return {"Idempotency-Replayed": "true"} if outcome is Keyed.REPLAYED else {}


async def run_approval(request: web.Request) -> web.Response:
    run_id, _ = await found_run(request)  # 404 run_not_found before the body, as upstream
    key = idempotency_key(request.headers)
    decision = parse_run_approval(await read_json(request))
    turn = live_turn(request, run_id)
    if turn is None:
        raise approval_not_active(run_id)
    gate = turn.agent_turn.approvals or turn.suspensions
    answer = f"{decision.choice} {decision.resolve_all}"
    outcome, resolved = turn.suspensions.keyed(key, answer, lambda: gate.resolve(decision.choice, decision.resolve_all))
    headers = _replayed(outcome)
    if resolved <= 0:
        raise approval_not_pending(run_id)
    return json_response(
        {"object": "hermes.run.approval_response", "run_id": run_id, "choice": decision.choice, "resolved": resolved},
        headers=headers,
    )


async def run_answer(request: web.Request) -> web.Response:
    run_id, _ = await found_run(request)  # 404 run_not_found before the body, as the approval
    key = idempotency_key(request.headers)
    answer = parse_run_answer(await read_json(request))
    turn = live_turn(request, run_id)
    if turn is None:
        raise question_not_pending(run_id)
    suspensions = turn.suspensions
    outcome, answered = suspensions.keyed(key, answer.text, lambda: int(suspensions.answer(answer.text)))
    headers = _replayed(outcome)
    if answered <= 0:
        raise question_not_pending(run_id)
    return json_response({"object": "hermes.run.answer", "run_id": run_id, "answered": answered}, headers=headers)
