"""Profile multiplexing inside the real `hermes gateway run` (WIRE §14.3): with `gateway.multiplex_profiles` on,
every route is mirrored under `/p/{profile}/…` and runs in that profile — its config (the model the real AIAgent
asks the provider for), its state.db, its skills, its credential scope — while the gateway's own profile keeps
the unprefixed paths; an unknown profile is 404 `profile_not_found` after authentication. With multiplexing off the
prefix is ignored, as the built-in server ignores it.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from tests.helpers import Reply, assert_error_envelope
from tests.live import TEST_KEY

from .conftest import HomeFactory
from .provider import MODEL, ScriptedProvider
from .support import PLUGINS, SKILL, WORK_MODEL, HermesGateway, add_work_profile, listening


def fetch(gateway: HermesGateway, method: str, path: str, body: Any = None, key: str | None = TEST_KEY) -> Reply:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=90)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=headers)
        resp = conn.getresponse()
        return Reply(resp.status, CIMultiDictProxy(CIMultiDict(resp.getheaders())), resp.read())
    finally:
        conn.close()


def call(gateway: HermesGateway, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    reply = fetch(gateway, method, path, body)
    return reply.status, reply.json()


def state_ids(home: Path) -> set[str]:
    from hermes_state import SessionDB

    db = SessionDB(db_path=home / "state.db")
    try:
        return {s["id"] for s in db.list_sessions_rich(limit=100)}
    finally:
        db.close()


def models_asked(provider: ScriptedProvider, marker: str) -> set[str]:
    return {
        str(r.body.get("model"))
        for r in provider.requests
        if any(marker in str(m.get("content")) for m in r.messages if m.get("role") == "user")
    }


def test_each_profile_is_served_under_its_prefix_with_its_own_config_sessions_skills_and_scope(
    hermes_home: HomeFactory,
    run_hermes: Callable[[Path], HermesGateway],
    provider: ScriptedProvider,
) -> None:
    home = hermes_home(env={"API_SERVER_PORT": "0"}, plugins=PLUGINS, gateway={"multiplex_profiles": True})
    work = add_work_profile(home, provider)
    gateway = run_hermes(home)
    listening(gateway)

    status, caps = call(gateway, "GET", "/v1/capabilities")
    assert status == 200 and caps["features"]["profile_multiplex"] is True, caps

    # Discovery: each profile advertises its own model name (upstream: the profile's name).
    assert call(gateway, "GET", "/p/work/v1/models")[1]["data"][0]["id"] == "work"
    assert call(gateway, "GET", "/v1/models")[1]["data"][0]["id"] == "hermes-agent"
    assert call(gateway, "GET", "/p/default/v1/models")[1]["data"][0]["id"] == "hermes-agent"

    # An unknown profile: authenticated first, then 404 in the envelope; nothing leaks to the default profile.
    assert_error_envelope(fetch(gateway, "GET", "/p/nope/v1/models", key=None), 401)
    assert_error_envelope(fetch(gateway, "GET", "/p/nope/v1/models"), 404, "profile_not_found", param="profile")
    assert_error_envelope(
        fetch(gateway, "POST", "/p/nope/v1/chat/completions", {"messages": []}), 404, "profile_not_found"
    )

    # Sessions live in the profile's own state.db; the turn runs on the profile's config.
    status, created = call(gateway, "POST", "/p/work/api/sessions", {"id": "work-session", "title": "Work"})
    assert status == 201, created
    status, reply = call(gateway, "POST", "/p/work/api/sessions/work-session/chat", {"message": "profile work turn"})
    assert status == 200 and reply["status"] == "completed", reply
    assert models_asked(provider, "profile work turn") == {WORK_MODEL}
    assert "work-session" in state_ids(work) and "work-session" not in state_ids(home)
    assert call(gateway, "GET", "/p/work/api/sessions/work-session")[0] == 200
    assert_error_envelope(fetch(gateway, "GET", "/api/sessions/work-session"), 404, "session_not_found")
    listed = call(gateway, "GET", "/p/work/api/sessions")[1]["data"]
    assert [s["id"] for s in listed] == ["work-session"]

    # The default profile, unprefixed, keeps its own model and store.
    status, chat = call(
        gateway, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "profile default turn"}]}
    )
    assert status == 200, chat
    assert models_asked(provider, "profile default turn") == {MODEL}
    assert chat["model"] == "hermes-agent"

    # A chat through the prefix echoes the profile's model name and runs on its config.
    status, chat = call(
        gateway, "POST", "/p/work/v1/chat/completions", {"messages": [{"role": "user", "content": "prefixed chat"}]}
    )
    assert status == 200 and chat["model"] == "work", chat
    assert models_asked(provider, "prefixed chat") == {WORK_MODEL}

    # Stored responses are scoped by profile (WIRE §1.3: the profile name is part of the credential scope).
    status, response = call(gateway, "POST", "/p/work/v1/responses", {"input": "a stored work answer"})
    assert status == 200 and response["status"] == "completed", response
    assert call(gateway, "GET", f"/p/work/v1/responses/{response['id']}")[0] == 200
    assert_error_envelope(fetch(gateway, "GET", f"/v1/responses/{response['id']}"), 404, "response_not_found")

    # The profile's own cron store ($HERMES_HOME/cron/jobs.json of the profile, what its scheduler runs).
    job = {"name": "work job", "schedule": "every 2h", "prompt": "Summarise the work logs."}
    status, created_job = call(gateway, "POST", "/p/work/api/jobs", job)
    assert status == 200, created_job
    assert [j["id"] for j in call(gateway, "GET", "/p/work/api/jobs")[1]["jobs"]] == [created_job["job"]["id"]]
    assert call(gateway, "GET", "/api/jobs")[1]["jobs"] == []
    assert created_job["job"]["id"] in (work / "cron" / "jobs.json").read_text(encoding="utf-8")

    # The profile's own skills.
    work_skills = {s["name"] for s in call(gateway, "GET", "/p/work/v1/skills")[1]["data"]}
    default_skills = {s["name"] for s in call(gateway, "GET", "/v1/skills")[1]["data"]}
    assert SKILL in work_skills and SKILL not in default_skills


def test_without_multiplexing_a_profile_prefix_is_ignored(
    hermes_home: HomeFactory,
    run_hermes: Callable[[Path], HermesGateway],
    provider: ScriptedProvider,
) -> None:
    home = hermes_home(env={"API_SERVER_PORT": "0"}, plugins=PLUGINS)
    add_work_profile(home, provider)
    gateway = run_hermes(home)
    listening(gateway)
    assert call(gateway, "GET", "/v1/capabilities")[1]["features"]["profile_multiplex"] is False
    for prefix in ("/p/work", "/p/nope"):
        status, models = call(gateway, "GET", f"{prefix}/v1/models")
        assert status == 200 and models["data"][0]["id"] == "hermes-agent", models
    status, chat = call(
        gateway, "POST", "/p/work/v1/chat/completions", {"messages": [{"role": "user", "content": "unplexed chat"}]}
    )
    assert status == 200 and chat["model"] == "hermes-agent", chat
    assert models_asked(provider, "unplexed chat") == {MODEL}


def test_issue_20_defect_6_a_profile_cannot_reach_another_profiles_live_run_nor_enumerate_profiles(
    hermes_home: HomeFactory,
    run_hermes: Callable[[Path], HermesGateway],
    provider: ScriptedProvider,
) -> None:
    """Issue 20, defect 6: the work profile starts a run (a long thinking phase of the real AIAgent); the default
    profile — prefixed or not — gets 404 run_not_found for its GET, events, stop and approval, and the run keeps
    running until work stops it. Without a key, `/p/{name}/health` answers alike for served and unknown names."""
    home = hermes_home(env={"API_SERVER_PORT": "0"}, plugins=PLUGINS, gateway={"multiplex_profiles": True})
    add_work_profile(home, provider)
    gateway = run_hermes(home)
    listening(gateway)

    status, started = call(gateway, "POST", "/p/work/v1/runs", {"input": "[slow-stream] a long work run"})
    assert status == 202, started
    run_id = started["run_id"]
    for method, suffix, body in (
        ("GET", "", None),
        ("GET", "/events", None),
        ("POST", "/stop", None),
        ("POST", "/approval", {"choice": "once"}),
    ):
        for prefix in ("/p/default", ""):
            reply = fetch(gateway, method, f"{prefix}/v1/runs/{run_id}{suffix}", body)
            assert_error_envelope(reply, 404, "run_not_found")
    status, run = call(gateway, "GET", f"/p/work/v1/runs/{run_id}")
    assert status == 200 and run["status"] in ("queued", "running"), run
    status, stopped = call(gateway, "POST", f"/p/work/v1/runs/{run_id}/stop")
    assert status == 200 and stopped["status"] == "stopping", stopped

    plain = fetch(gateway, "GET", "/health", key=None)
    assert plain.status == 200
    for name in ("work", "default", "nope"):
        reply = fetch(gateway, "GET", f"/p/{name}/health", key=None)
        assert (reply.status, reply.json()) == (200, plain.json()), reply.raw
