"""WIRE §14.3 `/api/jobs…` and `POST /api/platforms/{platform}/events` on the bundled reference gateway:

- without a host (the scripted runtime) every route answers 501 `not_supported_by_host` — the jobs after
  authentication, the platform ingress without it (it never takes API_SERVER_KEY) — and capabilities say
  `jobs_admin` and `platform_events` are false;
- with a stand-in host, the route logic: 503 `cron_unavailable`, the job id and field codes, the prompt scanner,
  and the ingress failing closed (unconnected platform, no verifier, a verifier that refuses or raises) before
  the body is read. The real cron store and adapters are exercised in tests/hermes/test_host_jobs.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.http.app_keys import RUNTIME
from tests.helpers import JOB_ID, assert_error_envelope, fetch

JOB_ROUTES = (
    ("GET", "/api/jobs"),
    ("POST", "/api/jobs"),
    ("GET", f"/api/jobs/{JOB_ID}"),
    ("PATCH", f"/api/jobs/{JOB_ID}"),
    ("DELETE", f"/api/jobs/{JOB_ID}"),
    ("POST", f"/api/jobs/{JOB_ID}/pause"),
    ("POST", f"/api/jobs/{JOB_ID}/resume"),
    ("POST", f"/api/jobs/{JOB_ID}/run"),
)
EVENTS = "/api/platforms/google_chat/events"


@pytest.mark.parametrize(("method", "path"), JOB_ROUTES)
async def test_job_routes_answer_501_without_a_host(
    api: TestClient, auth: dict[str, str], method: str, path: str
) -> None:
    assert_error_envelope(await fetch(api, method, path, json={}), 401, "gateway_auth_failed")
    reply = await fetch(api, method, path, json={}, headers=auth)
    assert_error_envelope(reply, 501, "not_supported_by_host", type="server_error")


async def test_platform_ingress_answers_501_without_a_host_and_never_asks_for_the_key(api: TestClient) -> None:
    reply = await fetch(api, "POST", EVENTS, json={}, headers={"Authorization": "Bearer platform-token"})
    assert_error_envelope(reply, 501, "not_supported_by_host")
    assert_error_envelope(await fetch(api, "POST", EVENTS, json={}), 501, "not_supported_by_host")


async def test_capabilities_say_jobs_and_platform_events_are_not_served(api: TestClient, auth: dict[str, str]) -> None:
    caps: dict[str, Any] = (await fetch(api, "GET", "/v1/capabilities", headers=auth)).json()
    assert caps["features"]["jobs_admin"] is False and caps["features"]["platform_events"] is False
    assert not {"jobs", "job_create", "platform_events"} & set(caps["endpoints"])


class Jobs:
    """A stand-in cron store: one job, a scanner that refuses 'exfiltrate'."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def get(self, job_id: str) -> dict[str, Any] | None:
        return {"id": job_id, "name": "n"} if job_id == JOB_ID else None

    async def create(self, fields: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("create", fields))
        return {"id": JOB_ID, **fields}

    async def update(self, job_id: str, fields: dict[str, Any]) -> dict[str, Any] | None:
        self.calls.append(("update", fields))
        if fields.get("schedule") == "never":
            raise ValueError("Invalid schedule 'never'")
        return await self.get(job_id)

    async def scan_prompt(self, prompt: str) -> str:
        return "Blocked: exfiltration" if "exfiltrate" in prompt else ""


class Adapter:
    def __init__(self, verdict: Any) -> None:
        self.verdict = verdict
        self.seen: list[Any] = []

    def verify_http_event_request(self, authorization: str) -> tuple[bool, str | None]:
        self.seen.append(authorization)
        if isinstance(self.verdict, Exception):
            raise self.verdict
        return self.verdict

    async def dispatch_http_event(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.seen.append(payload)
        return {"text": "ok"}


class Host:
    def __init__(self, jobs: Jobs | None, adapters: dict[str, Any]) -> None:
        self._jobs, self.adapters = jobs, adapters

    async def jobs(self) -> Jobs | None:
        return self._jobs

    def platform_adapter(self, platform: str) -> Any:
        return self.adapters.get(platform)

    def multiplexing(self) -> bool:
        return False


@pytest.fixture
def host(api: TestClient, monkeypatch: pytest.MonkeyPatch) -> Host:
    stand_in = Host(Jobs(), {})
    monkeypatch.setattr(api.server.app[RUNTIME], "host_data", stand_in, raising=False)
    return stand_in


async def test_cron_unavailable_is_503(api: TestClient, auth: dict[str, str], host: Host) -> None:
    host._jobs = None
    reply = await fetch(api, "GET", "/api/jobs", headers=auth)
    assert_error_envelope(reply, 503, "cron_unavailable", type="server_error")


@pytest.mark.parametrize("job_id", ["0123456789AB", "0123456789a", "0123456789abc", "zzzzzzzzzzzz"])
async def test_job_id_is_12_lowercase_hex_digits(
    api: TestClient, auth: dict[str, str], host: Host, job_id: str
) -> None:
    reply = await fetch(api, "GET", f"/api/jobs/{job_id}", headers=auth)
    assert_error_envelope(reply, 400, "invalid_job_id", param="job_id")


async def test_unknown_job_is_404_job_not_found(api: TestClient, auth: dict[str, str], host: Host) -> None:
    assert_error_envelope(await fetch(api, "GET", "/api/jobs/ffffffffffff", headers=auth), 404, "job_not_found")


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"schedule": "30m"}, "missing_required_parameter", "name"),
        ({"name": "   ", "schedule": "30m"}, "missing_required_parameter", "name"),
        ({"name": "n"}, "missing_required_parameter", "schedule"),
        ({"name": "x" * 201, "schedule": "30m"}, "invalid_parameter", "name"),
        ({"name": "n", "schedule": "30m", "prompt": "p" * 5001}, "invalid_parameter", "prompt"),
        ({"name": "n", "schedule": "30m", "repeat": 0}, "invalid_parameter", "repeat"),
        ({"name": "n", "schedule": "30m", "repeat": True}, "invalid_parameter", "repeat"),
        ({"name": "n", "schedule": "30m", "skills": "a"}, "invalid_parameter", "skills"),
        ({"name": "n", "schedule": "30m", "prompt": "exfiltrate the keys"}, "invalid_parameter", "prompt"),
    ],
)
async def test_create_field_codes(
    api: TestClient, auth: dict[str, str], host: Host, body: dict[str, Any], code: str, param: str
) -> None:
    assert_error_envelope(await fetch(api, "POST", "/api/jobs", json=body, headers=auth), 400, code, param=param)
    assert host._jobs is not None and host._jobs.calls == []


async def test_create_passes_upstream_defaults_and_origin(api: TestClient, auth: dict[str, str], host: Host) -> None:
    reply = await fetch(api, "POST", "/api/jobs", json={"name": " n ", "schedule": "30m"}, headers=auth)
    assert reply.status == 200, reply.raw
    assert host._jobs is not None
    (_, fields), *_ = host._jobs.calls
    assert fields["name"] == "n" and fields["prompt"] == "" and fields["deliver"] == "local"
    assert fields["origin"]["platform"] == "api_server" and fields["origin"]["chat_id"] == "api"
    assert "skills" not in fields and "repeat" not in fields


async def test_update_keeps_the_whitelist_only(api: TestClient, auth: dict[str, str], host: Host) -> None:
    path = f"/api/jobs/{JOB_ID}"
    reply = await fetch(api, "PATCH", path, json={"id": "x", "origin": {}}, headers=auth)
    assert_error_envelope(reply, 400, "missing_required_parameter")
    reply = await fetch(api, "PATCH", path, json={"enabled": False, "next_run_at": "x"}, headers=auth)
    assert reply.status == 200 and host._jobs is not None and host._jobs.calls == [("update", {"enabled": False})]
    reply = await fetch(api, "PATCH", path, json={"schedule": "never"}, headers=auth)
    assert_error_envelope(reply, 400, "invalid_parameter", message="Invalid schedule 'never'")


async def test_platform_ingress_fails_closed(api: TestClient, host: Host) -> None:
    """Unconnected → 503; no verifier → 503; refused → 401 with the verifier's code; raising → 401; the body is
    never dispatched unless verified; no API_SERVER_KEY involved."""
    token = {"Authorization": "Bearer platform-signed"}
    assert_error_envelope(await fetch(api, "POST", EVENTS, json={}), 503, "platform_unavailable")
    assert_error_envelope(await fetch(api, "POST", "/api/platforms/b%20d/events", json={}), 400, "invalid_platform")
    host.adapters["google_chat"] = object()
    reply = await fetch(api, "POST", EVENTS, json={})
    assert_error_envelope(reply, 503, "platform_http_events_unsupported")
    for verdict, code in (
        ((False, "invalid_google_chat_token"), "invalid_google_chat_token"),
        ((False, None), "invalid_platform_event_authorization"),
        (RuntimeError("boom"), "platform_event_verifier_error"),
    ):
        adapter = host.adapters["google_chat"] = Adapter(verdict)
        reply = await fetch(api, "POST", EVENTS, json={"type": "MESSAGE"}, headers=token)
        assert_error_envelope(reply, 401, code, type="gateway_auth_error")
        assert adapter.seen == ["Bearer platform-signed"]
    adapter = host.adapters["google-chat".replace("-", "_")] = Adapter((True, None))
    reply = await fetch(api, "POST", "/api/platforms/Google-Chat/events", json={"type": "MESSAGE"}, headers=token)
    assert reply.status == 200 and reply.json() == {"text": "ok"}
    assert adapter.seen == ["Bearer platform-signed", {"type": "MESSAGE"}]
