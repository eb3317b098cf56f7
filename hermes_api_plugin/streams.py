"""Counts the streaming replies this server is still writing, for `GET /health/detailed`.

A streaming reply — an SSE stream, or the early-head JSON reply of a turn (WIRE.md §1.11) — holds its connection
from the moment its head is prepared until its handler returns. So the count is "prepared `StreamResponse`s whose
handler has not returned": incremented by the prepare signal, decremented by a middleware whenever the handler
ends (returned, raised, or cancelled because the client went away). Whole replies (`web.Response`) are written
at once and never counted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_COUNTED = web.RequestKey("stream_counted", bool)


class StreamGauge:
    """The number of streaming replies whose handler is still running.

    Install both halves on one app: `app.on_response_prepare.append(gauge.on_prepare)` and `gauge.middleware`
    among its middlewares (a closure, so the gauge needs no app key of its own to find itself).
    """

    def __init__(self) -> None:
        self.open = 0

        @web.middleware
        async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
            """Uncounts a counted stream when its handler ends, however it ends."""
            try:
                return await handler(request)
            finally:
                if request.get(_COUNTED):
                    request[_COUNTED] = False
                    self.open -= 1

        self.middleware = middleware

    async def on_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        """`on_response_prepare`: a streaming reply's head is going out."""
        if isinstance(response, web.Response) or request.get(_COUNTED):
            return
        request[_COUNTED] = True
        self.open += 1
