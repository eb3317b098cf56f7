"""POST /v1/runs/{run_id}/approval: decide a run's pending dangerous-command approval (WIRE.md §14.2).

Any surface's run id works: every admitted turn is a run. The decision goes to the turn's runtime (its
`ApprovalGate`, set while a Hermes turn runs); a run without one has no approval session (409).
"""

from __future__ import annotations

from aiohttp import web

from ..core.errors import ApiError
from ..http.middleware import read_json
from ..protocol.approvals import parse_run_approval
from .replies import json_response
from .runs import found_run, live_turn


def approval_not_active(run_id: str) -> ApiError:
    return ApiError(
        409, f"Run has no active approval session: {run_id}", type="conflict_error", code="approval_not_active"
    )


def approval_not_pending(run_id: str) -> ApiError:
    return ApiError(409, f"Run has no pending approval: {run_id}", type="conflict_error", code="approval_not_pending")


async def run_approval(request: web.Request) -> web.Response:
    run_id, _ = await found_run(request)  # 404 run_not_found before the body, as upstream
    decision = parse_run_approval(await read_json(request))
    turn = live_turn(request, run_id)
    gate = turn.agent_turn.approvals if turn is not None else None
    if gate is None:
        raise approval_not_active(run_id)
    resolved = gate.resolve(decision.choice, decision.resolve_all)
    if resolved <= 0:
        raise approval_not_pending(run_id)
    return json_response(
        {"object": "hermes.run.approval_response", "run_id": run_id, "choice": decision.choice, "resolved": resolved}
    )
