"""The `hermes` runtime on a shared store (issue 15, part 3): two `hermes-api gateway` processes with the real Hermes
agent, each with a Hermes home of its own — its own `state.db`, as two hosts — on one PostgreSQL database
(`API_SERVER_STORE_URL`), both against the scripted provider.

- a session A keeps is refused on B with 409 `session_on_other_host` in the one error envelope — session chat (JSON
  and stream), `X-Hermes-Session-Id` chat (JSON, stream, keyed stream), a run on it, its messages, the session itself
  (get, create with its id, update, fork, delete) — never an empty conversation on B, and nothing runs there: the
  provider never sees B's messages;
- a stored Response A made is read on B (the Response and its input items); continuing it on B is refused the same
  way, since its session is Hermes' on A, and so is a session key A bound (Responses, runs);
- a stateless chat (no session header) whose derived session A keeps gets a session of its own on B, never A's id;
- a keyed retry on B of a turn A runs attaches: the same records byte for byte, one execution.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from tests.helpers import CHAT, Reply, assert_error_envelope, live_request
from tests.live import LiveGateway, start_gateway
from tests.pg import PostgresServer

from .conftest import HomeFactory
from .provider import ScriptedProvider, turn_requests

Hosts = tuple[LiveGateway, LiveGateway]


@pytest.fixture(scope="module")
def database(postgres_server: PostgresServer) -> Iterator[str]:
    """One database for the module's two gateways, dropped after they stopped."""
    url = postgres_server.new_database()
    yield url
    postgres_server.drop_database(url)


@pytest.fixture(scope="module")
def hosts(hermes_home: HomeFactory, database: str) -> Iterator[Hosts]:
    """Gateways A and B: `agent.runtime: hermes`, a Hermes home (state.db) each, one PostgreSQL database."""
    started: list[LiveGateway] = []
    try:
        for _ in range(2):
            home = hermes_home(env={"API_SERVER_STORE_URL": database}, agent={"runtime": "hermes"})
            started.append(start_gateway(home, timeout=60))
            store = live_request(started[-1], "GET", "/health/detailed").json()["api_server"]["store"]
            assert store["kind"] == "postgres", store
        yield started[0], started[1]
    finally:
        for live in started:
            code = live.stop()
            assert code == 0 and "Traceback" not in live.output(), live.output()[-3000:]


def unique(text: str) -> str:
    """A prompt of its own: the provider's requests are told apart by it."""
    return f"{text} ({secrets.token_hex(4)})"


def chat(text: str, *, stream: bool) -> dict[str, Any]:
    return {"model": "hermes-agent", "stream": stream, "messages": [{"role": "user", "content": text}]}


def assert_on_other_host(reply: Reply, keeper: LiveGateway) -> None:
    error = assert_error_envelope(reply, 409, "session_on_other_host", param="session_id", type="conflict_error")
    assert str(keeper.home.resolve()) in error["message"], "the message names the host that keeps the session"


def start_session(a: LiveGateway, how: str, opening: str) -> str:
    """A session on A with one exchange, titled after its opening (Hermes' titles are unique): created by POST
    /api/sessions, or by the first chat naming a new id."""
    if how == "created":
        created = live_request(a, "POST", "/api/sessions", {"title": opening})
        assert created.status == 201, created.raw
        session_id: str = created.json()["session"]["id"]
        first = live_request(a, "POST", f"/api/sessions/{session_id}/chat", {"message": opening}, timeout=90)
    else:
        session_id = "on-a-" + secrets.token_hex(6)
        first = live_request(
            a, "POST", CHAT, chat(opening, stream=False), headers={"X-Hermes-Session-Id": session_id}, timeout=90
        )
        assert live_request(a, "PATCH", f"/api/sessions/{session_id}", {"title": opening}).status == 200
    assert first.status == 200, first.raw
    return session_id


@pytest.mark.parametrize("how", ["created", "chat_header"])
def test_a_session_a_keeps_is_409_session_on_other_host_on_b_and_nothing_runs_there(
    hosts: Hosts, provider: ScriptedProvider, how: str
) -> None:
    a, b = hosts
    for live in hosts:
        assert "[API Server] Agent runtime: hermes" in live.output()
    opening = unique("[bench-zero] kept on A")
    session_id = start_session(a, how, opening)
    asked = unique("[bench-zero] asked on B")
    on_session = {"X-Hermes-Session-Id": session_id}
    refusals = {
        "session chat": live_request(b, "POST", f"/api/sessions/{session_id}/chat", {"message": asked}),
        "session chat stream": live_request(b, "POST", f"/api/sessions/{session_id}/chat/stream", {"message": asked}),
        "chat": live_request(b, "POST", CHAT, chat(asked, stream=False), headers=on_session),
        "chat stream": live_request(b, "POST", CHAT, chat(asked, stream=True), headers=on_session),
        "keyed chat stream": live_request(
            b, "POST", CHAT, chat(asked, stream=True), headers={**on_session, "Idempotency-Key": secrets.token_hex(8)}
        ),
        "run": live_request(b, "POST", "/v1/runs", {"input": asked, "session_id": session_id}),
        "messages": live_request(b, "GET", f"/api/sessions/{session_id}/messages"),
        "session": live_request(b, "GET", f"/api/sessions/{session_id}"),
        "create with its id": live_request(b, "POST", "/api/sessions", {"id": session_id}),
        "update": live_request(b, "PATCH", f"/api/sessions/{session_id}", {"title": "renamed on B"}),
        "fork": live_request(b, "POST", f"/api/sessions/{session_id}/fork", {}),
        "delete": live_request(b, "DELETE", f"/api/sessions/{session_id}"),
    }
    for what, reply in refusals.items():
        assert reply.status == 409, (what, reply.status, reply.raw[:300])
        assert_on_other_host(reply, a)
    assert turn_requests(provider, asked) == [], "nothing ran on B"
    listed = live_request(b, "GET", "/api/sessions?limit=100").json()["data"]
    assert session_id not in {s["id"] for s in listed}, "B made no empty session of that id"
    assert live_request(a, "GET", f"/api/sessions/{session_id}").json()["session"]["title"] == opening
    kept = live_request(a, "GET", f"/api/sessions/{session_id}/messages").json()["data"]
    said = " ".join(str(m["content"]) for m in kept)
    assert opening in said and asked not in said, "A's conversation is as A left it"
    assert len(turn_requests(provider, opening)) == 1


def test_a_stored_response_made_on_a_is_read_on_b_and_continued_only_on_a(
    hosts: Hosts, provider: ScriptedProvider
) -> None:
    a, b = hosts
    made = live_request(a, "POST", "/v1/responses", {"model": "hermes-agent", "input": unique("[bench-zero] on A")})
    assert made.status == 200, made.raw
    response = made.json()
    assert response["status"] == "completed"
    path = f"/v1/responses/{response['id']}"
    on_b, on_a = live_request(b, "GET", path), live_request(a, "GET", path)
    assert on_b.status == 200, on_b.raw
    assert on_b.json() == on_a.json()
    assert on_b.json()["output"] == response["output"]
    items_b, items_a = live_request(b, "GET", path + "/input_items"), live_request(a, "GET", path + "/input_items")
    assert items_b.status == 200 and items_b.json() == items_a.json()
    follow_up = {"input": unique("[bench-zero] continued"), "previous_response_id": response["id"]}
    assert_on_other_host(live_request(b, "POST", "/v1/responses", follow_up), a)
    assert turn_requests(provider, follow_up["input"]) == [], "nothing ran on B"
    again = live_request(a, "POST", "/v1/responses", follow_up)
    assert again.status == 200 and again.json()["status"] == "completed", again.raw


def test_a_session_key_bound_on_a_is_409_session_on_other_host_on_b(hosts: Hosts, provider: ScriptedProvider) -> None:
    a, b = hosts
    bound = {"X-Hermes-Session-Key": "key-" + secrets.token_hex(6)}
    made = live_request(a, "POST", "/v1/responses", {"input": unique("[bench-zero] bound on A")}, headers=bound)
    assert made.status == 200, made.raw
    asked = unique("[bench-zero] bound key on B")
    for path in ("/v1/responses", "/v1/runs"):
        assert_on_other_host(live_request(b, "POST", path, {"input": asked}, headers=bound), a)
    assert turn_requests(provider, asked) == [], "nothing ran on B"


@pytest.mark.parametrize("earlier", [0, 1], ids=["opening", "history"])
def test_a_stateless_chat_whose_derived_session_a_keeps_gets_a_session_of_its_own_on_b(
    hosts: Hosts, provider: ScriptedProvider, earlier: int
) -> None:
    """Without X-Hermes-Session-Id a chat's session derives from what the client sent: from its opening, or for a
    history no host answered, from that whole history (a branch). The same messages on B are another conversation:
    it runs on a session of its own, so A's session id keeps naming A's conversation — on B a request for it is 409,
    never B's conversation under A's id."""
    a, b = hosts
    said = [("user", unique("[bench-zero] the same opening")), ("assistant", "An answer no host gave.")][: 2 * earlier]
    last = unique("[bench-zero] the same message")
    body = {"model": "hermes-agent", "messages": [{"role": r, "content": c} for r, c in [*said, ("user", last)]]}
    on_a, on_b = live_request(a, "POST", CHAT, body), live_request(b, "POST", CHAT, body)
    assert on_a.status == on_b.status == 200, (on_a.raw, on_b.raw)
    kept = on_a.headers["X-Hermes-Session-Id"]
    assert on_b.headers["X-Hermes-Session-Id"] != kept
    asked = unique("[bench-zero] A's session on B")
    refused = live_request(b, "POST", CHAT, chat(asked, stream=False), headers={"X-Hermes-Session-Id": kept})
    assert_on_other_host(refused, a)
    assert turn_requests(provider, asked) == [], "nothing ran on B"
    assert len(turn_requests(provider, last)) == 2, "one turn on each host"


async def read_until(resp: aiohttp.ClientResponse, raw: bytearray, marker: bytes) -> None:
    while marker not in raw:
        piece = await resp.content.readany()
        assert piece, bytes(raw[-500:])
        raw += piece


async def read_to_end(resp: aiohttp.ClientResponse, raw: bytearray) -> float:
    """Read the rest of the stream into `raw`; the time.monotonic() of its end."""
    raw += await resp.read()
    return time.monotonic()


async def test_a_keyed_retry_on_b_of_a_turn_a_runs_attaches_byte_for_byte(
    hosts: Hosts, provider: ScriptedProvider
) -> None:
    """The `[bench]` scenario streams 10 reasoning then 200 answer deltas 5 ms apart: B's retry arrives mid-turn."""
    a, b = hosts
    text = unique("[bench] attach across hosts")
    key = {"Idempotency-Key": "k-" + secrets.token_hex(8)}
    first, retry = bytearray(), bytearray()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as http:
        async with http.post(a.url + CHAT, json=chat(text, stream=True), headers={**a.headers, **key}) as on_a:
            await read_until(on_a, first, b"reasoning_content")
            async with http.post(b.url + CHAT, json=chat(text, stream=True), headers={**b.headers, **key}) as on_b:
                attached_at = time.monotonic()
                a_ended, _ = await asyncio.gather(read_to_end(on_a, first), read_to_end(on_b, retry))
                one, two = (
                    Reply(on_a.status, on_a.headers, bytes(first)),
                    Reply(on_b.status, on_b.headers, bytes(retry)),
                )
    assert one.status == two.status == 200
    assert attached_at < a_ended, "B attached while A still ran the turn"
    assert two.replayed and not one.replayed
    assert two.run_id == one.run_id and two.headers["X-Hermes-Session-Id"] == one.headers["X-Hermes-Session-Id"]
    assert two.records == one.records, "byte for byte: the same ids, reasoning and content"
    assert two.chat_text()[0].startswith("w0 w1 ") and one.chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert len(turn_requests(provider, text)) == 1, "one execution"
