"""`POST /api/platforms/{platform}/events` (WIRE §14.3): the HTTP ingress of the host's other messaging platforms
(Google Chat receives its webhooks here), as hermes-agent 0.19.0's built-in api_server serves it.

Never authenticated by `API_SERVER_KEY` (the platform holds none; the auth middleware lets this route through):
the target adapter's own `verify_http_event_request(authorization)` decides, and everything fails closed — an
invalid platform name (400 `invalid_platform`), no connected adapter (503 `platform_unavailable`), an adapter
without HTTP events (503 `platform_http_events_unsupported`), a verifier that refuses or raises (401, the
verifier's code or `platform_event_verifier_error`) — before the body is read. The verified event goes to the
adapter's `dispatch_http_event(payload)`; its dict is the reply.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from typing import Any

from aiohttp import web

from ..core.errors import ApiError, invalid_request
from ..http.middleware import read_json
from .host_data import host_of
from .replies import json_response

log = logging.getLogger("hermes_api_plugin")
_PLATFORM = re.compile(r"[a-z0-9_]+")


def _server_error(status: int, message: str, code: str) -> ApiError:
    return ApiError(status, message, type="server_error", code=code)


def platform_name(raw: str) -> str:
    """Upstream's normalisation: lower case, `-` as `_`; "" when it is not a platform name."""
    normalized = (raw or "").strip().lower().replace("-", "_")
    return normalized if _PLATFORM.fullmatch(normalized) else ""


async def _verified(verifier: Any, authorization: str, platform: str) -> tuple[bool, Any]:
    try:
        if inspect.iscoroutinefunction(verifier):
            ok, code = await verifier(authorization)
        else:  # may fetch signing certificates: off the event loop
            ok, code = await asyncio.to_thread(verifier, authorization)
    except Exception:
        log.exception("[API Server] platform event verifier failed for %s", platform)
        return False, "platform_event_verifier_error"
    return ok is True, code


async def platform_event(request: web.Request) -> web.Response:
    host = host_of(request)
    platform = platform_name(request.match_info.get("platform", ""))
    if not platform:
        raise invalid_request("invalid_platform", "Invalid platform name", "platform")
    adapter = await asyncio.to_thread(host.platform_adapter, platform)
    if adapter is None:
        raise _server_error(503, "Platform adapter is not connected", "platform_unavailable")
    verifier = getattr(adapter, "verify_http_event_request", None)
    dispatcher = getattr(adapter, "dispatch_http_event", None)
    if verifier is None or dispatcher is None:
        raise _server_error(503, "Platform adapter does not support HTTP events", "platform_http_events_unsupported")
    ok, code = await _verified(verifier, request.headers.get("Authorization", ""), platform)
    if not ok:
        if not (isinstance(code, str) and re.fullmatch(r"[a-z0-9_]{1,64}", code)):
            code = "invalid_platform_event_authorization"
        log.warning("[API Server] platform event for %s refused: %s", platform, code)
        raise ApiError(401, "Invalid platform event authorization", type="gateway_auth_error", code=code)
    payload = await read_json(request)
    try:
        result = await dispatcher(payload)
    except Exception as exc:
        log.exception("[API Server] platform event dispatch failed for %s", platform)
        raise _server_error(500, "Platform event dispatch failed", "platform_event_dispatch_failed") from exc
    return json_response(result if isinstance(result, dict) else {})
