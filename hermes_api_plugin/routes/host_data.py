"""`GET /v1/skills` and `GET /v1/toolsets` (WIRE §14.3): the host agent's own lists, in hermes-agent 0.19.0's shapes.

With a host that has no such data (the reference gateway's scripted runtime) both answer 501
`not_supported_by_host`. A failure to read them is logged and answered 500 with a fixed message, as upstream does:
the exception may name paths or config values, which stay in the log.
"""

from __future__ import annotations

import logging

from aiohttp import web

from ..core.errors import ApiError, not_supported_by_host
from ..http.app_keys import RUNTIME
from ..runtimes.host_data import HostData
from .replies import json_response

log = logging.getLogger("hermes_api_plugin")


def host_of(request: web.Request) -> HostData:
    host = request.app[RUNTIME].host_data
    if host is None:
        raise not_supported_by_host()
    return host


def _failed(what: str) -> ApiError:
    return ApiError(500, f"Failed to enumerate {what}", type="server_error", code="internal_error")


async def skills(request: web.Request) -> web.Response:
    host = host_of(request)
    try:
        data = await host.skills()
    except Exception as exc:
        log.exception("[API Server] GET /v1/skills failed")
        raise _failed("skills") from exc
    return json_response({"object": "list", "data": data})


async def toolsets(request: web.Request) -> web.Response:
    host = host_of(request)
    try:
        listing = await host.toolsets()
    except Exception as exc:
        log.exception("[API Server] GET /v1/toolsets failed")
        raise _failed("toolsets") from exc
    return json_response({"object": "list", **listing})
