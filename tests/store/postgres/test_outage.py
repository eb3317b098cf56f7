"""A database restart in the middle of a turn (issue 15): one reference gateway on a real PostgreSQL (tests/pg.py)
whose database stops while a keyed chat stream and a stored Response stream run, and starts again once both turns
have ended. While it is down every request that needs it answers 503 `storage_unavailable` with `Retry-After` (a
keyed chat stream: its in-stream refusal), never a 500, never a traceback; the running turns lose nothing — their
clients get the whole answer once their end is stored, the journal and the settled admission reach the database, so
a keyed retry replays the same records; what was stored before is still there; and the gateway serves new requests
again."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest

from hermes_api_plugin.core.events import TurnStatus
from hermes_api_plugin.turns import Journal, decode_journal
from tests.helpers import CHAT, MODEL, Reply, assert_error_envelope, live_request, wait_for
from tests.live import LiveGateway
from tests.pg import PostgresServer
from tests.submission.support import check_refusal_stream

# slow (left out by ./test --fast): a gateway process, a database stopped for seconds, requests waiting on it.
pytestmark = pytest.mark.slow

PACED = "paced answer"  # tests/scripts/chat.yaml: a sentence a second for about 3 s
PACED_ANSWER = "First part. Second part. Third part. Fourth part."


def chat_body(text: str, *, stream: bool = False) -> dict[str, Any]:
    return {"model": MODEL, "stream": stream, "messages": [{"role": "user", "content": text}]}


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def stored_turn(url: str, key: str) -> tuple[str, Journal]:
    """The state of the admission of `key` and its turn's journal, straight from the database."""
    with psycopg.connect(url, autocommit=True) as conn:
        admission = conn.execute("SELECT state, turn_id FROM admissions WHERE key = %s", (key,)).fetchone()
        assert admission is not None
        rows = conn.execute(
            "SELECT event FROM journal_events WHERE turn_id = %s ORDER BY seq", (admission[1],)
        ).fetchall()
    return str(admission[0]), decode_journal([row[0] for row in rows])


def test_a_database_restart_mid_turn_answers_503_meanwhile_and_loses_no_answer(
    gateway_factory: Callable[..., LiveGateway], postgres_server: PostgresServer, postgres_url: str
) -> None:
    live = gateway_factory(env={"API_SERVER_STORE_URL": postgres_url})
    created = live_request(live, "POST", "/v1/responses", {"model": MODEL, "input": "stored before the outage"})
    assert created.status == 200, created.raw
    stored = created.json()

    with ThreadPoolExecutor(8) as pool:
        running = pool.submit(
            live_request, live, "POST", CHAT, chat_body(PACED, stream=True), keyed("pg-paced"), timeout=120
        )
        responding = pool.submit(  # a stored Response streaming at the same time (its journal is durable too)
            live_request, live, "POST", "/v1/responses", {"model": MODEL, "input": PACED, "stream": True}, timeout=120
        )
        wait_for(lambda: len(live.executions()) == 3, what="the paced turns running")
        postgres_server.stop()
        try:
            # keyed chat streams report admission outcomes in the stream (WIRE §5.3): a finish chunk, then [DONE]
            keyed_stream = pool.submit(
                live_request, live, "POST", CHAT, chat_body("hi", stream=True), keyed("pg-during-stream")
            )
            during = [
                pool.submit(live_request, live, "POST", CHAT, chat_body("hello"), keyed("pg-during")),
                pool.submit(live_request, live, "POST", "/v1/responses", {"input": "hi"}, keyed("pg-during-resp")),
                pool.submit(live_request, live, "GET", f"/v1/responses/{stored['id']}"),
                pool.submit(live_request, live, "GET", "/api/sessions"),
                pool.submit(live_request, live, "POST", CHAT, chat_body("hello")),
            ]
            for reply in (f.result(timeout=60) for f in during):
                assert_error_envelope(reply, 503, "storage_unavailable", type="server_error")
                assert reply.headers.get("Retry-After") == "1"
            check_refusal_stream(keyed_stream.result(timeout=60), "storage_unavailable")
            # both turns ended while the database is down: their settle steps failed (and must not be lost) …
            wait_for(lambda: live.output().count("could not store turn") >= 2, 30, what="two failed settle steps")
            assert not running.done() and not responding.done()  # … so their terminal records wait for the store
        finally:
            postgres_server.start()
        answered: Reply = running.result(timeout=120)
        streamed: Reply = responding.result(timeout=120)

    # the client of the running turn got the whole answer, terminal record included
    assert answered.status == 200 and answered.is_stream, answered.raw[:300]
    assert answered.chat_text()[0] == PACED_ANSWER
    assert answered.chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert answered.records[-1].data == "[DONE]"
    # its whole journal (terminal record included) and its settled admission reached the database after the restart
    state, journal = stored_turn(postgres_url, "pg-paced")
    assert state == "settled" and journal.finished is not None and journal.finished.status is TurnStatus.COMPLETED
    retry = live_request(live, "POST", CHAT, chat_body(PACED, stream=True), keyed("pg-paced"))
    assert retry.status == 200 and retry.replayed, retry.raw[:300]
    assert retry.answer() == answered.answer()  # the same records, byte for byte
    assert sum(1 for e in live.executions() if PACED in str(e["input"])) == 2  # each ran once, never again
    # the stored Response streamed through the outage: completed, and stored so
    assert streamed.status == 200 and streamed.events[-1]["type"] == "response.completed", streamed.raw[-300:]
    assert streamed.answer_text("responses") == PACED_ANSWER
    final = streamed.events[-1]["response"]
    got = live_request(live, "GET", f"/v1/responses/{final['id']}")
    assert got.status == 200 and got.json() == final

    # what was stored before the outage is still there; new work is served
    got = live_request(live, "GET", f"/v1/responses/{stored['id']}")
    assert got.status == 200 and got.json() == stored
    after = live_request(live, "POST", CHAT, chat_body("hello"), keyed("pg-after"))
    assert after.status == 200, after.raw
    fresh = live_request(live, "POST", "/v1/responses", {"model": MODEL, "input": "stored after the outage"})
    assert fresh.status == 200 and fresh.json()["status"] == "completed", fresh.raw

    output = live.output()
    assert "Traceback" not in output, output
    assert postgres_server.password not in output


def test_issue_20_readiness_reflects_a_stopped_database(
    gateway_factory: Callable[..., LiveGateway], postgres_server: PostgresServer, postgres_url: str
) -> None:
    """Issue 20: `/health/detailed` said `readiness: ok` while PostgreSQL was down. Now its store check asks the
    database (`SELECT 1`, short time-out, cached about 2 s): down → the store check `unavailable` and readiness
    `degraded` (the answer itself still 200, quickly, with no secret); up again → `ok`."""
    live = gateway_factory(env={"API_SERVER_STORE_URL": postgres_url})

    def detailed() -> dict[str, Any]:
        reply = live_request(live, "GET", "/health/detailed", timeout=15)
        assert reply.status == 200, reply.raw
        assert postgres_server.password not in reply.raw.decode()
        body: dict[str, Any] = reply.json()
        return body

    ready = detailed()
    assert ready["readiness"]["status"] == "ok" and ready["readiness"]["checks"]["store"]["status"] == "ok", ready
    postgres_server.stop()
    try:
        wait_for(lambda: detailed()["readiness"]["status"] == "degraded", 15, what="readiness degraded")
        down = detailed()
        assert down["readiness"]["checks"]["store"]["status"] == "unavailable", down
        assert down["status"] == "degraded" and down["api_server"]["store"]["reachable"] is False
    finally:
        postgres_server.start()
    wait_for(lambda: detailed()["readiness"]["status"] == "ok", 30, what="readiness ok again")
