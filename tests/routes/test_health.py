"""GET /health/detailed (WIRE.md §14.3): hermes-agent 0.19.0's shape and authentication, plus this server's own
numbers — turns in the registry, slots against the cap, open streaming replies, the store."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from aiohttp.test_utils import TestClient

from hermes_api_plugin import __version__
from hermes_api_plugin.http.app_keys import TURNS
from tests.conftest import ApiFactory
from tests.helpers import CHAT, assert_error_envelope, fetch, read_until, wait_for_async

DETAILED = "/health/detailed"
# The top-level keys of hermes-agent 0.19.0's `_handle_health_detailed` (gateway/platforms/api_server.py).
UPSTREAM_KEYS = {
    "status",
    "readiness",
    "platform",
    "version",
    "gateway_state",
    "platforms",
    "active_agents",
    "gateway_busy",
    "gateway_drainable",
    "exit_reason",
    "updated_at",
    "pid",
}


def hang(**extra: Any) -> dict[str, Any]:
    """A chat turn whose tool runs for 600 s (tests/scripts/chat.yaml `hang`)."""
    return {"model": "hermes-agent", "messages": [{"role": "user", "content": "hang"}], **extra}


async def detailed(api: TestClient, auth: dict[str, str]) -> dict[str, Any]:
    reply = await fetch(api, "GET", DETAILED, headers=auth)
    assert reply.status == 200, reply.raw
    body: dict[str, Any] = reply.json()
    return body


async def numbers(api: TestClient, auth: dict[str, str]) -> dict[str, Any]:
    body: dict[str, Any] = (await detailed(api, auth))["api_server"]
    return body


async def test_health_detailed_needs_the_key(api: TestClient, auth: dict[str, str]) -> None:
    """§14.3, W-1.3: like upstream (`_check_auth`), the detailed health needs the Bearer key; /health does not."""
    for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789abcdef"}):
        reply = await fetch(api, "GET", DETAILED, headers=headers)
        assert_error_envelope(reply, 401, "gateway_auth_failed")
    assert (await fetch(api, "GET", "/health")).status == 200


async def test_health_detailed_idle_has_the_upstream_shape_and_zero_counts(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """§14.3: upstream's top-level keys (with `api_server` added), an idle running gateway, the configured cap."""
    api = await make_api(config={"api_server": {"max_concurrent_runs": 7}})
    reply = await fetch(api, "GET", DETAILED, headers=auth)
    assert reply.headers["Content-Type"] == "application/json; charset=utf-8"
    body = reply.json()
    assert set(body) == UPSTREAM_KEYS | {"api_server"}
    assert body["status"] == "ok" and body["readiness"]["status"] == "ok"
    assert body["platform"] == "hermes-agent" and body["version"] == __version__
    assert body["gateway_state"] == "running"
    assert body["gateway_busy"] is False and body["gateway_drainable"] is True
    assert body["active_agents"] == 0
    assert body["pid"] == os.getpid()  # in-process app
    assert body["readiness"]["checks"]["background_queues"] == {"status": "ok", "active_api_runs": 0}
    assert body["readiness"]["checks"]["store"] == {"status": "ok", "kind": "sqlite"}
    assert body["api_server"] == {
        "version": __version__,  # the plugin's own, beside Hermes' at the top on the hermes host
        "turns": {"running": 0, "queued": 0, "waiting": 0},
        "slots": {"admitted": 0, "held": 0, "max_concurrent_runs": 7, "max_suspended": 100},
        "streams": {"open": 0, "buffered_bytes": 0},
        "store": {"kind": "sqlite", "durable": True, "reachable": True},
        "agents": None,  # the scripted runtime keeps no warm agents
    }


async def test_health_detailed_counts_a_running_stream_until_its_client_leaves(
    api: TestClient, auth: dict[str, str]
) -> None:
    """A live chat stream is one running turn, one admitted slot and one open stream; when its client goes the
    turn is cancelled (§5.5) and every count returns to 0."""
    async with api.post(CHAT, json=hang(stream=True), headers=auth) as resp:
        await read_until(resp, b'"status":"running"')
        body = await detailed(api, auth)
        assert body["active_agents"] == 1 and body["gateway_busy"] is True
        assert body["api_server"]["turns"] == {"running": 1, "queued": 0, "waiting": 0}
        assert body["api_server"]["slots"]["admitted"] == 1
        assert body["api_server"]["streams"]["open"] == 1
        resp.close()
    idle = {"turns": {"running": 0, "queued": 0, "waiting": 0}, "streams": {"open": 0, "buffered_bytes": 0}}
    await wait_for_async(
        lambda: numbers(api, auth),
        until=lambda n: {k: n[k] for k in idle} == idle and n["slots"]["admitted"] == 0,
        what="the registry and the stream gauge emptying",
    )


async def test_health_detailed_counts_a_turn_waiting_for_its_session_as_queued(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§1.8: a second turn on a busy session waits `queued` and already holds a slot; the early-head JSON reply
    (§1.11) waiting for it counts as an open stream too."""
    headers = {**auth, "X-Hermes-Session-Id": "health-queue"}
    async with api.post(CHAT, json=hang(stream=True), headers=headers) as first:
        await read_until(first, b'"status":"running"')
        second = asyncio.ensure_future(fetch(api, "POST", CHAT, json=hang(), headers=headers))
        counted = await wait_for_async(
            lambda: numbers(api, auth),
            until=lambda n: n["turns"]["queued"] == 1,
            what="the second turn being queued",
        )
        assert counted["turns"] == {"running": 1, "queued": 1, "waiting": 0}
        assert counted["slots"]["admitted"] == 2
        assert counted["streams"]["open"] == 2
        second.cancel()  # both clients leave: neither turn is keyed, so both are cancelled (§5.5)
        first.close()
    await wait_for_async(
        lambda: numbers(api, auth),
        until=lambda n: n["slots"]["admitted"] == 0 and n["streams"]["open"] == 0,
        what="both turns settling",
    )


async def test_health_detailed_reports_draining_after_shutdown_began(api: TestClient, auth: dict[str, str]) -> None:
    """§1.8: once the drain began, `gateway_state` is `draining` and the gateway is no longer drainable (as
    upstream derives it), while the route keeps answering."""
    await api.server.app[TURNS].drain()
    body = await detailed(api, auth)
    assert body["gateway_state"] == "draining"
    assert body["readiness"]["checks"]["gateway"] == {"status": "ok", "state": "draining"}
    assert body["gateway_drainable"] is False and body["gateway_busy"] is False


async def test_health_detailed_is_a_named_documented_authenticated_route(api: TestClient, auth: dict[str, str]) -> None:
    """§8.3, §8.4: capabilities list it under `health_detailed`; /openapi.json documents it with bearer security."""
    capabilities = (await fetch(api, "GET", "/v1/capabilities", headers=auth)).json()
    assert capabilities["endpoints"]["health_detailed"] == {"method": "GET", "path": DETAILED}
    operation = (await fetch(api, "GET", "/openapi.json", headers=auth)).json()["paths"][DETAILED]["get"]
    assert operation["security"] == [{"bearer": []}]
    assert operation["operationId"] == "health_detailed"
