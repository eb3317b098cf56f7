"""Sessions kept per host on a shared store (issue 15, part 3; cluster/placement.py).

With the `hermes` runtime each gateway host keeps its sessions in Hermes' own `state.db`; everything else is in the
shared PostgreSQL store. Here two gateways in one process stand for two hosts: each app is the real API app with the
scripted runtime, the shared store, and a session store of its own (an SQLite file in its Hermes home, where Hermes
keeps `state.db`) — what `create_app` gets from the hermes runtime. A request bound to a session the other host keeps
answers 409 session_on_other_host (never an empty conversation under the old id); sessions of its own, new
sessions and keyed replays work on either; a stateless chat whose derived session the other host keeps gets a
session of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from hermes_api_plugin.cluster.placement import host_name
from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.gateway.server import ReferenceGateway, build_plugin_manager, runner_kwargs
from hermes_api_plugin.http.app import create_app
from hermes_api_plugin.runtimes import select_runtime
from hermes_api_plugin.store import SqliteStore
from hermes_api_plugin.store.factory import build_store
from tests.helpers import Reply, assert_error_envelope, fetch
from tests.live import write_home


async def host_app(aiohttp_client: Any, home: Path) -> TestClient:
    """The API app of one host: the shared store of its settings, its own session store."""
    settings = load_settings(home, environ={"HERMES_HOME": str(home)})
    gateway = ReferenceGateway(settings, select_runtime(settings), build_plugin_manager())
    local = SqliteStore(home / "state.sqlite3")
    await local.open()
    app = create_app(settings, gateway.runtime, build_store(settings), gateway.hooks, session_store=local.sessions)

    async def close_local(_: web.Application) -> None:
        await local.close()

    app.on_cleanup.append(close_local)
    server = TestServer(app)
    await server.start_server(**{k: v for k, v in runner_kwargs().items() if k != "handler_cancellation"})
    client: TestClient = await aiohttp_client(server)
    client.home = home  # type: ignore[attr-defined]
    return client


@pytest.fixture
async def hosts(postgres_url: str, aiohttp_client: Any, tmp_path: Path) -> AsyncIterator[tuple[TestClient, TestClient]]:
    env = {"API_SERVER_STORE_URL": postgres_url}
    a = await host_app(aiohttp_client, write_home(tmp_path / "host-a", env=env))
    b = await host_app(aiohttp_client, write_home(tmp_path / "host-b", env=env))
    yield a, b


def on_other_host(reply: Reply, home: Path) -> None:
    assert_error_envelope(reply, 409, "session_on_other_host", type="conflict_error", param="session_id")
    assert host_name(home) in reply.json()["error"]["message"], "the message names the host that keeps it"


async def test_a_session_another_host_keeps_is_409_on_every_route_that_would_use_it(
    hosts: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    a, b = hosts
    home_a: Path = a.home  # type: ignore[attr-defined]
    created = await fetch(a, "POST", "/api/sessions", json={"id": "s-a", "title": "On host A"}, headers=auth)
    assert created.status == 201, created.raw
    said = await fetch(a, "POST", "/api/sessions/s-a/chat", json={"message": "hello"}, headers=auth)
    assert said.status == 200, said.raw

    on_other_host(await fetch(b, "GET", "/api/sessions/s-a", headers=auth), home_a)
    on_other_host(await fetch(b, "GET", "/api/sessions/s-a/messages", headers=auth), home_a)
    on_other_host(await fetch(b, "POST", "/api/sessions/s-a/chat", json={"message": "hi"}, headers=auth), home_a)
    stream = await fetch(b, "POST", "/api/sessions/s-a/chat/stream", json={"message": "hi"}, headers=auth)
    on_other_host(stream, home_a)
    chat = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]}
    for stream_mode in (False, True):
        reply = await fetch(
            b,
            "POST",
            "/v1/chat/completions",
            json={**chat, "stream": stream_mode},
            headers={**auth, "X-Hermes-Session-Id": "s-a"},
        )
        on_other_host(reply, home_a)
    run = await fetch(b, "POST", "/v1/runs", json={"input": "hi", "session_id": "s-a"}, headers=auth)
    on_other_host(run, home_a)
    on_other_host(await fetch(b, "PATCH", "/api/sessions/s-a", json={"title": "x"}, headers=auth), home_a)
    on_other_host(await fetch(b, "DELETE", "/api/sessions/s-a", headers=auth), home_a)
    on_other_host(await fetch(b, "POST", "/api/sessions/s-a/fork", json={}, headers=auth), home_a)
    on_other_host(await fetch(b, "POST", "/api/sessions", json={"id": "s-a"}, headers=auth), home_a)

    # nothing of that reached host B's sessions, and host A's session is whole
    assert (await fetch(b, "GET", "/api/sessions", headers=auth)).json()["data"] == []
    messages = (await fetch(a, "GET", "/api/sessions/s-a/messages", headers=auth)).json()["data"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    # a session of its own, and unknown ids, work on B as ever
    assert (await fetch(b, "GET", "/api/sessions/s-unknown", headers=auth)).status == 404
    assert (await fetch(b, "POST", "/api/sessions", json={"id": "s-b"}, headers=auth)).status == 201
    assert (await fetch(b, "POST", "/api/sessions/s-b/chat", json={"message": "hello"}, headers=auth)).status == 200
    on_other_host(await fetch(a, "GET", "/api/sessions/s-b", headers=auth), b.home)  # type: ignore[attr-defined]


async def test_chains_and_session_keys_leading_to_another_hosts_session_are_409(
    hosts: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """A previous_response_id, a conversation name or an X-Hermes-Session-Key binding whose session host A keeps:
    409 on B, before anything is admitted; a keyed replay of A's turn on B needs no session and works."""
    a, b = hosts
    home_a: Path = a.home  # type: ignore[attr-defined]
    first = await fetch(
        a,
        "POST",
        "/v1/responses",
        json={"model": "hermes-agent", "input": "hello", "conversation": "conv-a"},
        headers={**auth, "Idempotency-Key": "key-a"},
    )
    assert first.status == 200, first.raw
    keyed = await fetch(
        a,
        "POST",
        "/v1/responses",
        json={"model": "hermes-agent", "input": "hi"},
        headers={**auth, "X-Hermes-Session-Key": "user-7"},
    )
    assert keyed.status == 200, keyed.raw
    response_id = first.json()["id"]
    for extra in ({"previous_response_id": response_id}, {"conversation": "conv-a"}):
        reply = await fetch(
            b, "POST", "/v1/responses", json={"model": "hermes-agent", "input": "more", **extra}, headers=auth
        )
        on_other_host(reply, home_a)
    bound = await fetch(
        b,
        "POST",
        "/v1/responses",
        json={"model": "hermes-agent", "input": "more"},
        headers={**auth, "X-Hermes-Session-Key": "user-7"},
    )
    on_other_host(bound, home_a)
    run = await fetch(b, "POST", "/v1/runs", json={"input": "more", "previous_response_id": response_id}, headers=auth)
    on_other_host(run, home_a)
    replay = await fetch(
        b,
        "POST",
        "/v1/responses",
        json={"model": "hermes-agent", "input": "hello", "conversation": "conv-a"},
        headers={**auth, "Idempotency-Key": "key-a"},
    )
    assert replay.status == 200 and replay.replayed and replay.json() == first.json()
    # the stored Response itself is shared: read on either host
    assert (await fetch(b, "GET", f"/v1/responses/{response_id}", headers=auth)).json() == first.json()


@pytest.mark.parametrize("earlier", [0, 1], ids=["opening", "history"])
async def test_a_stateless_chat_whose_derived_session_another_host_keeps_gets_a_session_of_its_own(
    hosts: tuple[TestClient, TestClient], auth: dict[str, str], earlier: int
) -> None:
    """Without X-Hermes-Session-Id a chat's session derives from its opening (or, for a history no host answered, from
    that history: a branch). The same messages on B are another conversation: a session of its own there, so A's id
    keeps naming A's conversation — X-Hermes-Session-Id with it on B is 409, never B's conversation."""
    a, b = hosts
    said = [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "An answer no host gave."}]
    chat = {"model": "hermes-agent", "messages": [*said[: 2 * earlier], {"role": "user", "content": "hello"}]}
    on_a = await fetch(a, "POST", "/v1/chat/completions", json=chat, headers=auth)
    on_b = await fetch(b, "POST", "/v1/chat/completions", json=chat, headers=auth)
    assert on_a.status == on_b.status == 200, (on_a.raw, on_b.raw)
    kept = on_a.headers["X-Hermes-Session-Id"]
    assert on_b.headers["X-Hermes-Session-Id"] != kept
    again = {"model": "hermes-agent", "messages": [{"role": "user", "content": "more"}]}
    reply = await fetch(b, "POST", "/v1/chat/completions", json=again, headers={**auth, "X-Hermes-Session-Id": kept})
    on_other_host(reply, a.home)  # type: ignore[attr-defined]
    same = await fetch(a, "POST", "/v1/chat/completions", json=again, headers={**auth, "X-Hermes-Session-Id": kept})
    assert same.status == 200, same.raw
