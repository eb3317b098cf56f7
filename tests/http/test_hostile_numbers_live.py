"""Issue 20, defect 1, against the real reference gateway: hostile numbers in every header and query value of every
operation its /openapi.json declares, with a concurrency cap of 2, on the SQLite and the PostgreSQL store.

`Last-Event-ID: ²` (a digit to `str.isdigit()`, not to `int()`) or 5 000 digits (over `int()`'s limit) on the session
stream answered 500 after the turn was admitted; the turn never started nor was cancelled and held its slot for
good (two such requests: every later one 429), the session could not be deleted (409) and a keyed retry waited
forever. Here every value of HOSTILE_NUMBERS goes, as raw UTF-8 header bytes or as a percent-encoded query value,
to every declared parameter of every served operation; each answer must be within the contract (< 500, the §1.7
envelope), a `Last-Event-ID` that is not a known id must stream from the start (WIRE §6.3, §7.4), and after each
request `/health/detailed` must show no turn, slot or stream left.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fuzz.operations import BODIES, request_bytes, served_operations
from tests.fuzz.target import check_reply, http_request
from tests.helpers import HOSTILE_NUMBERS, Reply, held, live_request, raw_exchange, wait_until_nothing_held
from tests.live import SCRIPTS, LiveGateway, start_gateway, write_home
from tests.pg import STORES, store_env

SESSION = "hostile-numbers"
REPLY_TIMEOUT = 20.0  # a keyed retry of a turn left held waited forever: fail instead


@pytest.fixture(scope="module", params=STORES)
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    """The gateway on either store: admissions (a keyed retry) and sessions live there."""
    with store_env(request) as env:
        home = write_home(
            tmp_path_factory.mktemp("numbers_home"),
            env=env,
            script=None,
            config={"agent": {"script": str(SCRIPTS / "fuzz.yaml")}, "api_server": {"max_concurrent_runs": 2}},
        )
        live = start_gateway(home)
        try:
            yield live
        finally:
            live.stop()


@pytest.fixture(scope="module")
def ids(gateway: LiveGateway) -> dict[str, str]:
    """Path ids that exist: a session with a settled turn (its run) and a stored response."""
    chat = live_request(gateway, "POST", f"/api/sessions/{SESSION}/chat", {"message": "hello"})
    assert chat.status == 200, chat.raw[:300]
    response = live_request(gateway, "POST", "/v1/responses", {"input": "hello", "store": True})
    assert response.status == 200, response.raw[:300]
    assert chat.run_id is not None
    return {"session_id": SESSION, "run_id": chat.run_id, "response_id": response.json()["id"]}


def send(gateway: LiveGateway, request: bytes) -> Reply:
    return raw_exchange(gateway.host, gateway.port, request, timeout=REPLY_TIMEOUT)


def test_issue20_defect1_hostile_numbers_in_every_header_and_query_value_leave_nothing_held(
    gateway: LiveGateway, ids: dict[str, str]
) -> None:
    """Issue 20, defect 1: every declared header and query parameter of every operation, each HOSTILE_NUMBERS value;
    no 500, a Last-Event-ID stream from its first record, and nothing held after each request. Then the session can
    be deleted and a normal turn runs."""
    sent: dict[str, int] = {}
    for op in served_operations(gateway):
        for place, name in op.params:
            for value in HOSTILE_NUMBERS:
                for body in range(len(BODIES.get(op.id, ((),)))):
                    what = (op.id, name, value[:12], body)
                    given = [(name, value.encode())]
                    header, query = (given, []) if place == "header" else ([], given)
                    reply = send(gateway, request_bytes(op, ids, header, query, body=body))
                    check_reply(reply, what)
                    if name == "Last-Event-ID" and reply.status == 200:
                        seen = [int(r.id or 0) for r in reply.records]
                        if value.strip(" ") == "3":  # optional whitespace trimmed: id 3, known once 3 records exist
                            assert seen[:1] in ([], [1], [4]), (what, seen)
                        else:  # not an id this server issued: from the start (WIRE.md §6.3, §7.4)
                            assert seen[:1] == [1], (what, reply.raw[:300])
                    wait_until_nothing_held(gateway, what)
                    sent[name] = sent.get(name, 0) + 1
    print(f"hostile numbers: {sum(sent.values())} requests")
    # The routes that read Last-Event-ID and starting_after were reached, with every value.
    assert sent["Last-Event-ID"] == 2 * len(HOSTILE_NUMBERS)
    assert sent["starting_after"] == len(HOSTILE_NUMBERS)
    deleted = live_request(gateway, "DELETE", f"/api/sessions/{SESSION}")
    assert deleted.status == 200, deleted.raw[:300]
    normal = live_request(gateway, "POST", "/api/sessions/after-the-fuzz/chat", {"message": "hello"})
    assert normal.status == 200 and normal.json()["status"] == "completed", normal.raw[:300]
    assert held(gateway) == {"running": 0, "queued": 0, "waiting": 0, "admitted": 0, "streams": 0}


def test_issue20_defect1_a_keyed_retry_with_a_hostile_last_event_id_is_answered(gateway: LiveGateway) -> None:
    """Issue 20, defect 1: a keyed session stream sent twice with the same hostile `Last-Event-ID`: both answered
    (the retry replays, it does not wait for a turn that never starts), from the first record (` 3 ` is id 3 once
    the turn has three records: the replay starts at 4), one run."""
    for n, value in enumerate(HOSTILE_NUMBERS):
        path = f"/api/sessions/retry-{n}/chat/stream"
        headers = [(b"Idempotency-Key", f"hostile-retry-{n}".encode()), (b"Last-Event-ID", value.encode())]
        request = http_request("POST", path.encode(), b'{"message":"hello"}', headers)
        first = send(gateway, request)
        again = send(gateway, request)
        for reply, start in ((first, 1), (again, 4 if value.strip(" ") == "3" else 1)):  # " 3 ": id 3, once known
            assert reply.status == 200, (value[:12], reply.raw[:300])
            assert reply.records[0].id == str(start), (value[:12], reply.raw[:300])
            assert reply.records[-1].event == "done", (value[:12], reply.raw[:300])
        assert again.headers["Idempotency-Replayed"] == "true"
        assert again.headers["X-Hermes-Run-Id"] == first.headers["X-Hermes-Run-Id"]
        wait_until_nothing_held(gateway, value)
    assert held(gateway) == {"running": 0, "queued": 0, "waiting": 0, "admitted": 0, "streams": 0}
