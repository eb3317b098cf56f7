"""The reference gateway on the PostgreSQL store (issue 15): `API_SERVER_STORE_URL` in the Hermes home's .env, a
real server (tests/pg.py). What a gateway stored there — a keyed chat completion, a stored Response, a session — is
served by the next gateway process on the same database (another Hermes home: nothing comes from a local file); the URL's password never appears in the log or in
`/health/detailed`; a database that cannot be reached at start-up is one log line and exit 1."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers import MODEL, live_request
from tests.live import LiveGateway, spawn_gateway, write_home
from tests.pg import PostgresServer

# slow (left out by ./test --fast): gateway processes started twice over a real database.
pytestmark = pytest.mark.slow

KEY = {"Idempotency-Key": "pg-chat-1"}


def chat(live: LiveGateway) -> dict[str, Any]:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hello over postgres"}]}
    reply = live_request(live, "POST", "/v1/chat/completions", body, headers=KEY)
    assert reply.status == 200, reply.raw
    return {"replayed": reply.replayed, "body": reply.json()}


def test_a_gateway_on_postgres_serves_what_the_previous_process_stored(
    gateway_factory: Callable[..., LiveGateway], postgres_server: PostgresServer, postgres_url: str
) -> None:
    env = {"API_SERVER_STORE_URL": postgres_url}
    first = gateway_factory(env=env)
    answered = chat(first)
    assert answered["replayed"] is False
    created = live_request(first, "POST", "/v1/responses", {"model": MODEL, "input": "use tool"})
    assert created.status == 200, created.raw
    stored = created.json()
    session = live_request(first, "POST", "/api/sessions", {"id": "pg-session", "title": "On PostgreSQL"})
    assert session.status == 201, session.raw

    health = live_request(first, "GET", "/health/detailed")
    assert health.status == 200
    assert health.json()["api_server"]["store"] == {"kind": "postgres", "durable": True, "reachable": True}
    assert health.json()["readiness"]["checks"]["store"] == {"status": "ok", "kind": "postgres"}
    capabilities = live_request(first, "GET", "/v1/capabilities").json()["features"]
    assert capabilities["store"] == {"kind": "postgres", "durable": True}
    assert capabilities["responses_durable"] is True and capabilities["idempotency"]["durable"] is True
    assert postgres_server.password not in health.raw.decode()
    assert first.stop() == 0

    second = gateway_factory(env=env)
    again = chat(second)
    assert again == {"replayed": True, "body": answered["body"]}  # the keyed answer, from the database
    got = live_request(second, "GET", f"/v1/responses/{stored['id']}")
    assert got.status == 200 and got.json() == stored
    info = live_request(second, "GET", "/api/sessions/pg-session")
    assert info.status == 200 and info.json()["session"]["title"] == "On PostgreSQL"
    # each process logs the turns it ran in its own home: both ran once, in the first process
    assert (len(first.executions()), len(second.executions())) == (2, 0)
    second.stop()
    for live in (first, second):
        assert not (live.home / "hermes_api.sqlite3").exists()
        assert postgres_server.password not in live.output()
        assert "store: PostgreSQL at 127.0.0.1:" in live.output()


def test_a_database_that_cannot_be_reached_stops_the_start_with_one_line(
    tmp_path: Any, postgres_server: PostgresServer, postgres_url: str
) -> None:
    wrong = postgres_url.replace(postgres_server.password, "not-the-password-4711")
    live = spawn_gateway(write_home(tmp_path / "home", env={"API_SERVER_STORE_URL": wrong}))
    try:
        live.proc.wait(60)
    except subprocess.TimeoutExpired:
        live.stop()
        pytest.fail(f"the gateway did not give up:\n{live.output()}")
    assert live.stop() == 1
    output = live.output()
    assert "[API Server] Not starting: the store is unavailable: cannot connect to PostgreSQL (127.0.0.1:" in output
    assert "password authentication failed" in output
    assert "not-the-password-4711" not in output and postgres_server.password not in output
    assert "Traceback" not in output, output
