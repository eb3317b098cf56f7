"""The OpenAPI 3.1 document of the served routes (WIRE.md §8.4), built from the router itself."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import __version__

# Routes whose success body can be an SSE stream (request `stream: true`, or always).
_SSE = {"chat_completions", "responses", "response", "run_events", "session_chat_stream"}
_SUMMARIES = {
    "health": "Liveness (no authentication)",
    "health_v1": "Liveness (no authentication)",
    "health_detailed": "Gateway state, readiness, turns, slots, open streams and store (authenticated)",
    "models": "The advertised model",
    "model_options": "Curated model list with capability hints and pricing",
    "capabilities": "Machine-readable feature document",
    "openapi": "This document",
    "chat_completions": "Chat Completions (JSON or SSE with reasoning_content and hermes.tool.progress)",
    "responses": "Create a Response (JSON, SSE or background)",
    "response": "Read a stored Response (?stream=true&starting_after=N re-streams it)",
    "response_delete": "Delete a stored Response",
    "response_cancel": "Cancel a background or detached Response",
    "response_input_items": "The input items of a Response",
    "runs": "Submit a run (202)",
    "run_status": "A run's status",
    "run_events": "A run's events (SSE with id: lines, Last-Event-ID resume)",
    "run_stop": "Stop a run",
    "sessions": "List sessions",
    "session_create": "Create a session",
    "session": "A session",
    "session_update": "Set title, pinned, archived",
    "session_delete": "Delete a session",
    "session_messages": "A session's messages",
    "session_chat": "Chat on a session (JSON)",
    "session_chat_stream": "Chat on a session (SSE with named events)",
}
_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "param", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}


def build_openapi(app: web.Application) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in app.router.routes():
        name = route.name
        if route.method == "HEAD" or route.resource is None:
            continue
        path = route.resource.canonical
        if not name:
            if path != "/v1/health":
                continue  # the retired 410 routes are not part of the API any more
            name = "health_v1"  # unnamed so that capabilities do not list it (§8.3), documented here (§8.4)
        content: dict[str, Any] = {"application/json": {"schema": {"type": "object"}}}
        if name in _SSE:
            content["text/event-stream"] = {"schema": {"type": "string"}}
        operation: dict[str, Any] = {
            "operationId": name,
            "summary": _SUMMARIES.get(name, name),
            "responses": {
                "202" if name == "runs" else "201" if name == "session_create" else "200": {
                    "description": "Success",
                    "content": content,
                },
                "default": {
                    "description": "Error",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                },
            },
        }
        if name not in ("health", "health_v1"):
            operation["security"] = [{"bearer": []}]
        params = [
            {"name": part[1:-1], "in": "path", "required": True, "schema": {"type": "string"}}
            for part in path.split("/")
            if part.startswith("{")
        ]
        if params:
            operation["parameters"] = params
        paths.setdefault(path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "hermes-api-plugin", "version": __version__},
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": _ERROR},
        },
    }
