"""Health, models and capabilities (WIRE.md §1.9, §8)."""

from __future__ import annotations

from typing import Any

from hermes_api_plugin import __version__
from hermes_api_plugin.protocol.operations import OPERATIONS

RETIRED = ("/v1/browser-control", "/v1/artifacts")
CAPABILITY_KEYS = {
    "tracing",
    "chat_completions",
    "chat_completions_streaming",
    "responses_api",
    "responses_streaming",
    "responses_store",
    "responses_durable",
    "responses_background",
    "responses_stream_resume",
    "streaming",
    "reasoning_streaming",
    "tool_progress_events",
    "commentary_items",
    "image_inputs",
    "file_inputs",
    "cancel",
    "runs",
    "run_submission",
    "run_status",
    "run_events_sse",
    "run_events_resume",
    "run_stop",
    "run_approval_response",
    "run_steer",
    "approval_events",
    "session_resources",
    "session_chat",
    "session_chat_streaming",
    "model_options",
    "session_continuity_header",
    "session_key_header",
    "tool_progress_header",
    "tool_items_header",
    "tool_items_modes",
    "tool_items_default",
    "client_tools",
    "approval_in_chat",
    "run_id_header",
    "idempotency",
    "runs_idempotency",
    "max_concurrent_runs",
    "cors",
    "browser_extension_control",
}


async def test_health_needs_no_auth_on_both_paths(api: Any) -> None:
    """§1.9"""
    for path in ("/health", "/v1/health"):
        response = await api.get(path)
        assert response.status == 200
        assert response.headers["Content-Type"] == "application/json; charset=utf-8"
        assert await response.json() == {"status": "ok", "platform": "hermes-agent", "version": __version__}


async def test_models_lists_the_advertised_model_labelled_scripted(api: Any, auth: dict[str, str]) -> None:
    """W-8.1"""
    body = await (await api.get("/v1/models", headers=auth)).json()
    (entry,) = body["data"]
    assert body["object"] == "list"
    assert entry["id"] == "hermes-agent" and entry["object"] == "model" and entry["owned_by"] == "hermes"
    assert isinstance(entry["created"], int) and entry["metadata"] == {"runtime": "scripted"}


async def test_model_name_setting_is_advertised_everywhere(make_api: Any, auth: dict[str, str]) -> None:
    api = await make_api(env={"API_SERVER_MODEL_NAME": "my-agent"})
    models = await (await api.get("/v1/models", headers=auth)).json()
    caps = await (await api.get("/v1/capabilities", headers=auth)).json()
    assert models["data"][0]["id"] == caps["model"] == "my-agent"


async def test_capabilities_document_passes_the_client_probe(api: Any, auth: dict[str, str]) -> None:
    """W-8.3: the fields hermes-agent-api-client requires, every §8.3 key, runtime.agent = models metadata."""
    response = await api.get("/v1/capabilities", headers=auth)
    raw = await response.read()
    body = await response.json()
    assert len(raw) < 64 * 1024
    assert body["object"] == "hermes.api_server.capabilities" and body["platform"] == "hermes-agent"
    assert body["model"] and body["auth"] == {"type": "bearer", "required": True}
    features = body["features"]
    assert set(features) >= CAPABILITY_KEYS
    assert features["chat_completions"] is True and features["chat_completions_streaming"] is True
    assert features["reasoning_streaming"] is True and features["browser_extension_control"] is False
    assert features["tracing"] is False  # on only when spans are exported (tests/telemetry/test_traces.py)
    assert body["runtime"]["agent"] == "scripted" and body["runtime"]["tool_execution"] == "server"
    assert features["idempotency"]["retention_seconds"] == 86400
    assert features["tool_items_header"] == "X-Hermes-Tool-Items"  # W-4.21, §1.6
    # §15.3: a client can see it may ask for the server's tools as mcp_call items, and what it gets by default
    assert features["tool_items_modes"] == ["on", "off", "hosted"] and features["tool_items_default"] == "on"
    assert features["client_tools"] is True and features["approval_in_chat"] is True  # §15.2, §15.3


async def test_capabilities_endpoints_equal_the_served_routes(api: Any, auth: dict[str, str]) -> None:
    """W-8.4, W-14.5: `endpoints` lists exactly what the router serves (retired 410 routes, /v1/health and, on a
    host without their data, the 501 routes of §14.3 excluded)."""
    body = await (await api.get("/v1/capabilities", headers=auth)).json()
    endpoints = body["endpoints"]
    served = {
        (route.method, route.resource.canonical)
        for route in api.server.app.router.routes()
        if route.method not in ("HEAD", "*") and route.resource is not None
    }
    served -= {("GET", "/v1/health")}
    served = {(m, p) for m, p in served if not p.startswith(RETIRED)}
    host_only = {
        (route.method, route.resource.canonical)
        for route in api.server.app.router.routes()
        if route.resource is not None and route.name in OPERATIONS and OPERATIONS[route.name].host
    }
    assert {("GET", "/v1/skills"), ("GET", "/api/jobs"), ("POST", "/api/platforms/{platform}/events")} <= host_only
    served -= host_only  # 501 not_supported_by_host with the scripted runtime
    assert {(spec["method"], spec["path"]) for spec in endpoints.values()} == served
    assert len(endpoints) == len(served)
    for name, spec in endpoints.items():
        path = spec["path"].replace("{response_id}", "resp_x").replace("{run_id}", "run_x")
        path = path.replace("{session_id}", "no-such-session")
        probe = await api.request(spec["method"], path, headers=auth, json={})
        assert probe.status != 405, name
        if "{" not in spec["path"]:
            assert probe.status != 404, name
        else:  # a route that exists answers with its own not-found code, not the router's `not_found`
            if probe.status == 404:
                assert (await probe.json())["error"]["code"] != "not_found", name
    features = body["features"]
    assert features["responses_api"] is True and features["responses_durable"] is True
    assert features["runs"] is True
    assert features["store"] == {"kind": "sqlite", "durable": True}  # postgres: tests/cluster/test_postgres_gateway.py


async def test_capability_flags_follow_configuration(make_api: Any, auth: dict[str, str]) -> None:
    """W-8.4 / W-10.3"""
    api = await make_api(
        config={
            "api_server": {
                "tool_progress_events": False,
                "cors_origins": ["http://localhost:3000"],
                "max_concurrent_runs": 3,
                "idempotency": {"retention_seconds": 60},
            },
            "display": {
                "show_reasoning": False,
                "interim_assistant_messages": False,
                "platforms": {"api_server": {"show_reasoning": False}},
            },
        }
    )
    features = (await (await api.get("/v1/capabilities", headers=auth)).json())["features"]
    assert features["tool_progress_events"] is False
    assert features["cors"] is True
    assert features["commentary_items"] is False
    assert features["max_concurrent_runs"] == 3
    assert features["idempotency"]["retention_seconds"] == 60
    assert features["reasoning_streaming"] is True
