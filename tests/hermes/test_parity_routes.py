"""WIRE §14 inside the real `hermes gateway run` (hermes-agent 0.19, plugin enabled, scripted provider).

- W-14.1 route parity: every `(method, path)` of hermes-agent's own `_http_route_table()`, read at test time (the
  cron fire row included: cron imports here), is served by the plugin (no 404 `not_found`, no 405) or is listed in
  `NOT_YET_SERVED` — now empty — and a listed row must really be unserved, so an upgrade that adds a route fails
  here until it is served or listed;
- W-14.4: `/v1/skills` lists a skill written under `$HERMES_HOME/skills` as Hermes expects it; `/v1/toolsets` the
  toolsets with the api_server platform's state; `/api/model/options` Hermes' dashboard inventory;
- §14.3: `/health/detailed` carries Hermes' gateway state, platforms, readiness and version;
- W-14.5: the capabilities say so.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator

import pytest

from .conftest import HomeFactory
from .provider import MODEL
from .support import PLUGINS, HermesGateway, call, listening, start_gateway

# Rows of hermes-agent's route table this plugin does not serve yet (issue 13). Empty: W-14.1 holds for 0.19.0.
NOT_YET_SERVED: set[tuple[str, str]] = set()
CRON_FIRE = ("POST", "/api/cron/fire")  # upstream's row only where its cron import succeeds
SKILL = """---
name: deploy-check
description: Check a deployment before it goes live.
---
# Deploy check

Run the smoke tests.
"""
PROBE_IDS = {"{response_id}": "resp_x", "{run_id}": "run_x", "{session_id}": "nope", "{job_id}": "job_x"}


def upstream_routes() -> set[tuple[str, str]]:
    """hermes-agent's own table, read from its class: a stand-in `self` names each handler, the rows are
    what the built-in server registers (the cron row included when its import succeeds here)."""
    from gateway.platforms.api_server import APIServerAdapter

    class Handlers:
        def __getattr__(self, name: str) -> str:
            return name

    return {(method, path) for method, path, _ in APIServerAdapter._http_route_table(Handlers())}  # type: ignore[arg-type]


def served(gateway: HermesGateway, method: str, path: str) -> bool:
    """Not 405 and not the router's 404 `not_found` (a 404 naming the missing object means the route exists)."""
    for template, value in PROBE_IDS.items():
        path = path.replace(template, value)
    status, body = call(gateway, method, path.replace("{platform}", "google_chat"))
    return status != 405 and not (status == 404 and body.get("error", {}).get("code") == "not_found")


@pytest.fixture(scope="module")
def gateway(hermes_home: HomeFactory) -> Iterator[HermesGateway]:
    """One `hermes gateway run` for the module, with a skill installed in its home."""
    home = hermes_home(env={"API_SERVER_PORT": "0"}, plugins=PLUGINS)
    skill = home / "skills" / "devops" / "deploy-check" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL, encoding="utf-8")
    live = start_gateway(home)
    try:
        listening(live)
        yield live
    finally:
        live.stop()


def test_every_upstream_route_is_served_or_listed_as_not_yet(gateway: HermesGateway) -> None:
    """W-14.1: the remaining gap is exactly NOT_YET_SERVED (nothing, with hermes-agent 0.19.0)."""
    rows = upstream_routes()
    assert len(rows) >= 35 and CRON_FIRE in rows  # the conditional row is part of what is checked
    unserved = {row for row in sorted(rows) if not served(gateway, *row)}
    assert unserved <= NOT_YET_SERVED, f"upstream routes the plugin does not serve: {sorted(unserved - NOT_YET_SERVED)}"
    assert unserved == NOT_YET_SERVED & rows, (
        f"served now, drop from NOT_YET_SERVED: {sorted(NOT_YET_SERVED - unserved)}"
    )


def test_every_upstream_route_is_mirrored_under_a_profile_prefix(gateway: HermesGateway) -> None:
    """§14.3: the built-in server registers `/p/{profile}{path}` beside every row; with multiplexing off (this
    gateway) the prefix is ignored, so each mirror is served exactly where its row is (tests/hermes/test_profiles.py
    covers multiplexing on)."""
    rows = upstream_routes()
    unserved = {row for row in sorted(rows) if not served(gateway, row[0], f"/p/default{row[1]}")}
    assert unserved == NOT_YET_SERVED & rows


def test_skills_list_the_skill_installed_under_hermes_home(gateway: HermesGateway) -> None:
    """W-14.4: the SKILL.md written under $HERMES_HOME/skills/devops is listed, in Hermes' entry shape."""
    status, body = call(gateway, "GET", "/v1/skills")
    assert status == 200, body
    assert body["object"] == "list"
    assert {
        "name": "deploy-check",
        "description": "Check a deployment before it goes live.",
        "category": "devops",
    } in body["data"]


def test_toolsets_list_the_api_server_platform_state(gateway: HermesGateway) -> None:
    """W-14.4: Hermes' configurable toolsets, `terminal` enabled for api_server (config.yaml) with its tools."""
    status, body = call(gateway, "GET", "/v1/toolsets")
    assert status == 200, body
    assert body["object"] == "list" and body["platform"] == "api_server"
    by_name = {entry["name"]: entry for entry in body["data"]}
    assert set(by_name["terminal"]) == {"name", "label", "description", "enabled", "configured", "tools"}
    assert by_name["terminal"]["enabled"] is True and "terminal" in by_name["terminal"]["tools"]
    assert [name for name, entry in by_name.items() if entry["enabled"]] == ["terminal"]


def test_model_options_are_hermes_inventory(gateway: HermesGateway) -> None:
    """W-14.4: the dashboard payload (providers, model, provider) with the §8.2 entries flattened from it; the
    configured custom endpoint is a provider row listing the scripted provider's model; `?refresh=1` rebuilds."""
    status, body = call(gateway, "GET", "/api/model/options")
    assert status == 200, body
    assert body["object"] == "hermes.model_options"
    assert body["model"] == MODEL and body["current"]["model"] == MODEL
    rows = [row for row in body["providers"] if MODEL in (row.get("models") or [])]
    assert rows, body["providers"]
    assert {"slug", "name", "models"} <= set(rows[0])
    assert rows[0]["capabilities"][MODEL].keys() >= {"fast", "reasoning"}  # capabilities=True, as the dashboard asks
    option = next(o for o in body["options"] if o["model"] == MODEL and o["provider"] == rows[0]["slug"])
    assert option["capabilities"]["reasoning"] == rows[0]["capabilities"][MODEL]["reasoning"]
    assert call(gateway, "GET", "/api/model/options")[1]["cached"] is True
    status, refreshed = call(gateway, "GET", "/api/model/options?refresh=1")
    assert status == 200 and refreshed["cached"] is False and refreshed["providers"] == body["providers"]


def test_health_detailed_is_hermes_gateway_health(gateway: HermesGateway) -> None:
    """§14.3: Hermes' version, gateway state, platforms and readiness probes; this server's counts kept."""
    status, body = call(gateway, "GET", "/health/detailed")
    assert status == 200, body
    assert body["version"] == importlib.metadata.version("hermes-agent")
    assert body["gateway_state"] == "running"
    assert "api_server" in body["platforms"]
    checks = body["readiness"]["checks"]
    assert {"state_db", "config", "model", "disk", "gateway", "background_queues", "store"} <= set(checks)
    assert checks["gateway"]["state"] == "running" and checks["model"]["status"] == "ok"
    assert body["api_server"]["turns"] == {"running": 0, "queued": 0, "waiting": 0}
    assert body["api_server"]["version"] != body["version"]  # the plugin's own version, beside Hermes'


def test_capabilities_report_the_host_features(gateway: HermesGateway) -> None:
    """W-14.5: skills, toolsets, Hermes' inventory and health, jobs, platform ingress and cron fire are true and
    listed on the hermes host."""
    status, body = call(gateway, "GET", "/v1/capabilities")
    assert status == 200, body
    features = body["features"]
    for name in ("skills_api", "toolsets_api", "model_inventory", "health_detailed_host"):
        assert features[name] is True, name
    assert body["endpoints"]["skills"] == {"method": "GET", "path": "/v1/skills"}
    assert body["endpoints"]["toolsets"] == {"method": "GET", "path": "/v1/toolsets"}
    assert features["jobs_admin"] is True and features["platform_events"] is True and features["cron_fire"] is True
    assert body["endpoints"]["jobs"] == {"method": "GET", "path": "/api/jobs"}
    assert body["endpoints"]["cron_fire"] == {"method": "POST", "path": "/api/cron/fire"}
    assert body["endpoints"]["platform_events"] == {"method": "POST", "path": "/api/platforms/{platform}/events"}
