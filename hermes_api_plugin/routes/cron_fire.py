"""`POST /api/cron/fire` (WIRE §14.3): the managed-cron fire webhook. The host's external cron scheduler (Hermes'
Chronos, relayed by NAS) says a job is due and the job runs here, as hermes-agent 0.19.0's built-in api_server
serves it.

Never authenticated by `API_SERVER_KEY` (the scheduler holds none; the auth middleware lets this route through):
the bearer token is a fire token the scheduler signed, and the host's verifier decides with the host's own
configuration. Checks in order, each failing closed: the host (501 `not_supported_by_host` on the reference
gateway), the token (401 `invalid_fire_token` when it is missing, refused, or the verifier fails), the drain (503
`gateway_draining`), cron available (503 `cron_unavailable`), the body (400 on `job_id`). Then 202
`{"status":"accepted","job_id"}` at once — a job runs as long as an agent turn, longer than the scheduler waits
for an answer — and the run goes on as background work that the drain waits for (`background.py`); its outcome
is logged. The token is never logged or echoed.
"""

from __future__ import annotations

import logging

from aiohttp import web

from ..core.errors import ApiError
from ..core.redact import redact
from ..http.app_keys import BACKGROUND, TURNS
from ..http.middleware import read_json
from ..protocol.jobs import parse_fire
from ..runtimes.host_data import HostData, HostJobs
from .host_data import host_of
from .jobs import cron_unavailable
from .replies import json_response

log = logging.getLogger("hermes_api_plugin")


def invalid_fire_token() -> ApiError:
    # One answer whatever failed (absent, bad signature, audience, issuer, purpose, expiry): no oracle for a forger.
    return ApiError(401, "Invalid cron fire token", type="gateway_auth_error", code="invalid_fire_token")


def bearer_token(authorization: str) -> str:
    """The token of `Authorization: Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1); "" otherwise."""
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def _token_valid(host: HostData, token: str) -> bool:
    if not token:
        return False
    try:
        return await host.fire_token_valid(token) is True
    except Exception as exc:  # a verifier that cannot decide refuses (a pluggable one may raise; a missing one does)
        log.warning(
            "[API Server] cron fire: the fire token verifier failed (%s: %s); refusing",
            type(exc).__name__,
            redact(str(exc), (token,)),
        )
        return False


async def _run(jobs: HostJobs, job_id: str) -> None:
    """The fired job's run, after the reply went out: nobody waits for its outcome but the log."""
    try:
        ran = await jobs.fire(job_id)
    except Exception:
        log.exception("[API Server] cron fire: job %r failed to run", job_id)
        return
    if ran:
        log.info("[API Server] cron fire: job %r ran", job_id)
    else:
        log.warning(
            "[API Server] cron fire: job %r did not run (claimed by another fire, paused or gone) or its run failed "
            "(the cron log says which)",
            job_id,
        )


async def cron_fire(request: web.Request) -> web.Response:
    host = host_of(request)
    if not await _token_valid(host, bearer_token(request.headers.get("Authorization", ""))):
        log.warning("[API Server] cron fire refused: invalid fire token (from %s)", request.remote)
        raise invalid_fire_token()
    request.app[TURNS].check_draining()
    jobs = await host.jobs()
    if jobs is None:
        raise cron_unavailable()
    job_id = parse_fire(await read_json(request))
    request.app[BACKGROUND].spawn(_run(jobs, job_id), name=f"cron fire {job_id[:64]!r}")
    log.info("[API Server] cron fire: job %r accepted", job_id)
    return json_response({"status": "accepted", "job_id": job_id}, status=202)
