"""GET /v1/responses with `Upgrade: websocket`: the Responses API in WebSocket mode (WIRE.md §16).

The upgrade is a request like any other: the middlewares apply the Origin rules and authenticate it before the
handshake (403/401, never a 101), and its Hermes headers (§1.6) — parsed here, before the handshake (a bad one is a
400) — apply to every response of the connection. The socket's messages are then handled one at a time, in order
(http/websocket.py `serve`): a `response.create` is parsed (protocol/responses_socket.py) into the `Posted` value a
POST is and takes the POST's own path — `ResponsesSurface`, `submit`, `deliver_outcome` — its events written as text
frames into the connection's stream. So keys, replays, turn-taking answers and the server's tools are as over HTTP.

What only a socket has: the connection keeps the `store: false` Responses it completed (surfaces/kept_responses.py)
and chain resolution reads them before the store; a failed continuation — an error event, or a Response that ends
failed or cancelled — evicts the Response it named; `generate: false` completes a Response without a turn. A bad or
refused message is an error event and the socket stays usable; a closed socket is a gone client (§5.5).
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from ..core.errors import ApiError, internal_error, invalid_request, storage_unavailable
from ..core.offload import LARGE_BODY_BYTES, off_loop
from ..http.app_keys import JOURNALS, LEASES, RUNTIME, SETTINGS, SOCKETS, STORE
from ..http.delivery import deliver_outcome
from ..http.json_body import parse_json_object
from ..http.middleware import MAX_BODY_BYTES
from ..http.profiles import profile_of
from ..http.websocket import WebSocketStream, serve
from ..protocol.common import HermesHeaders, parse_hermes_headers
from ..protocol.responses_socket import SocketCreate, error_event, parse_socket_create, previous_named
from ..store.base import StoreError
from ..submission.submit import Refusal, Resumed, Submission, refusal_error
from ..surfaces.kept_responses import KeptResponses
from ..surfaces.responses import ResponsesSurface
from ..surfaces.surface import Posted

log = logging.getLogger("hermes_api_plugin")

ENDED_WELL = ("completed", "incomplete")  # a Response that ended otherwise is a failed continuation


async def responses_socket(request: web.Request) -> web.StreamResponse:
    hermes = parse_hermes_headers(request.headers)  # before the handshake: a bad header is a 400, no socket
    stream = await WebSocketStream.open(request, request.app[SETTINGS], MAX_BODY_BYTES)
    await serve(stream, request.app[SOCKETS], _Connection(request, hermes, stream).handle)
    return stream.response


class _Connection:
    """One socket's state: the profile and Hermes headers of its upgrade, the Responses it keeps."""

    def __init__(self, request: web.Request, hermes: HermesHeaders, stream: WebSocketStream) -> None:
        app = request.app
        self.request = request
        self.hermes = hermes
        self.stream = stream
        self.profile = profile_of(request)
        self.providers = app[RUNTIME].providers()
        self.kept = KeptResponses(self.profile.conversations.lookup)
        self.conversations = self.profile.conversations.reading(self.kept)

    async def handle(self, text: str | None) -> None:
        """One message: a response delivered, or an error event; a failed one evicts the Response it continued."""
        raw: dict[str, Any] | None = None
        ok = False
        try:
            if text is None:
                raise invalid_request("invalid_json", "Send text frames, each one JSON response.create event")
            large = len(text) > LARGE_BODY_BYTES
            raw = await off_loop(lambda: parse_json_object(text.encode()), large)
            message = await off_loop(lambda: parse_socket_create(raw or {}, self.providers), large)
            ok = await self.create(message, large)
        except ApiError as err:
            await self.stream.event(error_event(err))
        except StoreError as exc:
            log.warning("[API Server] store failed on a WebSocket response.create: %s", exc)
            await self.stream.event(error_event(storage_unavailable()))
        except Exception:
            log.exception("[API Server] unhandled error on a WebSocket response.create")
            await self.stream.event(error_event(internal_error()))
        if not ok:
            self.kept.evict(previous_named(raw))

    async def create(self, message: SocketCreate, large: bool) -> bool:
        """parse (done) → submit → deliver, as POST /v1/responses; whether the Response ended well."""
        surface = self._surface(Posted(message.body, self.hermes, message.key, large))
        if not message.generate:
            return await self.stream.send(await surface.warm_up()) and await self._ended(surface)
        outcome: Submission[None] = await self.profile.submitter.submit(surface)
        if isinstance(outcome, Refusal):
            raise refusal_error(outcome)
        if isinstance(outcome, Resumed) and outcome.turn is not None:
            await surface.resumed(outcome.turn)
        await deliver_outcome(self.request, outcome, surface, into=self.stream)
        return await self._ended(surface)

    def _surface(self, post: Posted[Any]) -> ResponsesSurface:
        app = self.request.app
        owner = app[LEASES].owner
        model = self.profile.model_name
        return ResponsesSurface(app[SETTINGS], app[STORE], self.conversations, app[JOURNALS], model, owner, post)

    async def _ended(self, surface: ResponsesSurface) -> bool:
        """After a delivery: keep its Response when it is not stored; whether it ended well."""
        if self.stream.gone:
            return True  # nobody is left to continue it
        kept = surface.kept()
        if kept is not None:
            try:
                await self.kept.keep(kept)
            except StoreError as exc:  # the chain it continued could not be read: it is not kept
                log.warning("[API Server] could not keep response %s for its connection: %s", kept.id, exc)
        return bool(surface.body()["status"] in ENDED_WELL)
