"""The SQLite backend only: file mode 0600, WAL, memory fallback, reopening a file. (What every backend does
is in ../test_contract_*.py; migrations in test_migrate.py.)"""

from __future__ import annotations

import asyncio
import sqlite3
import stat
import threading
from collections.abc import Awaitable
from pathlib import Path

import pytest

from hermes_api_plugin.core.content import ImagePart, Message, TextPart
from hermes_api_plugin.store import Eviction, SqliteStore, StoreError, StoreRefused
from hermes_api_plugin.store.sql.migrations import load_migrations
from hermes_api_plugin.store.sqlite import db as sqlite_db
from hermes_api_plugin.store.sqlite.migrate import BUNDLED

from ..support import SCOPE, response


def bundled_versions() -> list[int]:
    return [m.version for m in load_migrations(BUNDLED)]


async def test_open_creates_a_private_wal_database_with_every_migration_recorded(tmp_path: Path) -> None:
    path = tmp_path / "h" / "store.sqlite3"
    store = SqliteStore(path)
    await store.open()
    try:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        await store.sessions.append_session_messages("s", [Message("user", (TextPart("hi"),))])
        for side in (Path(f"{path}-wal"), Path(f"{path}-shm")):
            if side.exists():
                assert stat.S_IMODE(side.stat().st_mode) == 0o600, side
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        versions = [version for (version,) in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == bundled_versions()
    finally:
        conn.close()


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    versions = bundled_versions()
    assert versions == list(range(1, len(versions) + 1))


async def test_session_messages_round_trip_and_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    messages = [
        Message("user", (TextPart("look"), ImagePart("https://x/cat.png", "high"))),
        Message("assistant", (TextPart("a cat"),), reasoning="pixels"),
    ]
    store = SqliteStore(path)
    await store.open()
    await store.sessions.append_session_messages("s1", messages)
    await store.sessions.append_session_messages("s2", [Message("user", (TextPart("other"),))])
    await store.close()
    again = SqliteStore(path)
    await again.open()
    try:
        assert await again.sessions.load_session_messages("s1") == messages
        assert await again.sessions.load_session_messages("unknown") == []
    finally:
        await again.close()


async def test_closed_store_raises_store_error(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    with pytest.raises(StoreError):
        await store.sessions.load_session_messages("s")


async def test_unopenable_store_falls_back_to_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = SqliteStore(blocker / "store.sqlite3", fallback_to_memory=True)
    await store.open()
    assert store.durable is False
    await store.sessions.append_session_messages("s", [Message("user", (TextPart("x"),))])
    assert [m.text for m in await store.sessions.load_session_messages("s")] == ["x"]
    await store.close()
    assert "Store unavailable" in caplog.text


async def test_corrupt_file_refuses_to_open_or_falls_back_to_memory(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    path.write_bytes(b"this is not a database" * 200)
    with pytest.raises(StoreError, match="not a database"):
        await SqliteStore(path).open()
    store = SqliteStore(path, fallback_to_memory=True)
    await store.open()
    try:
        assert store.durable is False
        assert await store.sessions.create_session("s", None) is True
    finally:
        await store.close()
    assert path.read_bytes().startswith(b"this is not a database")  # left as it was, for the operator


async def test_a_journal_row_with_a_raw_nul_reads_back_whole(tmp_path: Path) -> None:
    """Journal rows go to SQLite as one JSON parameter, whose functions would end a text at NUL: such a batch is written
    row by row. (The turns' own rows escape NUL; PostgreSQL refuses a raw one, test_contract_nul.py.)"""
    store = SqliteStore(tmp_path / "store.sqlite3")
    await store.open()
    try:
        rows = ["before", "nul\x00inside", "after"]
        await store.append_journals([("t", 0, rows)])
        assert await store.load_journal("t") == rows
    finally:
        await store.close()


async def iterations_during(call: Awaitable[object]) -> int:
    """How many turns the event loop took while `call` was awaited (a task counting them runs beside it)."""
    turns = 0

    async def count() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count())
    await asyncio.sleep(0)
    before = turns
    try:
        await call
    finally:
        counter.cancel()
    return turns - before


async def test_a_handed_off_call_is_settled_in_place_and_any_other_through_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy loop starves the database thread of the interpreter lock, so a call a stream waits on is waited for
    in place (issue 25): no loop turn passes. Any other call comes back through the loop's self-pipe."""
    monkeypatch.setattr(sqlite_db, "HANDOFF_S", 30.0)  # a slow machine must not fall back to the loop in this test
    store = SqliteStore(tmp_path / "store.sqlite3")
    await store.open()
    try:
        select = store.db.call(lambda conn: conn.execute("SELECT 1").fetchone()[0], handoff=True)
        assert await iterations_during(select) == 0
        assert await iterations_during(store.db.call(lambda conn: conn.execute("SELECT 1").fetchone()[0])) >= 1
        rows = ['{"e":0}', '{"e":1}']
        assert await iterations_during(store.append_journals([("t", 0, rows)], awaited=True)) == 0
        assert await store.load_journal("t") == rows

        def refused(conn: sqlite3.Connection) -> None:
            conn.execute("SELECT * FROM no_such_table")

        with pytest.raises(StoreError, match="no_such_table"):
            await store.db.call(refused, handoff=True)
    finally:
        await store.close()


async def test_a_handed_off_call_that_outlasts_the_wait_is_settled_by_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_db, "HANDOFF_S", 0.01)
    store = SqliteStore(tmp_path / "store.sqlite3")
    await store.open()
    release = threading.Event()
    try:

        def slow(conn: sqlite3.Connection) -> int:
            release.wait(10)
            return int(conn.execute("SELECT 7").fetchone()[0])

        call = asyncio.ensure_future(store.db.call(slow, handoff=True))
        await asyncio.sleep(0.05)
        assert not call.done()  # the loop stopped waiting after HANDOFF_S and went on
        release.set()
        assert await asyncio.wait_for(call, 10) == 7
    finally:
        release.set()
        await store.close()


def test_a_hand_off_outcome_goes_to_whoever_still_waits() -> None:
    delivered = sqlite_db._Handoff()
    assert delivered.deliver("row", failed=False)
    assert not delivered.abandon()  # it came in between the wait running out and the loop giving up: settle here
    assert delivered.value == "row" and not delivered.failed
    abandoned = sqlite_db._Handoff()
    assert abandoned.abandon()
    assert not abandoned.deliver("late", failed=False)  # the thread settles the future through the loop instead
    assert abandoned.value is None


def _statements(store: SqliteStore) -> list[str]:
    """Every statement the store's connection runs from now on (sqlite's trace callback, on the database thread)."""
    seen: list[str] = []
    conn = store.sessions.db._conn
    assert conn is not None
    conn.set_trace_callback(seen.append)
    return seen


async def test_transcripts_appended_in_one_loop_iteration_share_one_transaction_and_keep_their_order(
    tmp_path: Path,
) -> None:
    """Issue 25: twenty-one turns settling at once: the first transcript is written at once, the rest — made while it
    was written — in one more store call and commit, each in a savepoint of its own (twenty-one of each before);
    two appends to one session keep the order they were made in."""
    store = SqliteStore(tmp_path / "store.sqlite3")
    await store.open()
    try:
        statements = _statements(store)
        first, then = Message("user", (TextPart("first"),)), Message("user", (TextPart("then"),))
        await asyncio.gather(
            store.sessions.append_session_messages("s0", [first]),
            *(
                store.sessions.append_session_messages(f"s{n}", [Message("user", (TextPart(str(n)),))])
                for n in range(1, 20)
            ),
            store.sessions.append_session_messages("s0", [then]),
        )
        assert statements.count("BEGIN IMMEDIATE") == 2 and statements.count("COMMIT") == 2
        assert statements.count("SAVEPOINT grouped") == 21
        assert await store.sessions.load_session_messages("s0") == [first, then]
        for n in range(1, 20):
            assert await store.sessions.load_session_messages(f"s{n}") == [Message("user", (TextPart(str(n)),))]
    finally:
        await store.close()


async def test_responses_put_at_once_share_a_commit_with_transcripts_and_each_gets_its_own_evictions(
    tmp_path: Path,
) -> None:
    """Issue 25: a stored Response is put when its turn is admitted and when it settles; puts made while a group is
    written go in the next one, beside the transcripts of that moment, and each caller gets the evictions its own put
    made (the oldest settled Response beyond `max_responses`)."""
    store = SqliteStore(tmp_path / "store.sqlite3", max_responses=2)
    await store.open()
    try:
        await store.put_response(response("r0"), [])  # alone: its own transaction
        await store.put_response(response("r1"), [])
        statements = _statements(store)
        note = Message("user", (TextPart("note"),))
        outcomes = await asyncio.gather(
            store.sessions.append_session_messages("s", [note]),  # written at once; the rest gather meanwhile
            store.put_response(response("r2"), []),
            store.sessions.append_session_messages("s", [note]),
            store.put_response(response("r3"), []),
        )
        assert statements.count("BEGIN IMMEDIATE") == 2 and statements.count("COMMIT") == 2
        assert outcomes[1] == [Eviction("r0", ())] and outcomes[3] == [Eviction("r1", ())]
        assert [await store.get_response(SCOPE, f"r{n}") is not None for n in range(4)] == [False, False, True, True]
        assert await store.sessions.load_session_messages("s") == [note, note]
    finally:
        await store.close()


async def test_a_refused_write_fails_alone_and_leaves_nothing_of_itself(tmp_path: Path) -> None:
    """A grouped write that breaks a constraint rolls back to its savepoint and its caller gets StoreRefused, as from
    a call of its own; the writes grouped with it are committed."""
    store = SqliteStore(tmp_path / "store.sqlite3")
    await store.open()
    db = store.sessions.db
    try:
        await db.call(lambda conn: conn.execute("CREATE TABLE positive (x INTEGER CHECK (x > 0))"))

        def half_then_refused(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO positive VALUES (1)")
            conn.execute("INSERT INTO positive VALUES (0)")

        kept = Message("user", (TextPart("kept"),))
        outcomes = await asyncio.gather(
            store.sessions.append_session_messages("before", [kept]),
            db.grouped(half_then_refused),
            store.sessions.append_session_messages("after", [kept]),
            return_exceptions=True,
        )
        assert outcomes[0] is None and outcomes[2] is None
        assert isinstance(outcomes[1], StoreRefused)
        assert await db.call(lambda conn: conn.execute("SELECT count(*) FROM positive").fetchone()[0]) == 0
        assert await store.sessions.load_session_messages("before") == [kept]
        assert await store.sessions.load_session_messages("after") == [kept]
    finally:
        await store.close()


async def test_a_grouped_write_on_a_closed_store_raises_store_error(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.sqlite3")
    await store.open()
    db = store.sessions.db
    await store.close()
    with pytest.raises(StoreError):
        await db.grouped(lambda conn: None)
