"""Issue 20, defect 6: with profile multiplexing each profile is a credential scope (WIRE §1.3), and live runs are
scoped like stored Responses: `GET`, `/events`, `/stop` and `/approval` on `/p/bob/v1/runs/{alice's run}` are 404
`run_not_found` and leave alice's run running; and `/p/{name}/health` without a key answers the same for a served
and an unknown name, so profile names cannot be enumerated. Route level, with the scripted runtime and a stand-in
host that multiplexes two profiles (the real `hermes gateway`: tests/hermes/test_profiles.py)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.gateway.runner import ApiRunner
from hermes_api_plugin.gateway.server import ReferenceGateway, build_plugin_manager, runner_kwargs
from hermes_api_plugin.http.app_keys import RUNTIME
from hermes_api_plugin.runtimes import select_runtime
from tests.helpers import Reply, assert_error_envelope, read_reply
from tests.live import write_home


class MultiplexingHost:
    """What http/profiles.py asks of a host: it multiplexes, it serves alice and bob, a profile scope is a no-op."""

    def __init__(self, root: Path) -> None:
        self.served = {name: root / name for name in ("alice", "bob")}

    def multiplexing(self) -> bool:
        return True

    def served_profiles(self) -> Mapping[str, Path]:
        return self.served

    def profile_scope(self, home: Path | None) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()


class Api:
    """The real app behind the gateway's own runner (which strips `/p/{profile}`), on 127.0.0.1."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session, self.base = session, base

    async def fetch(self, method: str, path: str, *, json: Any = None, headers: dict[str, str] | None = None) -> Reply:
        async with self.session.request(method, self.base + path, json=json, headers=headers or {}) as resp:
            return await read_reply(resp)


@pytest.fixture
async def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    home = write_home(tmp_path / "home")
    settings = load_settings(home, environ={"HERMES_HOME": str(home)})
    pm = build_plugin_manager()
    gateway = ReferenceGateway(settings, select_runtime(settings), pm)
    pm.hook.hermes_api_gateway_startup(gateway=gateway)
    app = gateway.apps[0]
    monkeypatch.setattr(app[RUNTIME], "host_data", MultiplexingHost(tmp_path), raising=False)
    runner = ApiRunner(app, **runner_kwargs(settings))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as session:
            yield Api(session, f"http://127.0.0.1:{port}")
    finally:
        await runner.cleanup()


async def test_issue_20_defect_6_another_profile_cannot_read_follow_stop_or_approve_a_live_run(
    api: Api, auth: dict[str, str]
) -> None:
    started = await api.fetch("POST", "/p/alice/v1/runs", json={"input": "hang"}, headers=auth)
    assert started.status == 202, started.raw
    run_id = started.json()["run_id"]
    for method, suffix, body in (
        ("GET", "", None),
        ("GET", "/events", None),
        ("POST", "/stop", None),
        ("POST", "/approval", {"choice": "once"}),
    ):
        for scope in ("/p/bob", ""):  # another served profile, and the gateway's own profile
            reply = await api.fetch(method, f"{scope}/v1/runs/{run_id}{suffix}", json=body, headers=auth)
            assert_error_envelope(reply, 404, "run_not_found")
    mine = await api.fetch("GET", f"/p/alice/v1/runs/{run_id}", headers=auth)
    assert mine.status == 200 and mine.json()["status"] == "running", mine.raw  # bob's stop did not reach it
    stopped = await api.fetch("POST", f"/p/alice/v1/runs/{run_id}/stop", headers=auth)
    assert stopped.status == 200 and stopped.json()["status"] == "stopping", stopped.raw


@pytest.mark.parametrize("path", ["/health", "/v1/health"])
async def test_issue_20_defect_6_health_without_a_key_does_not_tell_served_profiles_from_unknown_ones(
    api: Api, path: str
) -> None:
    plain = await api.fetch("GET", path)
    for name in ("alice", "nope"):
        reply = await api.fetch("GET", f"/p/{name}{path}")
        assert (reply.status, reply.json()) == (plain.status, plain.json()) == (200, plain.json()), reply.raw
    detailed = await api.fetch("GET", "/p/nope/health/detailed")
    assert_error_envelope(detailed, 401)  # the detailed answer needs the key before anything else is said
