"""Retired endpoints (WIRE.md §11; W-11.1) and the discovery documents issue 5 added: model options (§8.2; W-8.2)
and the OpenAPI document (§8.4).

Real app in-process through the plugin's startup hook and the real middlewares; nothing is mocked. The
capabilities `endpoints` table is compared with the router in tests/routes/test_discovery.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import AUTH_FAILED, SECURITY_HEADERS

RETIRED_BODY = {
    "error": {
        "message": "Browser extension control was removed. Point browser.cdp_url in config.yaml at your browser's DevTools "
        "endpoint (or use /browser connect); automation runs through browser_exec over CDP.",
        "type": "not_found_error",
        "param": None,
        "code": "endpoint_removed",
    }
}
RETIRED_PATHS = [
    "/v1/browser-control/register",
    "/v1/browser-control/ws",
    "/v1/artifacts/anything",
    "/v1/artifacts/a/b/c.png",
    "/v1/artifacts",
]
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]

# WIRE.md §1.1: every route this server serves (retired 410 routes aside).
WIRE_ROUTES = {
    ("get", "/health"),
    ("get", "/v1/health"),
    ("get", "/health/detailed"),  # §14.3: served on every host, with the key
    ("get", "/v1/models"),
    ("get", "/api/model/options"),
    ("get", "/v1/capabilities"),
    ("get", "/openapi.json"),
    ("get", "/metrics"),  # issue 24: Prometheus metrics, with the key unless api_server.metrics.auth: none
    ("post", "/v1/chat/completions"),
    ("get", "/v1/responses"),  # §16: the WebSocket upgrade
    ("post", "/v1/responses"),
    ("post", "/v1/responses/compact"),  # §16
    ("get", "/v1/responses/{response_id}"),
    ("delete", "/v1/responses/{response_id}"),
    ("post", "/v1/responses/{response_id}/cancel"),
    ("get", "/v1/responses/{response_id}/input_items"),
    ("post", "/v1/runs"),
    ("get", "/v1/runs/{run_id}"),
    ("get", "/v1/runs/{run_id}/events"),
    ("post", "/v1/runs/{run_id}/stop"),
    ("post", "/v1/runs/{run_id}/approval"),  # §14.2
    ("post", "/v1/runs/{run_id}/answer"),  # §15.4
    ("post", "/v1/runs/{run_id}/tool_outputs"),  # §15.4
    ("get", "/api/sessions"),
    ("post", "/api/sessions"),
    ("get", "/api/sessions/{session_id}"),
    ("patch", "/api/sessions/{session_id}"),
    ("delete", "/api/sessions/{session_id}"),
    ("get", "/api/sessions/{session_id}/messages"),
    ("post", "/api/sessions/{session_id}/chat"),
    ("post", "/api/sessions/{session_id}/chat/stream"),
    ("post", "/api/sessions/{session_id}/fork"),  # §14.1: every host forks its own sessions
}
# WIRE §14.3: routes of the host agent's own data; 501 not_supported_by_host (undocumented) with the scripted runtime.
HOST_DATA_ROUTES = {
    ("GET", "/v1/skills"),
    ("GET", "/v1/toolsets"),
    ("GET", "/api/jobs"),
    ("POST", "/api/jobs"),
    ("GET", "/api/jobs/{job_id}"),
    ("PATCH", "/api/jobs/{job_id}"),
    ("DELETE", "/api/jobs/{job_id}"),
    ("POST", "/api/jobs/{job_id}/pause"),
    ("POST", "/api/jobs/{job_id}/resume"),
    ("POST", "/api/jobs/{job_id}/run"),
    ("POST", "/api/platforms/{platform}/events"),
    ("POST", "/api/cron/fire"),
}
SSE_ROUTES = {
    ("post", "/v1/chat/completions"),
    ("post", "/v1/responses"),
    ("get", "/v1/responses/{response_id}"),
    ("get", "/v1/runs/{run_id}/events"),
    ("post", "/api/sessions/{session_id}/chat/stream"),
}


# -- W-11.1: retired endpoints -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", RETIRED_PATHS)
async def test_retired_routes_answer_410_endpoint_removed_for_every_method(
    api: TestClient, auth: dict[str, str], path: str
) -> None:
    """W-11.1, §11, §1.5: any method on a retired path → 410 endpoint_removed with the exact message naming
    browser.cdp_url and browser_exec, as JSON with the security headers."""
    for method in METHODS:
        async with api.request(method, path, headers=auth, json={"token": "x"}) as resp:
            assert resp.status == 410, (method, path)
            assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
            for name, value in SECURITY_HEADERS.items():
                assert resp.headers[name] == value, name
            assert await resp.json() == RETIRED_BODY, (method, path)


@pytest.mark.parametrize("path", RETIRED_PATHS)
async def test_retired_routes_authenticate_first(api: TestClient, path: str) -> None:
    """W-11.1, §11, §1.3: the 410 comes after authentication: without a key, or with a wrong one, 401."""
    for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789abcdef"}):
        for method in ("GET", "POST"):
            async with api.request(method, path, headers=headers) as resp:
                assert resp.status == 401, (method, path)
                assert await resp.json() == AUTH_FAILED


async def test_websocket_upgrade_to_the_retired_control_socket_is_refused(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-11.1, §11: an extension trying to open the old control WebSocket gets the 410 answer, no upgrade."""
    headers = {
        **auth,
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    async with api.get("/v1/browser-control/ws", headers=headers) as resp:
        assert resp.status == 410
        assert await resp.json() == RETIRED_BODY


async def test_capabilities_report_no_browser_extension_control(api: TestClient, auth: dict[str, str]) -> None:
    """§11, §8.3: capabilities say `browser_extension_control: false` and list no retired route."""
    body = await (await api.get("/v1/capabilities", headers=auth)).json()
    assert body["features"]["browser_extension_control"] is False
    paths = {spec["path"] for spec in body["endpoints"].values()}
    assert not any(p.startswith(("/v1/browser-control", "/v1/artifacts")) for p in paths)


# -- W-8.2: model options ----------------------------------------------------------------------------------------------


OPTIONS_CONFIG = {
    "model": {"provider": "openrouter", "default": "anthropic/claude-sonnet-4.5"},
    "agent": {"runtime": "scripted"},
    "api_server": {
        "model_options": [
            {
                "provider": "openrouter",
                "model": "anthropic/claude-sonnet-4.5",
                "label": "Claude Sonnet 4.5",
                "capabilities": {"reasoning": True, "vision": True, "tools": True, "context_length": 200000},
                "pricing": {"input_per_million": 3.0, "output_per_million": 15.0, "currency": "USD"},
            },
            {
                "provider": "custom",
                "model": "qwen3-32b",
                "label": "qwen3-32b (local)",
                "capabilities": {"reasoning": True, "tools": True},
                "endpoint": "http://127.0.0.1:8000/v1",
            },
        ]
    },
}


async def test_model_options_lists_configured_entries_in_the_8_2_shape(make_api: Any, auth: dict[str, str]) -> None:
    """W-8.2, §8.2: `current` is the configured provider/model; `options` are the api_server.model_options entries
    with provider, model, label, capabilities (unknown hints null), pricing (null when unknown); extra keys pass."""
    api = await make_api(config=OPTIONS_CONFIG)
    before = int(time.time())
    async with api.get("/api/model/options", headers=auth) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
        body = await resp.json()
    assert set(body) == {"object", "current", "options", "cached", "fetched_at"}
    assert body["object"] == "hermes.model_options"
    assert body["current"] == {"provider": "openrouter", "model": "anthropic/claude-sonnet-4.5"}
    assert body["options"] == [
        {
            "provider": "openrouter",
            "model": "anthropic/claude-sonnet-4.5",
            "label": "Claude Sonnet 4.5",
            "capabilities": {"reasoning": True, "vision": True, "tools": True, "context_length": 200000},
            "pricing": {"input_per_million": 3.0, "output_per_million": 15.0, "currency": "USD"},
        },
        {
            "provider": "custom",
            "model": "qwen3-32b",
            "label": "qwen3-32b (local)",
            "capabilities": {"reasoning": True, "vision": None, "tools": True, "context_length": None},
            "pricing": None,
            "endpoint": "http://127.0.0.1:8000/v1",
        },
    ]
    assert isinstance(body["fetched_at"], int) and before - 1 <= body["fetched_at"] <= time.time() + 1


async def test_model_options_are_cached_and_refresh_rebuilds(make_api: Any, auth: dict[str, str]) -> None:
    """W-8.2, §8.2: the list is cached (`cached:true` on later calls, same list); `?refresh=1` rebuilds it and answers
    `cached:false`, after which plain calls are cached again."""
    api = await make_api(config=OPTIONS_CONFIG)
    replies = []
    for query in ("", "", "?refresh=1", ""):
        async with api.get(f"/api/model/options{query}", headers=auth) as resp:
            assert resp.status == 200
            replies.append(await resp.json())
    assert [r["cached"] for r in replies[1:]] == [True, False, True]
    assert len({str(r["options"]) for r in replies}) == 1
    assert replies[3]["fetched_at"] == replies[2]["fetched_at"] >= replies[1]["fetched_at"]


async def test_model_options_without_configured_entries(api: TestClient, auth: dict[str, str]) -> None:
    """§8.2, §12: without a host inventory or api_server.model_options the list is empty; `current` still names the
    advertised model."""
    body = await (await api.get("/api/model/options", headers=auth)).json()
    assert body["object"] == "hermes.model_options" and body["options"] == []
    assert body["current"]["model"] == "hermes-agent"


async def test_model_options_need_the_key(api: TestClient) -> None:
    """W-1.3: /api/model/options is a Bearer route."""
    async with api.get("/api/model/options") as resp:
        assert resp.status == 401
        assert await resp.json() == AUTH_FAILED


# -- §8.4: the OpenAPI document ----------------------------------------------------------------------------------------


async def test_openapi_needs_the_key(api: TestClient) -> None:
    """§8.4, W-1.3: /openapi.json requires the Bearer key like every non-health route."""
    async with api.get("/openapi.json") as resp:
        assert resp.status == 401
        assert await resp.json() == AUTH_FAILED


async def test_openapi_is_3_1_and_documents_every_route_of_wire_1_1(api: TestClient, auth: dict[str, str]) -> None:
    """§8.4, §1.1: an OpenAPI 3.1 document whose operations are exactly the served routes of §1.1 (health on both
    paths; retired 410 routes aside), with path parameters and bearer security on everything but health."""
    async with api.get("/openapi.json", headers=auth) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
        doc = await resp.json()
    assert doc["openapi"].startswith("3.1")
    assert doc["info"]["title"] and doc["info"]["version"]
    operations = {(method, path): op for path, item in doc["paths"].items() for method, op in item.items()}
    assert set(operations) == WIRE_ROUTES
    for (method, path), op in operations.items():
        params = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert params == {part[1:-1] for part in path.split("/") if part.startswith("{")}, path
        if path in ("/health", "/v1/health"):
            assert "security" not in op, path
        else:
            assert op["security"] == [{"bearer": []}], path
    assert doc["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}


async def test_openapi_routes_are_served_and_served_routes_documented(api: TestClient, auth: dict[str, str]) -> None:
    """§8.4: every documented operation exists on the router (not 404 `not_found`, not 405), and every named route of
    the router is documented — but the host-data routes of §14.3, which answer 501 with the scripted runtime."""
    doc = await (await api.get("/openapi.json", headers=auth)).json()
    documented = {(method.upper(), path) for path, item in doc["paths"].items() for method in item}
    routed = {
        (route.method, route.resource.canonical)
        for route in api.server.app.router.routes()
        if route.name and route.method != "HEAD" and route.resource is not None
    }
    assert routed - documented == HOST_DATA_ROUTES
    for method, path in sorted(documented):
        probe = path.replace("{response_id}", "resp_x").replace("{run_id}", "run_x").replace("{session_id}", "nope")
        async with api.request(method, probe, headers=auth, json={}) as resp:
            assert resp.status != 405, (method, path)
            if resp.status == 404:
                assert (await resp.json())["error"]["code"] != "not_found", (method, path)


async def test_openapi_describes_streams_and_the_error_envelope(api: TestClient, auth: dict[str, str]) -> None:
    """§8.4: SSE bodies as text/event-stream on the streaming routes only; errors reference the envelope schema
    with message, type, param and code; runs answer 202 and session creation 201."""
    doc = await (await api.get("/openapi.json", headers=auth)).json()
    error = doc["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    assert set(error["properties"]["error"]["required"]) == {"message", "type", "param", "code"}
    assert {(method, path) for path, item in doc["paths"].items() for method in item} >= SSE_ROUTES
    for path, item in doc["paths"].items():
        for method, op in item.items():
            success = {code: r for code, r in op["responses"].items() if code != "default"}
            ((code, response),) = success.items()
            created = {("post", "/api/sessions"), ("post", "/api/sessions/{session_id}/fork")}
            expected_code = (
                "202" if (method, path) == ("post", "/v1/runs") else "201" if (method, path) in created else "200"
            )
            if (method, path) == ("get", "/v1/responses"):  # §16: the WebSocket upgrade, its messages described apart
                assert code == "101" and "content" not in response and "x-websocket" in op, op
                continue
            assert code == expected_code, (method, path)
            assert ("text/event-stream" in response["content"]) == ((method, path) in SSE_ROUTES), (method, path)
            default = op["responses"]["default"]["content"]["application/json"]["schema"]
            assert default == {"$ref": "#/components/schemas/Error"}, (method, path)
