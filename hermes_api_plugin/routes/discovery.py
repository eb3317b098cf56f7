"""Models, model options and capabilities (WIRE.md §8): what a client can learn before it sends work."""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from ..core.errors import ApiError
from ..http.app_keys import MODEL_OPTIONS, RUNTIME, SESSIONS, SETTINGS, STARTED_AT, STORE, TRACING
from ..http.capabilities import parity_features
from ..http.openapi import build_openapi
from ..http.profiles import profile_of
from ..protocol.common import TOOL_ITEMS_MODES
from ..protocol.operations import MODEL_OPTIONS_QUERY, OPERATIONS
from ..protocol.params import parse_params
from ..store.factory import own_sessions
from .health import PLATFORM
from .replies import json_response

log = logging.getLogger("hermes_api_plugin")

# Named routes that admit work through the idempotency mechanism (WIRE.md §5), in the §8.3 order.
IDEMPOTENT_ROUTES = ("chat_completions", "responses", "runs", "session_chat", "session_chat_stream")


async def models(request: web.Request) -> web.Response:
    app = request.app
    entry = {
        "id": profile_of(request).model_name,
        "object": "model",
        "created": app[STARTED_AT],
        "owned_by": "hermes",
        "metadata": {"runtime": app[RUNTIME].name},
    }
    return json_response({"object": "list", "data": [entry]})


def served_endpoints(app: web.Application) -> dict[str, dict[str, str]]:
    """Named routes of this app: the capabilities `endpoints` table is exactly what is served (the routes of the
    host's own data only on a host that has it: elsewhere they answer 501, §14.3)."""
    no_host_data = app[RUNTIME].host_data is None
    endpoints: dict[str, dict[str, str]] = {}
    for route in app.router.routes():
        name = route.name
        op = OPERATIONS.get(name or "")
        if name and route.method != "HEAD" and not (no_host_data and op is not None and op.host):
            endpoints[name] = {"method": route.method, "path": route.resource.canonical if route.resource else ""}
    return endpoints


def _features(app: web.Application, served: dict[str, dict[str, str]]) -> dict[str, Any]:
    settings = app[SETTINGS]
    host = app[RUNTIME].host_data
    durable = app[STORE].durable
    chat = "chat_completions" in served
    responses = "responses" in served
    runs = "runs" in served
    sessions = "sessions" in served
    idempotent_paths = [served[name]["path"] for name in IDEMPOTENT_ROUTES if name in served]
    idempotent = bool(idempotent_paths)
    return {
        "chat_completions": chat,
        "chat_completions_streaming": chat,
        "responses_api": responses,
        "responses_streaming": responses,
        "responses_store": responses,
        "responses_durable": responses and durable,
        "responses_background": responses,
        "responses_stream_resume": responses,
        "streaming": chat or responses,
        "reasoning_streaming": True,
        "tool_progress_events": settings.tool_progress_events,
        "commentary_items": settings.interim_assistant_messages,
        "image_inputs": True,
        "file_inputs": False,
        "cancel": responses,
        "runs": runs,
        "run_submission": runs,
        "run_status": runs,
        "run_events_sse": runs,
        "run_events_resume": runs,
        "run_stop": runs,
        "run_steer": False,
        "session_resources": sessions,
        "session_chat": sessions,
        "session_chat_streaming": sessions,
        "model_options": "model_options" in served,
        "session_continuity_header": "X-Hermes-Session-Id",
        "session_key_header": "X-Hermes-Session-Key",
        "tool_progress_header": "X-Hermes-Tool-Progress",
        "tool_items_header": "X-Hermes-Tool-Items",
        # §15.3: `hosted` renders the server's own tools as mcp_call items (what requests declaring tools get)
        "tool_items_modes": list(TOOL_ITEMS_MODES) if responses else [],
        "tool_items_default": settings.responses_tool_items,
        # §15.2, §15.3: declared function tools are offered to the agent and round-trip through the client; an
        # approval is answered in the dialect (chat: /approve, /deny; Responses: mcp_approval_response)
        "client_tools": chat or responses,
        "approval_in_chat": chat or responses,
        "run_id_header": "X-Hermes-Run-Id",
        "idempotency": {
            "supported": idempotent,
            "durable": idempotent and durable,
            "retention_seconds": settings.idempotency_retention_seconds,
            "header": "Idempotency-Key",
            "endpoints": idempotent_paths,
        },
        "runs_idempotency": {
            "supported": runs and idempotent,
            "durable": runs and idempotent and durable,
            "retention_seconds": settings.idempotency_retention_seconds,
        },
        "max_concurrent_runs": settings.max_concurrent_runs,
        # the backend (sqlite | memory | postgres), as /health/detailed names it: `postgres` is shared by gateways
        "store": {"kind": app[STORE].kind, "durable": durable},
        "cors": bool(settings.cors_origins),
        "browser_extension_control": False,
        "tracing": app[TRACING] is not None,  # spans exported over OTLP (api_server.tracing, OTEL_EXPORTER_OTLP_*)
        # §14: the sessions are the host's when they do not live in this plugin's own store
        **parity_features(
            served,
            host=host is not None,
            host_sessions=app[SESSIONS] is not own_sessions(app[STORE]),
            profiles=host is not None and host.multiplexing(),
        ),
    }


async def capabilities(request: web.Request) -> web.Response:
    app = request.app
    runtime = app[RUNTIME]
    endpoints = served_endpoints(app)
    body = {
        "object": "hermes.api_server.capabilities",
        "platform": PLATFORM,
        "model": profile_of(request).model_name,
        "auth": {"type": "bearer", "required": True},
        "runtime": {
            "mode": "server_agent",
            "agent": runtime.name,
            "tool_execution": "server",
            "split_runtime": False,
            "description": "Tools execute on the gateway host; clients never execute tool calls.",
        },
        "features": _features(app, endpoints),
        "endpoints": endpoints,
    }
    return json_response(body)


async def model_options(request: web.Request) -> web.Response:
    app = request.app
    refresh = parse_params(request.query, MODEL_OPTIONS_QUERY)["refresh"]
    try:
        built, cached = await app[MODEL_OPTIONS].get(app[RUNTIME], app[SETTINGS].model_options, refresh)
    except Exception as exc:
        # The exception may carry a provider URL or a key from a probe: it goes to the log, never to the client.
        log.exception("[API Server] GET /api/model/options failed")
        raise ApiError(500, "Could not list model options", type="server_error", code="model_options_failed") from exc
    model = app[SETTINGS].model
    current = {"provider": model.provider, "model": model.default or app[SETTINGS].model_name}
    host_payload: dict[str, Any] = {}
    if built.inventory is not None:
        # Hermes' dashboard shape beside the §8.2 one, so a client written for either reads it unchanged.
        host_payload = {k: built.inventory.get(k) for k in ("providers", "model", "provider")}
        current = {"provider": built.inventory.get("provider"), "model": built.inventory.get("model")}
    body = {
        "object": "hermes.model_options",
        "current": current,
        "options": built.options,
        "cached": cached,
        "fetched_at": built.fetched_at,
        **host_payload,
    }
    return json_response(body)


RETIRED_MESSAGE = (
    "Browser extension control was removed. Point browser.cdp_url in config.yaml at your browser's DevTools "
    "endpoint (or use /browser connect); automation runs through browser_exec over CDP."
)


async def retired(request: web.Request) -> web.Response:
    """WIRE.md §11: the browser-extension control protocol is gone."""
    raise ApiError(410, RETIRED_MESSAGE, type="not_found_error", code="endpoint_removed")


async def openapi(request: web.Request) -> web.Response:
    return json_response(build_openapi(request.app))
