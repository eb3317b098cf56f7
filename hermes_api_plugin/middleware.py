"""Cross-cutting request handling: errors (the one renderer), CORS, authentication, limits, headers.

Order (outermost first): errors → CORS (before auth) → auth (before routing) → limits. Security and
CORS headers are added to every prepared response, SSE included, by `on_response_prepare`.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from .config import Settings
from .errors import (
    ApiError,
    auth_failed,
    body_too_large,
    internal_error,
    invalid_parameter,
    invalid_request,
    method_not_allowed,
    not_found,
    origin_not_allowed,
)
from .keys import SETTINGS

log = logging.getLogger("hermes_api_plugin")

MAX_BODY_BYTES = 10_000_000
MAX_HEADER_BYTES = 32_768  # any single header value; larger ones get a 400 envelope
PUBLIC_PATHS = frozenset({"/health", "/v1/health"})
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
}
EXPOSED_HEADERS = "X-Hermes-Session-Id, X-Hermes-Session-Key, X-Hermes-Run-Id, Idempotency-Replayed, Retry-After"
ALLOWED_METHODS = "GET, POST, PATCH, DELETE, OPTIONS"
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def render_error(err: ApiError) -> web.Response:
    """The single place an error envelope becomes an HTTP response."""
    return web.Response(
        status=err.status,
        body=json.dumps(err.envelope(), ensure_ascii=False, separators=(",", ":")).encode(),
        headers={**err.headers, "Content-Type": "application/json; charset=utf-8"},
    )


def _from_http_exception(exc: web.HTTPException, request: web.Request) -> ApiError:
    if isinstance(exc, web.HTTPMethodNotAllowed):
        return method_not_allowed(set(exc.allowed_methods))
    if isinstance(exc, web.HTTPNotFound):
        return not_found(f"No route for {request.method} {request.path}")
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return body_too_large(MAX_BODY_BYTES)
    if exc.status >= 500:
        return internal_error()
    return ApiError(exc.status, exc.reason or "Request error", type="invalid_request_error", code=None)


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as err:
        return render_error(err)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return render_error(_from_http_exception(exc, request))
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("[API Server] unhandled error on %s %s", request.method, request.path)
        return render_error(internal_error())


def origin_allowed(settings: Settings, origin: str) -> bool:
    return settings.cors_wildcard or origin in settings.cors_origins


@web.middleware
async def cors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    origin = request.headers.get("Origin")
    if origin is None:
        return await handler(request)
    settings = request.app[SETTINGS]
    if not origin_allowed(settings, origin):
        raise origin_not_allowed()
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        headers = {"Access-Control-Allow-Methods": ALLOWED_METHODS, "Access-Control-Max-Age": "600"}
        requested = [h.strip() for h in request.headers.get("Access-Control-Request-Headers", "").split(",")]
        reflected = [h for h in requested if h and _TOKEN.match(h)]
        if reflected:
            headers["Access-Control-Allow-Headers"] = ", ".join(reflected)
        return web.Response(status=200, headers=headers)
    return await handler(request)


def _authorized(header: str | None, key: str) -> bool:
    if not header:
        return False
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    try:
        presented = token.strip().encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from undecodable header bytes
        return False
    return hmac.compare_digest(presented, key.encode("utf-8"))


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method in ("GET", "HEAD") and request.path in PUBLIC_PATHS:
        return await handler(request)
    key = request.app[SETTINGS].key
    if key is None or not _authorized(request.headers.get("Authorization"), key):
        raise auth_failed()
    return await handler(request)


@web.middleware
async def limits_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    raw_length = request.headers.get("Content-Length")
    if raw_length is not None:
        try:
            length = int(raw_length)
        except ValueError:
            raise invalid_request(
                "invalid_content_length", "Content-Length is not a number", "Content-Length"
            ) from None
        if length > MAX_BODY_BYTES:
            raise body_too_large(MAX_BODY_BYTES)
    for name, value in request.headers.items():
        if len(value) > MAX_HEADER_BYTES:
            raise invalid_parameter(f"Header {name} is larger than {MAX_HEADER_BYTES} bytes", name)
    return await handler(request)


async def add_common_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Security headers on every response; CORS headers for allowed origins (SSE included)."""
    response.headers.update(SECURITY_HEADERS)
    origin = request.headers.get("Origin")
    if origin is None:
        return
    settings = request.app[SETTINGS]
    if origin_allowed(settings, origin):
        response.headers["Access-Control-Allow-Origin"] = "*" if settings.cors_wildcard else origin
        response.headers["Vary"] = "Origin"
        response.headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS


async def read_json(request: web.Request) -> dict[str, Any]:
    """The request body as a JSON object (any Content-Type), or 400 invalid_json / 413."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise body_too_large(MAX_BODY_BYTES) from None
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise invalid_request("invalid_json", "Request body must be valid UTF-8 JSON") from None
    if not isinstance(body, dict):
        raise invalid_request("invalid_json", "Request body must be a JSON object")
    return body


MIDDLEWARES = (error_middleware, cors_middleware, auth_middleware, limits_middleware)
