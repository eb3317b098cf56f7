"""`/api/jobs…` (WIRE §14.3): the host's cron jobs — list, create, get, update, delete, pause, resume, run — as
hermes-agent 0.19.0's built-in api_server serves them, in this project's error envelope.

Order of checks as upstream: authentication (middleware), the host (501 `not_supported_by_host` on the reference
gateway), cron available (503 `cron_unavailable`; upstream answers 501 without an envelope), the job id (400
`invalid_job_id`), the body. A store call that refuses a value (`ValueError`: an unparsable schedule, a job that
cannot resume) is 400 `invalid_parameter` with its redacted text; any other failure is logged and 500.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

from aiohttp import web

from ..core.errors import ApiError, internal_error, invalid_parameter, not_found
from ..core.redact import redact
from ..http.app_keys import SETTINGS, TURNS
from ..http.middleware import read_json
from ..protocol.jobs import JOB_PATH, LIST_QUERY, parse_create, parse_update
from ..protocol.params import parse_params
from ..runtimes.host_data import HostJobs
from .host_data import host_of
from .replies import json_response

log = logging.getLogger("hermes_api_plugin")
T = TypeVar("T")


def cron_unavailable() -> ApiError:
    return ApiError(
        503, "Cron module not available", type="server_error", code="cron_unavailable", headers={"Retry-After": "1"}
    )


def job_not_found() -> ApiError:
    return not_found("Job not found", code="job_not_found", param="job_id")


async def _store(request: web.Request) -> HostJobs:
    jobs = await host_of(request).jobs()
    if jobs is None:
        raise cron_unavailable()
    return jobs


def _job_id(request: web.Request) -> str:
    job_id: str = parse_params(request.match_info, JOB_PATH)["job_id"]
    return job_id


async def _call(request: web.Request, call: Awaitable[T]) -> T:
    try:
        return await call
    except ValueError as exc:
        settings = request.app[SETTINGS]
        raise invalid_parameter(redact(str(exc), (settings.key or "",)), None) from exc
    except Exception as exc:
        log.exception("[API Server] %s %s failed", request.method, request.path)
        raise internal_error() from exc


def _found(job: T | None) -> T:
    if not job:
        raise job_not_found()
    return job


def _clean(value: Any, max_len: int = 200) -> str:
    return "" if value is None else str(value).replace("\r", " ").replace("\n", " ").strip()[:max_len]


def origin(request: web.Request) -> dict[str, str]:
    """The safe source metadata upstream stores on a job made over HTTP (its `_cron_origin_from_request`)."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    peer_ip = _clean(peer[0]) if isinstance(peer, (tuple, list)) and peer else ""
    headers = request.headers
    found = {
        "source_ip": _clean(request.remote or peer_ip),
        "peer_ip": peer_ip,
        "forwarded_for": _clean(headers.get("X-Forwarded-For")),
        "real_ip": _clean(headers.get("X-Real-IP")),
        "user_agent": _clean(headers.get("User-Agent"), 300),
    }
    return {"platform": "api_server", "chat_id": "api", **{key: value for key, value in found.items() if value}}


async def _scanned(jobs: HostJobs, fields: dict[str, Any]) -> None:
    prompt = fields.get("prompt")
    if prompt and (refusal := await jobs.scan_prompt(prompt)):
        raise invalid_parameter(refusal, "prompt")


async def list_jobs(request: web.Request) -> web.Response:
    jobs = await _store(request)
    include_disabled = parse_params(request.query, LIST_QUERY)["include_disabled"]
    return json_response({"jobs": await _call(request, jobs.list(include_disabled))})


async def create_job(request: web.Request) -> web.Response:
    jobs = await _store(request)
    fields = parse_create(await read_json(request))
    await _scanned(jobs, fields)
    return json_response({"job": await _call(request, jobs.create({**fields, "origin": origin(request)}))})


async def get_job(request: web.Request) -> web.Response:
    jobs = await _store(request)
    job_id = _job_id(request)
    return json_response({"job": _found(await _call(request, jobs.get(job_id)))})


async def update_job(request: web.Request) -> web.Response:
    jobs = await _store(request)
    job_id = _job_id(request)
    fields = parse_update(await read_json(request))
    await _scanned(jobs, fields)
    return json_response({"job": _found(await _call(request, jobs.update(job_id, fields)))})


async def delete_job(request: web.Request) -> web.Response:
    jobs = await _store(request)
    job_id = _job_id(request)
    _found(await _call(request, jobs.remove(job_id)))
    return json_response({"ok": True})


async def pause_job(request: web.Request) -> web.Response:
    jobs = await _store(request)
    job_id = _job_id(request)
    return json_response({"job": _found(await _call(request, jobs.pause(job_id)))})


async def resume_job(request: web.Request) -> web.Response:
    jobs = await _store(request)
    job_id = _job_id(request)
    return json_response({"job": _found(await _call(request, jobs.resume(job_id)))})


async def run_job(request: web.Request) -> web.Response:
    """Marks the job due now; the gateway's scheduler runs it. Refused while draining, as upstream."""
    request.app[TURNS].check_draining()
    jobs = await _store(request)
    job_id = _job_id(request)
    return json_response({"job": _found(await _call(request, jobs.trigger(job_id)))})
