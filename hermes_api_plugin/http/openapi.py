"""The OpenAPI 3.1 document of the served routes (WIRE.md §8.4): the router says what is served, the operations
table (protocol/operations.py) says what each operation takes and returns, rendered from the very nodes the
parsers check with."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from .. import __version__
from ..protocol.operations import OPERATIONS, Operation
from ..protocol.replies import ERROR
from ..protocol.schema import Defs
from .app_keys import RUNTIME

# One server-sent event as a client's parser yields it (WIRE.md §2.2); the stream is a sequence of these.
_SSE_EVENT = {
    "type": "object",
    "description": "One server-sent event; `data` is JSON (or `[DONE]` on chat streams)",
    "required": ["data"],
    "properties": {"event": {"type": "string"}, "data": {"type": "string"}, "id": {"type": "string"}},
}


def _served(app: web.Application) -> list[tuple[str, str, str]]:
    """(name, method, path) of every documented route: named routes, and /v1/health (unnamed so that
    capabilities do not list it, §8.3). The retired 410 routes are not part of the API any more, and the routes of
    the host's own data are not served by a host without it (they answer 501 there, §14.3)."""
    no_host_data = app[RUNTIME].host_data is None
    out = []
    for route in app.router.routes():
        if route.method == "HEAD" or route.resource is None:
            continue
        path = route.resource.canonical
        name = route.name or ("health_v1" if path == "/v1/health" else None)
        op = OPERATIONS.get(name or "")
        if name is not None and not (no_host_data and op is not None and op.host):
            out.append((name, route.method, path))
    return out


def _operation(name: str, op: Operation, defs: Defs) -> dict[str, Any]:
    success: dict[str, Any] = {"description": op.summary}
    content: dict[str, Any] = {}
    if op.reply is not None:
        content["application/json"] = {"schema": op.reply.render(defs)}
    if op.sse:
        content["text/event-stream"] = {"schema": _SSE_EVENT}
    for media in op.text:
        content[media] = {"schema": {"type": "string"}}
    if content:
        success["content"] = content
    if op.links:
        success["links"] = op.links
    error = {"description": "Error (§1.7)", "content": {"application/json": {"schema": ERROR.render(defs)}}}
    out: dict[str, Any] = {
        "operationId": name,
        "summary": op.summary,
        "responses": {str(op.status): success, "default": error},
    }
    if not op.public:
        out["security"] = [{"bearer": []}]
    if op.params:
        out["parameters"] = [param.render(defs) for param in op.params]
    if op.socket is not None:
        out["x-websocket"] = {
            "client_message": op.socket.render(defs),
            "server_messages": "the events of the Responses stream (§4.2), one JSON text frame each; errors as "
            '{"type":"error","status":…,"error":{"type","code","message","param"}}',
        }
    if op.body is not None:
        out["requestBody"] = {"required": True, "content": {"application/json": {"schema": op.body.render(defs)}}}
    return out


def build_openapi(app: web.Application) -> dict[str, Any]:
    defs: Defs = {}
    paths: dict[str, dict[str, Any]] = {}
    for name, method, path in _served(app):
        op = OPERATIONS.get(name)
        if op is None:
            raise LookupError(f"route {name!r} ({method} {path}) has no entry in protocol/operations.py")
        paths.setdefault(path, {})[method.lower()] = _operation(name, op, defs)
    return {
        "openapi": "3.1.0",
        "info": {"title": "hermes-api-plugin", "version": __version__},
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": dict(sorted(defs.items())),
        },
    }
