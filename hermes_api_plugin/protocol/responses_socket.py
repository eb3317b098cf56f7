"""WebSocket mode of the Responses API (WIRE.md §16): the client's `response.create` message and the server's error
event. Pure: no aiohttp.

A message is a create body (§4.1) with `type: "response.create"`, never the HTTP transport fields `stream`,
`stream_options` and `background` (a socket always streams; nothing runs detached from it) — but for `stream: true`
and `background: false`, what a socket does anyway (the OpenAI Agents SDK sends `stream: true`) — plus two fields of
its own, taken out before the body is parsed:

- `generate` (Open Responses): `false` warms the connection up — a Response is created and completed with no output
  and no agent turn, and the next `response.create` continues it by `previous_response_id`;
- `idempotency_key` (this server's extension; the OpenAI documentation defines none): what the `Idempotency-Key`
  header is over HTTP (§5), per message. The rest of the message is the §5.2 identity, exactly as the same body
  posted, so a retry on a new socket, or over HTTP with the header, attaches to or replays the same turn.

Errors travel as the spec's WebSocket error event, `{"type":"error","status":…,"error":{type,code,message,param}}`;
an unknown `previous_response_id` — one neither stored nor kept by this connection — is 400
`previous_response_not_found`, as WebSocket mode names it (over HTTP it is the 404 of §4.7).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..core.errors import ApiError, invalid_parameter, invalid_request
from .common import IDEMPOTENCY_HEADER
from .responses import RESPONSES_BODY, ResponsesRequest, parse_responses_request
from .schema import Bool, Obj, Prop, Str

CREATE = "response.create"
KEY_FIELD = "idempotency_key"
TRANSPORT_FIELDS = ("stream", "stream_options", "background")  # HTTP's own: never sent over a socket
# ...except with the value a socket implies: the OpenAI Agents SDK's OpenAIResponsesWSModel (openai-agents 0.24.0)
# puts `"stream": true` in every `response.create` it sends, so refusing it would refuse that client outright.
_IMPLIED = {"stream": True, "background": False}
_OWN_FIELDS = ("type", "generate", KEY_FIELD)  # taken out before the create body is parsed

SOCKET_MESSAGE = Obj(
    name="ResponseCreateEvent",
    props=(
        Prop("type", Str(enum=(CREATE,)), True),
        Prop("generate", Bool(), description="false: a completed Response with no output and no agent turn (warm-up)"),
        Prop(KEY_FIELD, IDEMPOTENCY_HEADER.node, description="This message's Idempotency-Key (§5)"),
        *(p for p in RESPONSES_BODY.props if p.name not in TRANSPORT_FIELDS),
    ),
    description="A WebSocket text frame creating a Response: the create body (§4.1) without stream, stream_options "
    "and background",
)


@dataclass(frozen=True)
class SocketCreate:
    """A checked `response.create` message: the create body (as a streaming request), whether it generates, its key."""

    body: ResponsesRequest
    generate: bool
    key: str | None


def parse_socket_create(raw: dict[str, Any], providers: frozenset[str]) -> SocketCreate:
    """A `response.create` message (any other `type` is 400 unknown_event_type), checked as POST /v1/responses
    checks its body once the message's own fields are taken out."""
    kind = raw.get("type")
    if kind != CREATE:
        raise invalid_request("unknown_event_type", f"Unknown client event type {kind!r}; send {CREATE!r}", "type")
    for name in TRANSPORT_FIELDS:
        value = raw.get(name)
        if value is not None and not (name in _IMPLIED and value is _IMPLIED[name]):
            raise invalid_request(
                "unsupported_parameter",
                f"'{name}' is not sent over WebSocket: every response streams on the socket it was created on",
                name,
            )
    generate = raw.get("generate", True)
    if not isinstance(generate, bool):
        raise invalid_parameter("'generate' must be a boolean", "generate")
    key = raw.get(KEY_FIELD)
    if key is not None:
        if not isinstance(key, str):
            raise invalid_request("invalid_idempotency_key", f"'{KEY_FIELD}' must be a string", KEY_FIELD)
        key = str(IDEMPOTENCY_HEADER.node.check(key.strip(), KEY_FIELD))
    body = parse_responses_request({k: v for k, v in raw.items() if k not in _OWN_FIELDS}, providers)
    return SocketCreate(replace(body, stream=True), generate, key)


def previous_named(raw: Mapping[str, Any] | None) -> str | None:
    """The `previous_response_id` a message names, checked or not: a failed continuation evicts it."""
    previous = raw.get("previous_response_id") if raw is not None else None
    return previous if isinstance(previous, str) else None


def previous_response_not_found() -> ApiError:
    return invalid_request(
        "previous_response_not_found",
        "No response with that id is stored or kept by this connection",
        "previous_response_id",
    )


def error_event(err: ApiError) -> dict[str, Any]:
    """The WebSocket error event of an error (Open Responses' `WebSocketErrorEvent`)."""
    if err.code == "response_not_found" and err.param == "previous_response_id":
        err = previous_response_not_found()
    return {"type": "error", "status": err.status, **err.envelope()}
