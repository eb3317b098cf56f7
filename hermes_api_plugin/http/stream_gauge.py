"""Counts the streaming replies this server is still writing, for `GET /health/detailed`.

A streaming reply — an SSE stream, or the early-head JSON reply of a turn (WIRE.md §1.11) — holds its connection
from the moment its head is prepared until its handler returns. So the count is "prepared `StreamResponse`s whose
handler has not returned": incremented by the prepare signal, decremented by a middleware whenever the handler
ends (returned, raised, or cancelled because the client went away). Whole replies (`web.Response`) are written
at once and never counted.

It also sums what those streams hold unsent in their transports' write buffers — the memory a client that reads
slowly or not at all costs the server (`SseStream.send` awaits the drain, so it stays near 64 KiB a stream). It is
read when asked, never tracked per write: the hot path stays untouched.

Knowing which replies have their head out, its middleware also ends the connection of one whose handler failed
after the head: no error reply can follow a head, and a kept-alive connection would leave the client waiting for the
rest of a stream that will never come (until its own timeout). A cut connection is how HTTP says "incomplete".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class StreamGauge:
    """The number of streaming replies whose handler is still running.

    Install both halves on one app: `app.on_response_prepare.append(gauge.on_prepare)` and `gauge.middleware`
    among its middlewares (a closure, so the gauge needs no app key of its own to find itself).
    """

    def __init__(self) -> None:
        self._requests: dict[int, web.Request] = {}  # by id(): a Request is a mutable mapping, not hashable

        @web.middleware
        async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
            """Uncounts a counted stream when its handler ends, however it ends; ends its connection when the handler
            failed after the head (the error middleware outside logs the failure and its reply goes nowhere)."""
            try:
                return await handler(request)
            except Exception:
                if id(request) in self._requests and (transport := request.transport) is not None:
                    transport.close()
                raise
            finally:
                self._requests.pop(id(request), None)

        self.middleware = middleware

    @property
    def open(self) -> int:
        """Streaming replies whose handler is still running."""
        return len(self._requests)

    def buffered_bytes(self) -> int:
        """Bytes those streams wrote that their transports have not sent yet (a closed transport holds none)."""
        return sum(
            transport.get_write_buffer_size()
            for request in self._requests.values()
            if (transport := request.transport) is not None and not transport.is_closing()
        )

    async def on_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        """`on_response_prepare`: a streaming reply's head is going out."""
        if not isinstance(response, web.Response):
            self._requests[id(request)] = request
