"""WIRE §14.3, W-14.5 with the bundled reference gateway (scripted runtime, no Hermes): the routes of the host
agent's own data answer 501 `not_supported_by_host`, are neither documented nor listed as endpoints, and every
parity feature of §14 is in the capabilities document, `false` where this host does not serve it."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.http.app_keys import RUNTIME
from hermes_api_plugin.http.capabilities import HOST_FEATURES, ROUTE_FEATURES, UNSERVED_FEATURES
from tests.helpers import assert_error_envelope, fetch

HOST_DATA = ("/v1/skills", "/v1/toolsets")
# hermes-agent 0.19.0's `_handle_capabilities` features that this server had not listed before §14.
UPSTREAM_PARITY = {
    "run_approval_response",
    "approval_events",
    "session_fork",
    "skills_api",
    "admin_config_rw",
    "jobs_admin",
    "memory_write_api",
    "audio_api",
    "realtime_voice",
}


@pytest.mark.parametrize("path", HOST_DATA)
async def test_host_data_routes_answer_501_not_supported_by_host(
    api: TestClient, auth: dict[str, str], path: str
) -> None:
    """§14.3: the route exists (not 404, not 405) and says why it has nothing, in the envelope, after auth."""
    assert_error_envelope(
        await fetch(api, "GET", path, headers=auth), 501, "not_supported_by_host", type="server_error"
    )
    assert_error_envelope(await fetch(api, "GET", path), 401, "gateway_auth_failed")


async def test_host_data_routes_are_neither_documented_nor_listed(api: TestClient, auth: dict[str, str]) -> None:
    """W-14.5: endpoints and /openapi.json list only what this host serves."""
    caps: dict[str, Any] = (await fetch(api, "GET", "/v1/capabilities", headers=auth)).json()
    doc: dict[str, Any] = (await fetch(api, "GET", "/openapi.json", headers=auth)).json()
    for path in HOST_DATA:
        assert path not in doc["paths"]
        assert path not in {spec["path"] for spec in caps["endpoints"].values()}


async def test_capabilities_list_every_parity_feature_false_where_not_served(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-14.5: every parity feature is present (upstream's names included) and a boolean; with the scripted runtime
    none of the host-data ones is true, nor a feature whose routes are not served."""
    caps: dict[str, Any] = (await fetch(api, "GET", "/v1/capabilities", headers=auth)).json()
    features = caps["features"]
    parity = {*ROUTE_FEATURES, *HOST_FEATURES, *UNSERVED_FEATURES, "hermes_sessions"}
    assert parity >= UPSTREAM_PARITY and set(features) >= parity
    assert all(isinstance(features[name], bool) for name in parity)
    for name, routes in ROUTE_FEATURES.items():
        assert features[name] is all(route in caps["endpoints"] for route in routes), name
    for name in ("skills_api", "toolsets_api", "hermes_sessions", *HOST_FEATURES):
        assert features[name] is False, name
    assert not any(features[name] for name in UNSERVED_FEATURES)


async def test_model_options_keep_the_configured_list_without_a_host(api: TestClient, auth: dict[str, str]) -> None:
    """§8.2: without a host inventory, no Hermes dashboard keys are added."""
    body: dict[str, Any] = (await fetch(api, "GET", "/api/model/options", headers=auth)).json()
    assert set(body) == {"object", "current", "options", "cached", "fetched_at"}


async def test_model_options_failure_is_redacted(api: TestClient, auth: dict[str, str]) -> None:
    """§8.2, §14.3: a failing inventory answers 500 `model_options_failed` without the exception's text (a probe's
    error can carry a provider URL or key)."""
    secret = "sk-live-0123456789abcdef"

    async def failing(refresh: bool) -> None:
        raise RuntimeError(f"GET https://user:{secret}@models.example/v1/models failed")

    api.server.app[RUNTIME].model_inventory = failing  # type: ignore[method-assign]
    reply = await fetch(api, "GET", "/api/model/options", headers=auth)
    assert_error_envelope(reply, 500, "model_options_failed", type="server_error")
    assert secret.encode() not in reply.raw and b"models.example" not in reply.raw
