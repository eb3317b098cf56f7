"""The AppRunner every host serves the API with: requests aiohttp's HTTP parser refuses get the §1.7 envelope.

aiohttp answers a request its parser refuses (`Content-Length: abc`, a control byte in a header value, a request line
that is not HTTP, a line over the parser limit) itself, before any middleware or signal of the application runs:
`RequestHandler.data_received` records the `HttpProcessingError` and `RequestHandler.handle_error` renders it as
plain text. aiohttp offers no public hook for that response, so this module — the only one that touches aiohttp
internals — overrides `handle_error` in a `RequestHandler` subclass and makes the runner's `Server` build that
subclass (`AppRunner._make_server`, `Server._loop`/`_kwargs`, as aiohttp's own `Server.__call__` uses them).
tests/gateway/test_runner.py fails, naming this module, when an aiohttp upgrade breaks the hook.

The CORS headers cannot be added to these answers: the parser gave up before the `Origin` header was read (and no
browser sends such requests). The §1.5 security headers are added.

Connection time-outs (issue 20, defect 4): aiohttp closes a connection only when it sits idle past `keepalive_timeout`,
and a connection that sends nothing, half a request line or part of its headers counts as idle for that whole time
(its default: an hour), so a few hundred such sockets starve real clients of file descriptors. This handler closes
  - a request head not complete `header_timeout` seconds after the connection opened, or after the first byte of a
    later request on a kept-alive connection (the time between requests is the keep-alive's, aiohttp's own timer);
  - a request body not complete `body_timeout` seconds after its head (a body is at most 10 MB: a generous time).
Both timers are one `call_later` per request, armed and cancelled from `data_received`; a request whose head and
body arrived is never timed: a long reply, a stream open for hours, are not affected.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, InvalidHeader, LineTooLong
from aiohttp.http_parser import RawRequestMessage
from yarl import URL

from ..core.errors import ApiError, internal_error, invalid_content_length, malformed_request
from ..http.app_keys import PROFILE_PREFIX
from ..http.middleware import SECURITY_HEADERS, render_error

log = logging.getLogger("hermes_api_plugin")

# The parser's message starts with its own reason ("Invalid character in Content-Length"), then quotes the client's
# bytes, which may hold a credential (a bad byte in an Authorization line): only the reason is repeated.
_REASON = re.compile(r"[A-Za-z][A-Za-z0-9 ,.'-]{0,79}")


def _reason(exc: HttpProcessingError) -> str:
    match = _REASON.match(exc.message.partition(":")[0].partition("\n")[0])
    return match.group(0).strip() if match else "not valid HTTP/1.1"


def parser_error(exc: HttpProcessingError) -> ApiError:
    """The §1.7 error for a request the HTTP parser refused."""
    if isinstance(exc, LineTooLong):
        return malformed_request("a request line or header field is longer than the parser accepts")
    reason = _reason(exc)
    content_length = isinstance(exc, InvalidHeader) and exc.hdr.lower() == "content-length"
    if content_length or "content-length" in reason.lower():
        return invalid_content_length(reason)
    return malformed_request(reason)


class _EnvelopeRequestHandler(web.RequestHandler):
    __slots__ = ("_body_timer", "_head_timer", "body_timeout", "header_timeout")

    def __init__(self, *args: Any, header_timeout: float, body_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        heads = self._request_count
        if self._head_timer is None and self._waiter is not None and data:
            self._arm_head_timer()  # the first byte of the next request on a kept-alive connection
        super().data_received(data)
        if self._request_count > heads:  # the parser completed a request head
            self._cancel_timers()
            payload = self._messages[-1][1] if self._messages else None
            if payload is not None and not payload.is_eof():
                self._body_timer = self._loop.call_later(self.body_timeout, self._body_timed_out, payload)

    def _arm_head_timer(self) -> None:
        self._head_timer = self._loop.call_later(self.header_timeout, self._head_timed_out)

    def _cancel_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        log.debug("[API Server] closed a connection whose request head took over %s s", self.header_timeout)
        self.force_close()

    def _body_timed_out(self, payload: Any) -> None:
        self._body_timer = None
        if not payload.is_eof():
            log.debug("[API Server] closed a connection whose request body took over %s s", self.body_timeout)
            self.force_close()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if isinstance(exc, HttpProcessingError):
            # Hostile or broken clients, not a fault of this server: no traceback at ERROR level per request.
            log.debug("[API Server] refused a malformed request from %s: %s", request.remote, _reason(exc))
            if request.writer.output_size > 0:  # as aiohttp: a started response cannot become another one
                raise ConnectionError("Response is sent already, cannot send another response with the error message")
            response = render_error(parser_error(exc))
            response.headers.update(SECURITY_HEADERS)
        else:
            # Something escaped the error middleware (a bug): aiohttp logs it and checks the writer; the body becomes
            # the envelope. A routed request gets its §1.5/CORS headers from the app's on_response_prepare signal.
            super().handle_error(request, status, exc, message)
            response = render_error(internal_error())
        response.force_close()
        return response


class _EnvelopeServer(web.Server):
    header_timeout: float
    body_timeout: float

    def __call__(self) -> web.RequestHandler:
        return _EnvelopeRequestHandler(
            self, loop=self._loop, header_timeout=self.header_timeout, body_timeout=self.body_timeout, **self._kwargs
        )


_PROFILE_PATH = re.compile(r"/p/([^/?#]+)(/[^?#]*)")


def without_profile_prefix(message: RawRequestMessage) -> tuple[str | None, RawRequestMessage]:
    """`/p/{profile}/v1/models?x` → (`profile`, the message for `/v1/models?x`); (None, message) without one.

    WIRE §14.3 mirrors every route under `/p/{profile}`: stripped here, before routing, the app has one route table
    and its route names stay canonical; `http/profiles.py` decides what the prefix means on this host. A name that is
    not a profile name stays as it came (percent-decoded): no served profile has it, so it is 404 there."""
    match = _PROFILE_PATH.fullmatch(message.url.raw_path)
    if match is None:
        return None, message
    url = message.url
    rest = URL.build(path=match.group(2), query_string=url.raw_query_string, fragment=url.raw_fragment, encoded=True)
    path = rest.raw_path_qs
    profile = URL.build(path="/" + match.group(1), encoded=True).path[1:]
    return profile, message._replace(path=path, url=rest)


DEFAULT_HEADER_TIMEOUT_S = 30.0
DEFAULT_BODY_TIMEOUT_S = 300.0


class ApiRunner(web.AppRunner):
    """`web.AppRunner` whose connections answer parser rejections with the §1.7 envelope, close a request head or body
    that does not arrive in time, and whose requests come with any `/p/{profile}` prefix stripped into
    `PROFILE_PREFIX`. The idle keep-alive time-out is aiohttp's `keepalive_timeout` (a runner setting)."""

    def __init__(
        self,
        app: web.Application,
        *,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT_S,
        body_timeout: float = DEFAULT_BODY_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(app, **kwargs)
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # The Server aiohttp built for this app, with all its settings, now building our RequestHandler subclass.
        server.__class__ = _EnvelopeServer
        assert isinstance(server, _EnvelopeServer)
        server.header_timeout = self.header_timeout
        server.body_timeout = self.body_timeout
        make_request = server.request_factory

        def request_factory(message: RawRequestMessage, *args: Any) -> web.BaseRequest:
            profile, message = without_profile_prefix(message)
            request = make_request(message, *args)
            if profile is not None:
                request[PROFILE_PREFIX] = profile
            return request

        server.request_factory = request_factory
        return server
