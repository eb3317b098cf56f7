"""Store contract for gateways sharing a store (issue 15): leases, owners of stored Responses, run records, journals
read from a sequence number, and the feed (PostgreSQL's LISTEN/NOTIFY; none on SQLite).

Runs once per backend of the `open_backend` fixture (tests/store/conftest.py). Times are the caller's (an injected
clock): nothing here sleeps to let a lease run out.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from hermes_api_plugin.store.base import FeedSink, Lease, RunRecord, StoredResponse

from .conftest import Backend, BackendFactory
from .support import NOW, OTHER, SCOPE, idempotency_record


def stored(rid: str, owner: str | None, status: str = "in_progress") -> StoredResponse:
    return StoredResponse(
        id=rid, scope=SCOPE, turn_id=f"run_{rid}", session_id="s", status=status, snapshot={"id": rid}, owner=owner
    )


def run(turn_id: str, owner: str, status: str = "running", scope: str = SCOPE) -> RunRecord:
    return RunRecord(turn_id, scope, owner, "runs", "sess", None, status, NOW - 5)


async def test_a_lease_is_renewed_read_listed_and_released(backend: Backend) -> None:
    store = backend.store
    assert await store.get_lease("boot-a") is None
    lease = Lease("boot-a", NOW + 15, space="k:ns", pid=4242, host="gw-1", renewed_at=NOW)
    await store.renew_lease(lease)
    assert await store.get_lease("boot-a") == lease
    renewed = replace(lease, expires_at=NOW + 20, renewed_at=NOW + 5)
    await store.renew_lease(renewed)
    await store.renew_lease(Lease("boot-b", NOW - 1, renewed_at=NOW - 16))
    assert await store.leases() == [renewed, Lease("boot-b", NOW - 1, renewed_at=NOW - 16)]
    await store.release_lease("boot-a")
    await store.release_lease("boot-missing")
    assert [x.owner for x in await store.leases()] == ["boot-b"]


async def test_purge_drops_only_the_named_leases_that_expired(backend: Backend) -> None:
    store = backend.store
    await store.renew_lease(Lease("expired", NOW - 1))
    await store.renew_lease(Lease("renewed-meanwhile", NOW + 10))
    await store.renew_lease(Lease("other-expired", NOW - 1))
    await store.purge_leases(["expired", "renewed-meanwhile"], NOW)
    assert [x.owner for x in await store.leases()] == ["other-expired", "renewed-meanwhile"]
    await store.purge_leases([], NOW)


async def test_unsettled_responses_are_those_whose_owner_is_gone(backend: Backend) -> None:
    store = backend.store
    await store.renew_lease(Lease("live", NOW + 10))
    await store.renew_lease(Lease("expired", NOW - 1))
    await store.renew_lease(Lease("killed", NOW + 10))
    for rid, owner in (("a", "live"), ("b", "expired"), ("c", "killed"), ("d", None), ("e", "never-leased")):
        await store.put_response(stored(rid, owner), [])
    await store.put_response(stored("settled", "expired", status="completed"), [])
    left = await store.unsettled_responses(NOW, dead=["killed"])
    assert sorted(r.id for r in left) == ["b", "c", "d", "e"]
    assert {r.id: r.owner for r in left}["b"] == "expired"
    # an update of a stored response keeps its owner
    await store.put_response(replace(stored("a", None), status="in_progress"), [])
    got = await store.get_response(SCOPE, "a")
    assert got is not None and got.owner == "live"


async def test_run_records_are_scoped_settled_once_and_marked_when_their_owner_is_gone(backend: Backend) -> None:
    store = backend.store
    await store.renew_lease(Lease("live", NOW + 10))
    await store.renew_lease(Lease("expired", NOW - 1))
    record = run("run_1", "live")
    await store.put_run(record)
    assert await store.get_run(SCOPE, "run_1") == record
    assert await store.get_run(OTHER, "run_1") is None
    assert await store.get_run(SCOPE, "run_missing") is None
    await store.settle_run("run_1", "cancelled", NOW)
    await store.settle_run("run_1", "completed", NOW + 1)  # a settled run keeps its status
    assert await store.get_run(SCOPE, "run_1") == replace(record, status="cancelled", settled_at=NOW)
    await store.put_run(run("run_2", "expired"))
    await store.put_run(run("run_3", "live"))
    await store.put_run(run("run_4", "gone-without-lease"))
    await store.put_run(run("run_5", "expired", status="completed"))
    assert sorted(await store.mark_unknown_runs(NOW)) == ["run_2", "run_4"]
    assert await store.mark_unknown_runs(NOW) == []
    marked = await store.get_run(SCOPE, "run_2")
    assert marked is not None and (marked.status, marked.settled_at) == ("failed", NOW)
    assert await store.mark_unknown_runs(NOW, dead=["live"]) == ["run_3"]


async def test_a_journal_reads_from_a_sequence_number(backend: Backend) -> None:
    store = backend.store
    await store.append_journals([("t", 0, ["e0", "e1", "e2"])])
    assert await store.load_journal("t", 0) == ["e0", "e1", "e2"]
    assert await store.load_journal("t", 2) == ["e2"]
    assert await store.load_journal("t", 3) == []


class Sink(FeedSink):
    def __init__(self, address: str = "boot-owner") -> None:
        self._address = address
        self.journals: list[tuple[str, int]] = []
        self.stops: list[tuple[str, str]] = []
        self.follows: list[tuple[str, str]] = []
        self.answers: list[tuple[str, str]] = []
        self.replies: list[tuple[str, str]] = []
        self.reconnects = 0
        self.woken = asyncio.Event()

    @property
    def address(self) -> str:
        return self._address

    def journal_written(self, turn_id: str, end: int) -> None:
        self.journals.append((turn_id, end))
        self.woken.set()

    def follow_requested(self, owner: str, turn_id: str) -> None:
        self.follows.append((owner, turn_id))
        self.woken.set()

    def stop_requested(self, owner: str, turn_id: str) -> None:
        self.stops.append((owner, turn_id))
        self.woken.set()

    def answer_requested(self, owner: str, message: str) -> None:
        self.answers.append((owner, message))
        self.woken.set()

    def answer_replied(self, to: str, message: str) -> None:
        self.replies.append((to, message))
        self.woken.set()

    def reconnected(self) -> None:
        self.reconnects += 1

    async def next(self) -> None:
        await asyncio.wait_for(self.woken.wait(), 10)
        self.woken.clear()


async def test_the_feed_carries_journal_writes_and_stop_requests_between_stores(
    open_backend: BackendFactory,
) -> None:
    """PostgreSQL: a journal write on one store wakes the feed of another on the same database when it commits, with
    the turn and the end of what was written; a stop request, a follow, a forwarded answer and its reply reach every
    listener.
    SQLite: no feed."""
    first = await open_backend()
    feed = first.store.feed()
    if feed is None:
        assert first.store.feed() is None
        return
    assert first.store.feed() is feed
    sink = Sink()
    await feed.start(sink)
    await first.store.append_journals([("run_a", 0, ["e0", "e1"]), ("run_b", 3, ["x3"])])
    await sink.next()
    while len(sink.journals) < 2:
        await sink.next()
    assert sorted(sink.journals) == [("run_a", 2), ("run_b", 4)]
    await feed.request_stop("boot-owner", "run_a")
    await sink.next()
    assert sink.stops == [("boot-owner", "run_a")]
    await feed.announce_follow("boot-owner", "run_b")
    await sink.next()
    assert sink.follows == [("boot-owner", "run_b")]
    message = '{"text":"a b ünïcode"}'  # the message is the cluster's: carried as is, spaces and all
    await feed.forward_answer("boot-owner", message)
    await sink.next()
    assert sink.answers == [("boot-owner", message)]
    await feed.reply_answer("boot-other", '{"id":"r1"}')
    await sink.next()
    assert sink.replies == [("boot-other", '{"id":"r1"}')]
    await feed.close()


@pytest.mark.parametrize("open_backend", ["postgres"], indirect=True)
async def test_two_stores_on_one_database_see_each_others_notifications(open_backend: BackendFactory) -> None:
    """What two gateways do: the feed of one store hears the other store's journal writes."""
    one = await open_backend()
    store = one.store
    url = store.db._url  # type: ignore[attr-defined]
    from hermes_api_plugin.store.postgres.store import PostgresStore

    other = PostgresStore(url)
    await other.open()
    try:
        sink = Sink()
        feed = other.feed()
        assert feed is not None
        await feed.start(sink)
        await store.append_journals([("run_x", 0, ["e0"])])
        await sink.next()
        assert sink.journals == [("run_x", 1)]
        assert await other.load_journal("run_x", 0) == ["e0"], "the rows are committed when the listener wakes"
    finally:
        await other.close()


@pytest.mark.parametrize("open_backend", ["postgres"], indirect=True)
async def test_messages_longer_than_a_notify_payload_reach_their_addressee_once(open_backend: BackendFactory) -> None:
    """W-15.4: an answer or reply of 50 KB (PostgreSQL refuses NOTIFY payloads of 8000 bytes) crosses to the gateway
    it is addressed to — stored, named by its row in the notification, taken once by the addressee — exactly as a
    short one would; a gateway it is not addressed to never takes it; nothing is left behind."""
    one = await open_backend()
    store = one.store
    from hermes_api_plugin.store.postgres.store import PostgresStore

    other = PostgresStore(store.db._url)  # type: ignore[attr-defined]
    await other.open()
    owner, bystander = Sink("boot-owner"), Sink("boot-bystander")
    feeds = [store.feed(), other.feed()]
    assert feeds[0] is not None and feeds[1] is not None
    await feeds[0].start(bystander)
    await feeds[1].start(owner)
    try:
        long = '{"text":"' + "ünïcode " * 6500 + '"}'  # ~65 KB as UTF-8
        assert len(long.encode()) > 50_000
        await feeds[0].forward_answer("boot-owner", long)
        await owner.next()
        assert owner.answers == [("boot-owner", long)]
        reply = '{"id":"r1","pad":"' + "x" * 9000 + '"}'
        await feeds[1].reply_answer("boot-bystander", reply)
        await bystander.next()
        assert bystander.replies == [("boot-bystander", reply)]
        assert bystander.answers == [] and owner.replies == [], "only the addressee takes a stored message"
        async with store.db.connection() as conn:  # type: ignore[attr-defined]
            left = await (await conn.execute("SELECT count(*) AS n FROM feed_messages")).fetchone()
        assert left is not None and left["n"] == 0, "each stored message was taken once, by its addressee"
    finally:
        for feed in feeds:
            await feed.close()
        await other.close()


async def test_run_records_and_their_unreferenced_journals_are_purged_after_they_settled(backend: Backend) -> None:
    """An hour after a run settled its record goes, and its journal with it unless an admission or a stored Response
    still renders it; running runs and newer ones stay."""
    store = backend.store
    for turn_id, status, settled_at in (
        ("run_old", "completed", NOW - 10),
        ("run_keyed", "completed", NOW - 10),
        ("run_stored", "completed", NOW - 10),
        ("run_new", "completed", NOW + 10),
        ("run_running", "running", None),
    ):
        await store.put_run(replace(run(turn_id, "boot"), status=status, settled_at=settled_at))
        await store.append_journals([(turn_id, 0, ["e0"])])
    await store.reserve_idempotency_record(idempotency_record(turn="run_keyed", state="settled"))
    await store.put_response(replace(stored("stored", None, "completed"), turn_id="run_stored"), [])
    await store.purge_runs(NOW)
    left = {t: await store.get_run(SCOPE, t) is not None for t in ("run_old", "run_keyed", "run_new", "run_running")}
    assert left == {"run_old": False, "run_keyed": False, "run_new": True, "run_running": True}
    journals = {
        t: await store.load_journal(t) for t in ("run_old", "run_keyed", "run_stored", "run_new", "run_running")
    }
    assert journals == {
        "run_old": [],
        "run_keyed": ["e0"],
        "run_stored": ["e0"],
        "run_new": ["e0"],
        "run_running": ["e0"],
    }


async def test_owned_unsettled_lists_an_owners_running_admissions_runs_and_unsettled_responses(
    backend: Backend,
) -> None:
    store = backend.store
    await store.reserve_idempotency_record(idempotency_record("a", turn="run_adm", owner="me"))
    await store.reserve_idempotency_record(idempotency_record("b", turn="run_done", owner="me", state="settled"))
    await store.reserve_idempotency_record(idempotency_record("c", turn="run_theirs", owner="them"))
    await store.put_run(run("run_adm", "me"))  # a keyed run: both records, one turn id
    await store.put_run(run("run_unkeyed", "me"))
    await store.put_run(run("run_settled", "me", status="completed"))
    await store.put_response(replace(stored("r1", "me"), turn_id="run_resp"), [])
    await store.put_response(replace(stored("r2", "me", status="completed"), turn_id="run_resp_done"), [])
    assert await store.owned_unsettled("me") == ["run_adm", "run_resp", "run_unkeyed"]
    assert await store.owned_unsettled("nobody") == []


async def test_which_host_keeps_a_session_is_recorded_moved_and_forgotten_with_it(backend: Backend) -> None:
    store = backend.store
    assert await store.session_host("s1") is None
    await store.set_session_host("s1", "host-a:/home/a/.hermes")
    await store.set_session_host("s2", "host-a:/home/a/.hermes")
    assert await store.session_host("s1") == "host-a:/home/a/.hermes"
    await store.set_session_host("s1", "host-b:/srv/hermes")
    assert await store.session_host("s1") == "host-b:/srv/hermes"
    await store.bind_session_key(SCOPE, "key-1", "s1")
    await store.unbind_session("s1")  # the session was deleted
    assert (await store.session_host("s1"), await store.session_for_key(SCOPE, "key-1")) == (None, None)
    assert await store.session_host("s2") == "host-a:/home/a/.hermes"
