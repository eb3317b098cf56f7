"""Two gateways on one PostgreSQL database, in one process (issue 15, part 3): each app is the real API app built
through the plugin's startup hook with its own boot id, lease, turn registry and feed listener; they meet only in
the database. Nothing is mocked; the live process tests (kill -9, leases running out) are in
tests/cluster/test_remote_turns_live.py.

- a keyed retry on B while A runs the turn attaches to A's journal: the same records byte for byte, the same ids;
- keyed requests spread over both execute once;
- a run started on A is read, followed (Last-Event-ID) and stopped from B; A's turn ends cancelled;
- a Response A runs is read and resumed on B; previous_response_id and conversations resolve on either;
- with SQLite a turn another live process runs cannot be followed: 503 running_elsewhere, then the replay.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp.test_utils import TestClient

from hermes_api_plugin.http.app_keys import LEASES, RECOVERY, SCOPE, STORE, TURNS
from tests.helpers import (
    RUNNING_MARKER,
    Reply,
    assert_error_envelope,
    fetch,
    kept_record,
    metric_samples,
    metric_value,
    read_reply,
    read_until,
    serve_app,
    wait_for_async,
)
from tests.live import SCRIPTS, executions, write_home
from tests.pg import PostgresServer

CHAT, RESPONSES = "/v1/chat/completions", "/v1/responses"
SLOW_ANSWER = "Slow and steady wins the race, one chunk at a time."


def replica_home(root: Path, store_url: str | None, *, seconds: float = 1.0) -> Path:
    """A Hermes home on the shared store whose script answers "slow …" with reasoning, a pause and a paced answer."""
    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    script = yaml.safe_load((SCRIPTS / "chat.yaml").read_text(encoding="utf-8"))
    script["turns"][:0] = [
        {
            "match": "slow",
            "steps": [
                {"reasoning": "Taking my time."},
                {"sleep": seconds},
                {"text": SLOW_ANSWER},
                {"usage": {"prompt_tokens": 5, "completion_tokens": 9}},
            ],
        },
        {"match": "long", "steps": [{"reasoning": "A long one."}, {"sleep": 600}, {"text": "never"}]},
        {"match": "restart", "steps": [{"reasoning": "Before the restart."}, {"sleep": 4}, {"text": "After it."}]},
    ]
    script["options"] = {"chunk_chars": 6, "delay_ms": 20, "execution_log": str(home / "executions.jsonl")}
    path = root / "script.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    env = {"API_SERVER_STORE_URL": store_url} if store_url else None
    return write_home(home, env=env, script=None, config={"agent": {"script": str(path)}})


async def pair(aiohttp_client: Any, tmp_path: Path, store_url: str | None) -> tuple[TestClient, TestClient]:
    a = await serve_app(aiohttp_client, replica_home(tmp_path / "a", store_url))
    b = await serve_app(aiohttp_client, replica_home(tmp_path / "b", store_url))
    return a, b


@pytest.fixture
async def replicas(postgres_url: str, aiohttp_client: Any, tmp_path: Path) -> tuple[TestClient, TestClient]:
    # postgres_url first: its database is dropped after the apps' clean shutdown, not under it
    return await pair(aiohttp_client, tmp_path, postgres_url)


def key() -> str:
    return "k-" + secrets.token_hex(8)


def body(surface: str, text: str, *, stream: bool, **extra: Any) -> dict[str, Any]:
    if surface == "chat":
        return {"model": "hermes-agent", "stream": stream, "messages": [{"role": "user", "content": text}], **extra}
    return {"model": "hermes-agent", "stream": stream, "input": text, **extra}


def executed(clients: tuple[TestClient, ...], text: str) -> int:
    return sum(1 for c in clients for e in executions(c.home) if text in json.dumps(e["input"]))  # type: ignore[attr-defined]


@pytest.mark.parametrize("surface", ["chat", "responses"])
async def test_a_keyed_stream_retry_on_b_attaches_to_the_turn_a_runs(
    replicas: tuple[TestClient, TestClient], auth: dict[str, str], surface: str
) -> None:
    """§5.3 attach across gateways: B answers at once while A still runs the turn, with A's journal from its start and
    then live — every record byte for byte what A's own client got (ids, sequence numbers); one execution."""
    a, b = replicas
    k, text = key(), f"slow {secrets.token_hex(4)}"
    headers = {**auth, "Idempotency-Key": k}
    path = CHAT if surface == "chat" else RESPONSES
    async with a.post(path, json=body(surface, text, stream=True), headers=headers) as first:
        assert first.status == 200
        raw = await read_until(first, RUNNING_MARKER[surface])
        run_id = first.headers["X-Hermes-Run-Id"]
        async with b.post(path, json=body(surface, text, stream=True), headers=headers) as retry:
            assert retry.status == 200
            assert a.server.app[TURNS].get(run_id) is not None, "B answered while A's turn still ran: an attach"
            retry_reply = await read_reply(retry)
        raw += await asyncio.wait_for(first.read(), 30)
    first_reply = Reply(first.status, first.headers, raw)
    assert retry_reply.replayed and retry_reply.run_id == run_id
    assert retry_reply.headers["X-Hermes-Session-Id"] == first_reply.headers["X-Hermes-Session-Id"]
    assert retry_reply.answer() == first_reply.answer()
    assert retry_reply.answer_text(surface) == SLOW_ANSWER
    assert executed(replicas, text) == 1
    assert b.server.app[TURNS].get(run_id) is None, "B never ran it"
    async with b.get("/metrics", headers=auth) as scrape:  # issue 24: B's attach to A's turn, timed; B's admission
        samples = metric_samples(await scrape.text())
    assert metric_value(samples, "hermes_api_remote_attach_duration_seconds_count") == 1
    assert metric_value(samples, "hermes_api_admissions_total", outcome="attach", keyed="true") == 1


@pytest.mark.parametrize("surface", ["chat", "responses"])
async def test_keyed_requests_spread_over_both_gateways_execute_once(
    replicas: tuple[TestClient, TestClient], auth: dict[str, str], surface: str
) -> None:
    """Ten identical keyed requests on each gateway at once: one admission, one execution, twenty equal answers."""
    a, b = replicas
    k, text = key(), f"use tool {secrets.token_hex(4)}"
    path = CHAT if surface == "chat" else RESPONSES
    sends = [
        fetch(client, "POST", path, json=body(surface, text, stream=False), headers={**auth, "Idempotency-Key": k})
        for client in (a, b) * 10
    ]
    replies = await asyncio.gather(*sends)
    assert [r.status for r in replies] == [200] * 20, [r.raw[:200] for r in replies if r.status != 200]
    assert executed(replicas, text) == 1
    assert len({json.dumps(r.json(), sort_keys=True) for r in replies}) == 1
    assert len({r.run_id for r in replies}) == 1
    assert sorted(r.replayed for r in replies) == [False] + [True] * 19


async def test_a_run_started_on_a_is_read_followed_and_stopped_from_b(
    replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """§6.2-§6.4 on the gateway that does not run it: GET, /events (Last-Event-ID resumes), stop (through the
    store's feed); A's turn settles cancelled and both gateways say so."""
    a, b = replicas
    created = await fetch(a, "POST", "/v1/runs", json={"input": "long run"}, headers=auth)
    assert created.status == 202, created.raw
    run_id = created.json()["run_id"]
    turn = a.server.app[TURNS].get(run_id)
    assert turn is not None
    await wait_for_async(lambda: len(turn.journal.events) >= 2, what="the run's reasoning")
    await asyncio.sleep(0.3)  # the group commit of its first events

    got = await fetch(b, "GET", f"/v1/runs/{run_id}", headers=auth)
    assert got.status == 200, got.raw
    run = got.json()
    assert (run["run_id"], run["status"], run["last_event"]) == (run_id, "running", "reasoning.delta")
    assert run["session_id"] == turn.request.session_id

    async with b.get(f"/v1/runs/{run_id}/events", headers=auth) as events:
        raw = await read_until(events, b"reasoning.delta")
        stopped = await fetch(b, "POST", f"/v1/runs/{run_id}/stop", headers=auth)
        assert stopped.status == 200 and stopped.json() == {"run_id": run_id, "status": "stopping"}
        rest = await read_reply(events)
    stream = Reply(200, events.headers, raw + rest.raw)
    names = [e["event"] for e in stream.events]
    assert names[0] == "reasoning.delta" and names[-1] == "run.cancelled", names
    assert [r.id for r in stream.records] == [str(i) for i in range(1, len(names) + 1)]
    assert (await asyncio.wait_for(turn.wait(), 10)).status.value == "cancelled"

    after = await fetch(b, "GET", f"/v1/runs/{run_id}/events", headers={**auth, "Last-Event-ID": "1"})
    assert [r.id for r in after.records] == [str(i) for i in range(2, len(names) + 1)]
    assert after.events == stream.events[1:], "a resume on B continues A's numbering"
    for client in (a, b):
        settled = await fetch(client, "GET", f"/v1/runs/{run_id}", headers=auth)
        assert settled.json()["status"] == "cancelled"
        stop_again = await fetch(client, "POST", f"/v1/runs/{run_id}/stop", headers=auth)
        assert stop_again.json() == {"run_id": run_id, "status": "cancelled"}
    missing = await fetch(b, "GET", "/v1/runs/run_0123456789abcdef0123456789abcdef", headers=auth)
    assert_error_envelope(missing, 404, "run_not_found")


async def test_a_response_a_runs_is_read_resumed_and_continued_on_b(
    replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """Stored Responses are shared: GET on B while A runs it shows it in progress, `?stream=true&starting_after=`
    follows A's journal to its end with A's sequence numbers; previous_response_id and conversation names work on
    either gateway."""
    a, b = replicas
    text = f"slow {secrets.token_hex(4)}"
    async with a.post(
        RESPONSES, json=body("responses", text, stream=True, conversation="conv-1"), headers=auth
    ) as first:
        raw = await read_until(first, RUNNING_MARKER["responses"])
        response_id = Reply(200, first.headers, raw[: raw.rfind(b"\n\n") + 2]).events[0]["response"]["id"]
        await asyncio.sleep(0.3)
        got = await fetch(b, "GET", f"{RESPONSES}/{response_id}", headers=auth)
        assert got.status == 200 and got.json()["status"] == "in_progress"
        resumed = await fetch(b, "GET", f"{RESPONSES}/{response_id}?stream=true&starting_after=1", headers=auth)
        raw += await asyncio.wait_for(first.read(), 30)
    original = Reply(200, first.headers, raw)
    assert resumed.events == [e for e in original.events if e["sequence_number"] > 1]
    assert resumed.events[-1]["type"] == "response.completed"
    settled = await fetch(b, "GET", f"{RESPONSES}/{response_id}", headers=auth)
    assert settled.json() == original.events[-1]["response"]
    chained = await fetch(
        b,
        "POST",
        RESPONSES,
        json=body("responses", "hello again", stream=False, previous_response_id=response_id),
        headers=auth,
    )
    assert chained.status == 200, chained.raw
    assert chained.json()["previous_response_id"] == response_id
    named = await fetch(
        a, "POST", RESPONSES, json=body("responses", "and again", stream=False, conversation="conv-1"), headers=auth
    )
    assert named.status == 200, named.raw
    assert named.json()["previous_response_id"] == response_id
    assert executed(replicas, "hello again") == 1 and executed(replicas, text) == 1


async def test_leases_of_both_gateways_are_alive_and_a_clean_shutdown_releases_one(
    replicas: tuple[TestClient, TestClient],
) -> None:
    a, b = replicas
    leases = a.server.app[LEASES]
    owners = {lease.owner for lease in await leases.store.leases()}
    assert owners == {a.server.app[LEASES].owner, b.server.app[LEASES].owner}
    assert await leases.owner_alive(b.server.app[LEASES].owner)
    await b.close()
    assert not await leases.owner_alive(b.server.app[LEASES].owner)


async def test_with_sqlite_a_turn_another_live_process_runs_answers_running_elsewhere(
    aiohttp_client: Any, tmp_path: Path, auth: dict[str, str]
) -> None:
    """Two gateways on one SQLite file: B cannot follow A's journal (no feed, and no polling), so a keyed retry while A
    runs the turn gets 503 running_elsewhere with Retry-After — never unknown_execution, never a second execution —
    and once A's turn settled, the replay."""
    root = tmp_path / "shared"
    a = await serve_app(aiohttp_client, replica_home(root, None))
    b = await serve_app(aiohttp_client, root / "home")  # the same Hermes home: the same SQLite file, another process
    k, text = key(), f"slow {secrets.token_hex(4)}"
    headers = {**auth, "Idempotency-Key": k}
    async with a.post(CHAT, json=body("chat", text, stream=False), headers=headers) as first:
        await wait_for_async(lambda: a.server.app[TURNS].active == 1, what="A's turn")
        busy = await fetch(b, "POST", CHAT, json=body("chat", text, stream=False), headers=headers)
        assert_error_envelope(busy, 503, "running_elsewhere", type="server_error")
        assert busy.headers["Retry-After"] == "2"
        answer = await read_reply(first)
    again = await fetch(b, "POST", CHAT, json=body("chat", text, stream=False), headers=headers)
    assert again.status == 200 and again.replayed and again.json() == answer.json()
    assert executed((a,), text) == 1


async def test_a_settlement_the_store_missed_is_stored_by_the_owners_next_sweep(
    aiohttp_client: Any, tmp_path: Path, auth: dict[str, str]
) -> None:
    """The store fails just as a keyed turn settles: its admission would stay running — to other gateways a live
    owner's running turn, followed for as long as this gateway lives. The owner's next sweep (after a lease renewal)
    stores the settlement again: the admission settles, the journal gets its terminal record, a retry replays."""
    app_client = await serve_app(aiohttp_client, replica_home(tmp_path / "one", None))
    app = app_client.server.app
    store = app[STORE]
    k, text = key(), f"slow {secrets.token_hex(4)}"
    async with app_client.post(
        CHAT, json=body("chat", text, stream=False), headers={**auth, "Idempotency-Key": k}
    ) as first:
        await wait_for_async(lambda: app[TURNS].active == 1, what="the turn")
        run_id = first.headers["X-Hermes-Run-Id"]
        turn = app[TURNS].get(run_id)
        assert turn is not None
        await store.close()  # the database goes away before the turn settles
        answer = await read_reply(first)
    assert turn.journal.finished is not None and turn.journal.finished.status.value == "completed"
    await store.open()
    record = await store.idempotency_record_for_turn(app[SCOPE], run_id)
    assert record is not None and record.state == "running", "the settlement was lost with the store"
    await app[RECOVERY].sweep()
    record = await store.idempotency_record_for_turn(app[SCOPE], run_id)
    assert record is not None and record.state == "settled"
    again = await fetch(
        app_client, "POST", CHAT, json=body("chat", text, stream=False), headers={**auth, "Idempotency-Key": k}
    )
    assert again.status == 200 and again.replayed and again.json() == answer.json()


@pytest.mark.slow  # restarts the session's PostgreSQL server
async def test_a_follower_on_b_gets_every_event_across_a_database_restart(
    postgres_server: PostgresServer,
    replicas: tuple[TestClient, TestClient],
    auth: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """B follows a run A runs while the database restarts: B's listener reconnects and B reads again from where its
    journal stands, so its /events stream carries every event of the run, numbered as A numbers them."""
    a, b = replicas
    caplog.set_level(logging.INFO, "hermes_api_plugin")
    created = await fetch(a, "POST", "/v1/runs", json={"input": "restart run"}, headers=auth)
    run_id = created.json()["run_id"]
    async with b.get(f"/v1/runs/{run_id}/events", headers=auth) as events:
        raw = await read_until(events, b"reasoning.delta")
        postgres_server.stop()
        await asyncio.sleep(0.5)
        postgres_server.start()
        rest = await read_reply(events, timeout=30)
    followed = Reply(200, events.headers, raw + rest.raw)
    assert followed.events[-1]["event"] == "run.completed", followed.raw[-300:]
    assert followed.events[-1]["output"] == "After it."
    from_a = await fetch(a, "GET", f"/v1/runs/{run_id}/events", headers=auth)
    assert followed.records == from_a.records
    assert "feed: listening again on PostgreSQL" in caplog.text, "the listeners reconnected"


async def test_a_background_response_a_runs_is_cancelled_from_b_and_cannot_be_deleted_meanwhile(
    replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """§4.8 across gateways: DELETE on B while A runs the response is 409 response_in_progress; cancel on B reaches A
    through the store's feed and answers the settled (cancelled) object, as a cancel on A would."""
    a, b = replicas
    created = await fetch(
        a, "POST", RESPONSES, json=body("responses", "long one", stream=False, background=True), headers=auth
    )
    assert created.status == 200, created.raw
    response_id, run_id = created.json()["id"], created.headers["X-Hermes-Run-Id"]
    turn = a.server.app[TURNS].get(run_id)
    assert turn is not None
    await wait_for_async(lambda: len(turn.journal.events) >= 2, what="the turn's reasoning")
    deleting = await fetch(b, "DELETE", f"{RESPONSES}/{response_id}", headers=auth)
    assert_error_envelope(deleting, 409, "response_in_progress")
    cancelled = await fetch(b, "POST", f"{RESPONSES}/{response_id}/cancel", headers=auth)
    assert cancelled.status == 200, cancelled.raw
    assert cancelled.json()["status"] == "cancelled"
    assert (await asyncio.wait_for(turn.wait(), 10)).status.value == "cancelled"
    assert (await fetch(b, "DELETE", f"{RESPONSES}/{response_id}", headers=auth)).status == 200


async def test_a_keyed_run_retried_on_b_names_the_run_a_runs(
    replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """§6.1 replay/attach across gateways: 202 with the same run id and its current status, Idempotency-Replayed."""
    a, b = replicas
    headers = {**auth, "Idempotency-Key": key()}
    created = await fetch(a, "POST", "/v1/runs", json={"input": "long run"}, headers=headers)
    assert created.status == 202, created.raw
    run_id = created.json()["run_id"]
    again = await fetch(b, "POST", "/v1/runs", json={"input": "long run"}, headers=headers)
    assert again.status == 202 and again.headers["Idempotency-Replayed"] == "true"
    assert again.json()["run_id"] == run_id and again.json()["replayed"] is True
    assert again.json()["status"] in ("queued", "running")
    assert (await fetch(b, "POST", f"/v1/runs/{run_id}/stop", headers=auth)).json()["status"] == "stopping"
    turn = a.server.app[TURNS].get(run_id)
    if turn is not None:
        await asyncio.wait_for(turn.wait(), 10)
    kept = await asyncio.wait_for(kept_record(a.server.app[TURNS], run_id), 10)
    assert kept.status.value == "cancelled"
