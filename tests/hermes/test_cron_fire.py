"""WIRE §14.3 `POST /api/cron/fire` inside the real `hermes gateway run` (hermes-agent 0.19, plugin enabled): the
managed-cron fire webhook, authenticated by hermes-agent's own fire-token verifier
(`plugins.cron_providers.chronos.verify`) with the `cron.chronos` settings of config.yaml — here an inline PEM public
key as `nas_jwks_url`, an audience and the portal as issuer — and run by Hermes' own scheduler provider
(`fire_due`, the built-in one).

- a token signed with the configured key, for this audience and issuer, with `purpose: cron_fire` → 202 at once,
  and the job made through `/api/jobs` really runs: the scripted provider receives its prompt and Hermes' store
  records the run (`last_run_at`, `last_status`);
- no token, `API_SERVER_KEY` as the bearer, a token of another audience, issuer, key or algorithm, an expired one,
  one without the purpose claim or with another purpose → 401 `invalid_fire_token` in the §1.7 envelope, and the job
  never runs; a missing `job_id` → 400; the gateway stays healthy and reports the `cron_fire` capability.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.helpers import wait_for
from tests.live import TEST_KEY

from .conftest import HomeFactory
from .provider import ScriptedProvider
from .support import PLUGINS, HermesGateway, call, listening, start_gateway

AUDIENCE = "agent:test-instance"
ISSUER = "https://portal.example.test"
PURPOSE = "cron_fire"  # the claim hermes-agent's verifier requires, so that no other agent token can fire a job


def _rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass(frozen=True)
class Nas:
    """The signer standing in for NAS: its private key, and the public key the agent is configured with."""

    key: rsa.RSAPrivateKey

    @property
    def public_pem(self) -> str:
        public = self.key.public_key()
        return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()

    def token(self, *, key: Any = None, algorithm: str = "RS256", drop: tuple[str, ...] = (), **claims: Any) -> str:
        now = int(time.time())
        body = {"aud": AUDIENCE, "iss": ISSUER, "iat": now, "exp": now + 300, "purpose": PURPOSE, **claims}
        for name in drop:
            body.pop(name)
        return jwt.encode(body, self.key if key is None else key, algorithm=algorithm)


@pytest.fixture(scope="module")
def nas() -> Nas:
    return Nas(_rsa_key())


@pytest.fixture(scope="module")
def gateway(hermes_home: HomeFactory, nas: Nas) -> Iterator[HermesGateway]:
    chronos = {"expected_audience": AUDIENCE, "nas_jwks_url": nas.public_pem, "portal_url": ISSUER}
    live = start_gateway(hermes_home(env={"API_SERVER_PORT": "0"}, plugins=PLUGINS, cron={"chronos": chronos}))
    try:
        listening(live)
        yield live
    finally:
        live.stop()


def fire(gateway: HermesGateway, authorization: str | None, body: Any) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.port}/api/cron/fire", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def new_job(gateway: HermesGateway, marker: str) -> str:
    """A job through /api/jobs, not due for two hours: only a fire runs it."""
    prompt = f"Cron check {marker}: report the status."
    status, body = call(gateway, "POST", "/api/jobs", {"name": marker, "schedule": "every 2h", "prompt": prompt})
    assert status == 200, body
    assert body["job"]["last_run_at"] is None
    job_id: str = body["job"]["id"]
    return job_id


def job(gateway: HermesGateway, job_id: str) -> dict[str, Any]:
    status, body = call(gateway, "GET", f"/api/jobs/{job_id}")
    assert status == 200, body
    found: dict[str, Any] = body["job"]
    return found


def assert_refused(status: int, body: dict[str, Any], token: str) -> None:
    assert status == 401, body
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["type"] == "gateway_auth_error" and body["error"]["code"] == "invalid_fire_token"
    assert not token or token not in json.dumps(body)


def test_a_valid_fire_runs_the_job_and_nothing_else_does(
    gateway: HermesGateway, nas: Nas, provider: ScriptedProvider
) -> None:
    """The refusals first, on one job; then a valid fire of another job, which runs; by the time it has run, the
    refused job would have too had any refusal let it through."""
    refused_marker, fired_marker = f"refused-{uuid.uuid4().hex[:8]}", f"fired-{uuid.uuid4().hex[:8]}"
    refused_id, fired_id = new_job(gateway, refused_marker), new_job(gateway, fired_marker)
    hs256_secret = "a-shared-secret-that-nas-never-uses-0123456789"
    refusals = {
        "no token": None,
        "api server key": f"Bearer {TEST_KEY}",
        "not bearer": f"Basic {nas.token()}",
        "other audience": f"Bearer {nas.token(aud='agent:another-instance')}",
        "other issuer": f"Bearer {nas.token(iss='https://elsewhere.example.test')}",
        "no purpose": f"Bearer {nas.token(drop=('purpose',))}",
        "other purpose": f"Bearer {nas.token(purpose='agent')}",
        "expired": f"Bearer {nas.token(exp=int(time.time()) - 3600)}",
        "other key": f"Bearer {nas.token(key=_rsa_key())}",
        "symmetric": f"Bearer {nas.token(key=hs256_secret, algorithm='HS256')}",
    }
    for case, authorization in refusals.items():
        status, body = fire(gateway, authorization, {"job_id": refused_id})
        token = (authorization or "").partition(" ")[2]
        assert_refused(status, body, token)
        assert token == "" or token not in gateway.output(), case  # refusals are logged without the token

    started = time.monotonic()
    status, body = fire(gateway, f"Bearer {nas.token()}", {"job_id": fired_id})
    assert status == 202 and body == {"status": "accepted", "job_id": fired_id}, body
    assert time.monotonic() - started < 10  # answered before the run (an agent turn), not after it

    ran = wait_for(lambda: job(gateway, fired_id), 180, until=lambda j: j.get("last_run_at"), what="the fired run")
    assert ran["last_status"] == "ok", ran
    assert provider.calls(marker=fired_marker), "the fired job's prompt never reached the model"
    assert not provider.calls(marker=refused_marker)
    assert job(gateway, refused_id)["last_run_at"] is None
    assert "cron fire refused: invalid fire token" in gateway.output()


def test_a_fire_without_a_job_id_is_400(gateway: HermesGateway, nas: Nas) -> None:
    for body, code in (({}, "missing_required_parameter"), ({"job_id": 7}, "invalid_parameter")):
        status, reply = fire(gateway, f"Bearer {nas.token()}", body)
        assert status == 400, reply
        assert reply["error"]["code"] == code and reply["error"]["param"] == "job_id"


def test_the_gateway_is_healthy_after_and_reports_the_capability(gateway: HermesGateway) -> None:
    assert gateway.proc.poll() is None
    assert gateway.get("/health")[0] == 200
    status, caps = gateway.get("/v1/capabilities")
    assert status == 200
    assert caps["features"]["cron_fire"] is True
    assert caps["endpoints"]["cron_fire"] == {"method": "POST", "path": "/api/cron/fire"}
    status, doc = gateway.get("/openapi.json")
    operation = doc["paths"]["/api/cron/fire"]["post"]
    assert "security" not in operation and "202" in operation["responses"]  # its own token, not API_SERVER_KEY
