"""WIRE §14.3 `POST /api/cron/fire` on the bundled reference gateway:

- without a host (the scripted runtime) it answers 501 `not_supported_by_host` whatever the Authorization (it never
  asks for API_SERVER_KEY), is not documented, and `cron_fire` is false in the capabilities;
- with a stand-in host, the route logic in its order: the token (401 `invalid_fire_token` — absent, refused,
  API_SERVER_KEY, a verifier that raises — with the token in neither reply nor log, and nothing fired), the drain
  (503), cron available (503), the body (400 on `job_id`), then 202 at once while the run goes on; the drain waits
  for that run and refuses new fires meanwhile. The real verifier and scheduler: tests/hermes/test_cron_fire.py.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.http.app import shutdown_apps
from hermes_api_plugin.http.app_keys import BACKGROUND, RUNTIME, TURNS
from tests.helpers import JOB_ID, assert_error_envelope, fetch, wait_for_async
from tests.live import TEST_KEY

FIRE = "/api/cron/fire"
GOOD = "signed-fire-token-0123456789"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_fire_answers_501_without_a_host_and_never_asks_for_the_key(api: TestClient) -> None:
    for headers in ({}, bearer(GOOD), bearer(TEST_KEY)):
        reply = await fetch(api, "POST", FIRE, json={"job_id": JOB_ID}, headers=headers)
        assert_error_envelope(reply, 501, "not_supported_by_host", type="server_error")


async def test_fire_is_neither_documented_nor_a_feature_without_a_host(api: TestClient, auth: dict[str, str]) -> None:
    caps: dict[str, Any] = (await fetch(api, "GET", "/v1/capabilities", headers=auth)).json()
    doc: dict[str, Any] = (await fetch(api, "GET", "/openapi.json", headers=auth)).json()
    assert caps["features"]["cron_fire"] is False and "cron_fire" not in caps["endpoints"]
    assert FIRE not in doc["paths"]


class Jobs:
    """A stand-in cron store whose runs wait for `release` (set by default)."""

    def __init__(self) -> None:
        self.fired: list[str] = []
        self.finished: list[str] = []
        self.release = asyncio.Event()
        self.release.set()

    async def fire(self, job_id: str) -> bool:
        self.fired.append(job_id)
        await self.release.wait()
        self.finished.append(job_id)
        return True


class Host:
    """A stand-in host: `GOOD` is the only valid fire token; `failure` makes the verifier raise instead."""

    def __init__(self) -> None:
        self.cron: Jobs | None = Jobs()
        self.seen: list[str] = []
        self.failure: Exception | None = None

    async def jobs(self) -> Jobs | None:
        return self.cron

    async def fire_token_valid(self, token: str) -> bool:
        self.seen.append(token)
        if self.failure is not None:
            raise self.failure
        return token == GOOD

    def multiplexing(self) -> bool:
        return False  # one profile: http/profiles.py enters no scope


@pytest.fixture
def host(api: TestClient, monkeypatch: pytest.MonkeyPatch) -> Host:
    stand_in = Host()
    monkeypatch.setattr(api.server.app[RUNTIME], "host_data", stand_in, raising=False)
    return stand_in


def fired(host: Host) -> list[str]:
    assert host.cron is not None
    return host.cron.fired


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Basic " + GOOD, "Bearer not-the-fire-token", f"Bearer {TEST_KEY}"],
    ids=["absent", "empty", "not-bearer", "refused", "api-server-key"],
)
async def test_an_invalid_fire_token_is_401_and_fires_nothing(
    api: TestClient, host: Host, caplog: pytest.LogCaptureFixture, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    with caplog.at_level(logging.INFO, logger="hermes_api_plugin"):
        reply = await fetch(api, "POST", FIRE, json={"job_id": JOB_ID}, headers=headers)
    error = assert_error_envelope(reply, 401, "invalid_fire_token", type="gateway_auth_error", param=None)
    assert fired(host) == []
    token = (authorization or "").partition(" ")[2]
    if token:
        assert token not in error["message"] and token not in caplog.text
    assert "cron fire refused: invalid fire token" in caplog.text
    # only a bearer token reaches the verifier; API_SERVER_KEY is just another token it refuses
    assert host.seen == ([token] if authorization and authorization.startswith("Bearer ") and token else [])


async def test_a_verifier_that_raises_refuses_without_logging_the_token(
    api: TestClient, host: Host, caplog: pytest.LogCaptureFixture
) -> None:
    host.failure = RuntimeError(f"cannot decode {GOOD}")
    with caplog.at_level(logging.INFO, logger="hermes_api_plugin"):
        reply = await fetch(api, "POST", FIRE, json={"job_id": JOB_ID}, headers=bearer(GOOD))
    assert_error_envelope(reply, 401, "invalid_fire_token", type="gateway_auth_error")
    assert fired(host) == [] and host.seen == [GOOD]
    assert "verifier failed (RuntimeError" in caplog.text and GOOD not in caplog.text


async def test_a_scheme_in_any_case_is_bearer(api: TestClient, host: Host) -> None:
    reply = await fetch(api, "POST", FIRE, json={"job_id": JOB_ID}, headers={"Authorization": f"bearer  {GOOD} "})
    assert reply.status == 202 and host.seen == [GOOD]


async def test_cron_unavailable_is_503_after_the_token(api: TestClient, host: Host) -> None:
    host.cron = None
    assert_error_envelope(await fetch(api, "POST", FIRE, json={"job_id": JOB_ID}), 401, "invalid_fire_token")
    reply = await fetch(api, "POST", FIRE, json={"job_id": JOB_ID}, headers=bearer(GOOD))
    assert_error_envelope(reply, 503, "cron_unavailable", type="server_error")
    assert reply.headers.get("Retry-After") == "1"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "missing_required_parameter"),
        ({"job_id": None}, "missing_required_parameter"),
        ({"job_id": ""}, "invalid_parameter"),
        ({"job_id": 123}, "invalid_parameter"),
        ({"job_id": [JOB_ID]}, "invalid_parameter"),
    ],
)
async def test_a_missing_or_non_string_job_id_is_400(
    api: TestClient, host: Host, body: dict[str, Any], code: str
) -> None:
    reply = await fetch(api, "POST", FIRE, json=body, headers=bearer(GOOD))
    assert_error_envelope(reply, 400, code, param="job_id", type="invalid_request_error")
    assert fired(host) == []


async def test_a_body_that_is_not_a_json_object_is_400(api: TestClient, host: Host) -> None:
    for raw in (b"", b"job_id=x", b'["x"]'):
        reply = await fetch(api, "POST", FIRE, data=raw, headers=bearer(GOOD))
        assert_error_envelope(reply, 400, "invalid_json")
    assert fired(host) == []


async def test_a_valid_fire_is_202_at_once_and_the_run_goes_on(api: TestClient, host: Host) -> None:
    """The reply does not wait for the run (the stand-in's run is held); the run is background work until it ends."""
    assert host.cron is not None
    host.cron.release.clear()
    reply = await fetch(api, "POST", FIRE, json={"job_id": JOB_ID, "extra": 1}, headers=bearer(GOOD))
    assert reply.status == 202, reply.raw
    assert reply.json() == {"status": "accepted", "job_id": JOB_ID}
    background = api.server.app[BACKGROUND]
    await wait_for_async(lambda: fired(host) == [JOB_ID], what="the run to start")
    assert background.active == 1 and host.cron.finished == []
    host.cron.release.set()
    await wait_for_async(lambda: background.active == 0, what="the run to end")
    assert host.cron.finished == [JOB_ID]


async def test_the_drain_waits_for_a_running_fire_and_refuses_new_ones(api: TestClient, host: Host) -> None:
    """§1.8 with the fire's run: shutdown refuses new fires (503 after the token check) and awaits the run before it
    closes the store."""
    assert host.cron is not None
    host.cron.release.clear()
    assert (await fetch(api, "POST", FIRE, json={"job_id": JOB_ID}, headers=bearer(GOOD))).status == 202
    await wait_for_async(lambda: fired(host) == [JOB_ID], what="the run to start")
    app = api.server.app
    drained = asyncio.ensure_future(shutdown_apps([app]))
    await wait_for_async(lambda: app[TURNS].draining and app[BACKGROUND].closed, what="the drain to begin")
    reply = await fetch(api, "POST", FIRE, json={"job_id": "ffffffffffff"}, headers=bearer(GOOD))
    assert_error_envelope(reply, 503, "gateway_draining", type="server_error")
    assert_error_envelope(await fetch(api, "POST", FIRE, json={"job_id": JOB_ID}), 401, "invalid_fire_token")
    done, _ = await asyncio.wait({drained}, timeout=0.2)  # time enough to end, which it must not: the run is held
    assert not done and host.cron.finished == []
    host.cron.release.set()
    await asyncio.wait_for(drained, 10)
    assert host.cron.finished == [JOB_ID] and fired(host) == [JOB_ID]
