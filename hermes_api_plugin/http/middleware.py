"""Cross-cutting request handling: errors (the one renderer), CORS, authentication, limits, headers.

Order (outermost first): errors → CORS (before auth) → auth (before routing) → limits. Security and
CORS headers are added to every prepared response, SSE included, by `on_response_prepare`.

CORS, auth and limits only check a request on its way in: each is a plain function that raises or hands the request
on, returning the inner handler's awaitable rather than awaiting it, so it holds no coroutine while the reply runs. A
stream's whole await chain is resumed on every wake-up of its task and walked by every full garbage collection while
it is open (issue 25: at 1 000 streams those collections are the latency p99). A check that raises does so inside
the error middleware's `await`, as it did from a coroutine's first step.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import unquote, unquote_to_bytes

from aiohttp import web

from ..config.settings import Settings
from ..core.digits import ascii_int
from ..core.errors import (
    ApiError,
    auth_failed,
    body_too_large,
    internal_error,
    invalid_content_length,
    invalid_parameter,
    invalid_request,
    method_not_allowed,
    not_found,
    origin_not_allowed,
    storage_unavailable,
)
from ..core.json_text import compact
from ..core.offload import LARGE_BODY_BYTES, off_loop
from ..protocol.limits import HEADER_MAX
from ..store.base import StoreError, StoreRefused
from .app_keys import SETTINGS
from .json_body import LONE_SURROGATE, parse_json_object

log = logging.getLogger("hermes_api_plugin")

T = TypeVar("T")
MAX_BODY_BYTES = 10_000_000
MAX_HEADER_BYTES = HEADER_MAX  # any single header value (characters); larger ones get a 400 envelope
PUBLIC_PATHS = frozenset({"/health", "/v1/health"})
# Named routes that authenticate the request themselves, never with API_SERVER_KEY (WIRE §14.3): the platform's own
# verifier, the cron scheduler's signed fire token (both handlers fail closed).
SELF_AUTHENTICATED_ROUTES = frozenset({"platform_events", "cron_fire"})
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
        # "replace": an error about undecodable input must not fail on echoing it (lone surrogates)
        body=compact(err.envelope()).encode("utf-8", "replace"),
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
    except StoreRefused as exc:  # refused for its values: a retry would be refused again (issue 20, defect 7)
        log.error("[API Server] the store refused a statement on %s %s: %s", request.method, request.path, exc)
        return render_error(internal_error())
    except StoreError as exc:  # the database is down or failing: a retry may succeed (Retry-After), not a bug
        log.warning("[API Server] store failed on %s %s: %s", request.method, request.path, exc)
        return render_error(storage_unavailable())
    except Exception:
        log.exception("[API Server] unhandled error on %s %s", request.method, request.path)
        return render_error(internal_error())


def origin_allowed(settings: Settings, origin: str) -> bool:
    return settings.cors_wildcard or origin in settings.cors_origins


async def _answered(response: web.StreamResponse) -> web.StreamResponse:
    return response


@web.middleware
def cors_middleware(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    origin = request.headers.get("Origin")
    if origin is None:
        return handler(request)
    settings = request.app[SETTINGS]
    if not origin_allowed(settings, origin):
        raise origin_not_allowed()
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        headers = {"Access-Control-Allow-Methods": ALLOWED_METHODS, "Access-Control-Max-Age": "600"}
        requested = [h.strip() for h in request.headers.get("Access-Control-Request-Headers", "").split(",")]
        reflected = [h for h in requested if h and _TOKEN.match(h)]
        if reflected:
            headers["Access-Control-Allow-Headers"] = ", ".join(reflected)
        return _answered(web.Response(status=200, headers=headers))
    return handler(request)


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


def open_metrics(request: web.Request) -> bool:
    """A scrape of GET /metrics that needs no API key (`api_server.metrics.auth: none`, issue 24)."""
    return request.match_info.route.name == "metrics" and request.app[SETTINGS].metrics_auth == "none"


@web.middleware
def auth_middleware(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    if request.method in ("GET", "HEAD") and request.path in PUBLIC_PATHS:
        return handler(request)
    if request.match_info.route.name in SELF_AUTHENTICATED_ROUTES or open_metrics(request):
        return handler(request)
    key = request.app[SETTINGS].key
    if key is None or not _authorized(request.headers.get("Authorization"), key):
        raise auth_failed()
    return handler(request)


# The request headers this server reads (§1.6) and the §1.7 code a value that is not UTF-8 gets. aiohttp decodes header
# bytes with surrogateescape, so such bytes arrive as lone surrogates, which neither SQLite nor a UTF-8 encoder takes.
# Authorization and Origin are not listed: their own rules already refuse such values (401, §1.3; 403, §1.4).
UTF8_HEADERS = {
    "X-Hermes-Session-Id": "invalid_session_id",
    "X-Hermes-Session-Key": "invalid_session_key",
    "Idempotency-Key": "invalid_idempotency_key",
    "Last-Event-ID": "invalid_parameter",
    "X-Hermes-Tool-Progress": "invalid_parameter",
    "X-Hermes-Tool-Items": "invalid_parameter",
}


def percent_decodes_to_utf8(raw: str) -> bool:
    """Whether a raw URL part (path or query, as sent) decodes to UTF-8. yarl keeps an escape that does not (`%FF`)
    as the three characters `%FF` in a path and makes it U+FFFD in a query: either way the value the handler sees is
    not the one the client sent."""
    try:
        unquote_to_bytes(raw.encode("utf-8", "surrogateescape")).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _check_utf8(request: web.Request) -> None:
    """400 for a header this server reads, or a query parameter, whose value is not UTF-8 (§1.6, §1.7); 404 for a
    path that is not (aiohttp's C parser refuses such raw bytes itself, its pure-Python fallback lets them in)."""
    if LONE_SURROGATE.search(request.path):
        raise not_found("No resource has a path that is not valid UTF-8")
    for name, code in UTF8_HEADERS.items():
        if any(LONE_SURROGATE.search(value) for value in request.headers.getall(name, ())):
            raise invalid_request(code, f"{name} is not valid UTF-8", name)
    for pair in request.rel_url.raw_query_string.split("&"):
        if not percent_decodes_to_utf8(pair):
            name = unquote(pair.partition("=")[0], errors="replace")
            raise invalid_parameter(f"Query parameter '{name}' is not valid UTF-8", name)


@web.middleware
def limits_middleware(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    # The reference gateway's HTTP parser refuses a Content-Length that is not digits (invalid_content_length from
    # gateway/runner.py); another host's parser may not, so the value is read as the wire writes numbers here too.
    raw_length = request.headers.get("Content-Length")
    if raw_length is not None:
        text = raw_length.strip(" \t")
        length = ascii_int(text)
        if length is None and not (text.isascii() and text.isdigit()):
            raise invalid_content_length("not a decimal number")
        if length is None or length > MAX_BODY_BYTES:  # more digits than any byte count: too large, never int()
            raise body_too_large(MAX_BODY_BYTES)
    for name, value in request.headers.items():
        if len(value) > MAX_HEADER_BYTES:
            raise invalid_parameter(f"Header {name} is larger than {MAX_HEADER_BYTES} bytes", name)
    _check_utf8(request)
    return handler(request)


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
    """The request body as a JSON object (any Content-Type), or 400 invalid_json (json_body.py) / 413."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise body_too_large(MAX_BODY_BYTES) from None
    return parse_json_object(raw)


async def read_parsed(request: web.Request, parse: Callable[[dict[str, Any]], T]) -> T:
    """The body as `parse` (a pure parser of protocol/) makes it of the JSON object; a large body is parsed off the
    event loop, every check still before anything is admitted (issue 20, defect 3). 400 / 413 as `read_json`."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise body_too_large(MAX_BODY_BYTES) from None
    return await off_loop(lambda: parse(parse_json_object(raw)), len(raw) > LARGE_BODY_BYTES)


async def large_body(request: web.Request) -> bool:
    """Whether the (already read) body is large: work that grows with it (the identity hash) runs off the loop."""
    return len(await request.read()) > LARGE_BODY_BYTES  # aiohttp keeps the body it read: no second read


MIDDLEWARES = (error_middleware, cors_middleware, auth_middleware, limits_middleware)
