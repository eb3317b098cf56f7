"""A store that is unavailable for a while (a database restart) loses nothing a turn wrote: the settle step waits and
retries (the terminal record comes once the transcript and the surface's state are stored), a journal flush that
failed is retried even when no event follows, and a store that refuses a write (not unavailable) is not retried."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from hermes_api_plugin.core.events import TextDelta, TurnFinished, TurnStatus
from hermes_api_plugin.store import MemoryStore, StoreError, StoreUnavailable, retry
from hermes_api_plugin.turns import Journal
from hermes_api_plugin.turns import durable as durable_module
from hermes_api_plugin.turns.durable import JournalSaver
from tests.helpers import wait_for_async
from tests.turns.support import open_store, registry, request, started


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "RETRY_DELAYS_S", (0.01,))
    monkeypatch.setattr(durable_module, "MAX_RETRY_S", 0.05)


class Outage:
    """Wraps a store: while `down`, `method` raises `error` (counted in `failures`); everything else passes through."""

    def __init__(self, inner: Any, method: str, error: type[StoreError] = StoreUnavailable) -> None:
        self.inner, self.method, self.error = inner, method, error
        self.down = True
        self.failures = 0

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.inner, name)
        if name != self.method:
            return real

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                self.failures += 1
                raise self.error("the database is restarting")
            return await real(*args, **kwargs)

        return call


async def test_until_stored_retries_while_unavailable_and_logs_one_line_each_way(
    caplog: pytest.LogCaptureFixture,
) -> None:
    attempts = 0

    async def write() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 4:
            raise StoreUnavailable("down")
        return "stored"

    with caplog.at_level(logging.INFO, logger="hermes_api_plugin"):
        assert await retry.until_stored(write, "the thing") == "stored"
    assert attempts == 4
    assert [r.getMessage() for r in caplog.records] == [
        "[API Server] could not store the thing, retrying until the store is back: down",
        "[API Server] stored the thing after 3 failed attempts",
    ]


async def test_until_stored_does_not_retry_a_refused_write() -> None:
    attempts = 0

    async def write() -> None:
        nonlocal attempts
        attempts += 1
        raise StoreError("refused")

    with pytest.raises(StoreError, match="refused"):
        await retry.until_stored(write, "the thing")
    assert attempts == 1


async def test_a_turn_ending_while_the_store_is_down_gets_its_terminal_record_once_the_transcript_is_stored() -> None:
    sessions = Outage(await open_store(), "append_session_messages")
    reg = await registry(store=sessions)
    turn = started(reg.admit(request("hello")))
    await wait_for_async(lambda: sessions.failures >= 3, what="three failed transcript writes")
    assert turn.journal.finished is None and reg.get(turn.run_id) is turn  # unsettled while its transcript waits
    sessions.down = False
    finished = await asyncio.wait_for(turn.wait(), 5)
    assert finished.status is TurnStatus.COMPLETED
    history = await sessions.inner.load_session_messages("s1")
    assert [m.role for m in history] == ["user", "assistant"]  # stored once, not once per attempt


async def test_a_refused_transcript_is_logged_and_the_turn_still_settles(caplog: pytest.LogCaptureFixture) -> None:
    sessions = Outage(await open_store(), "append_session_messages", StoreError)
    reg = await registry(store=sessions)
    turn = started(reg.admit(request("hello")))
    finished = await asyncio.wait_for(turn.wait(), 5)
    assert finished.status is TurnStatus.COMPLETED and sessions.failures == 1
    assert "could not store turn run_1 of session s1" in caplog.text


async def test_a_failed_journal_flush_is_retried_without_another_event() -> None:
    inner = MemoryStore()
    await inner.open()
    store = Outage(inner, "append_journals")
    saver = JournalSaver(store, interval=0.01)
    journal = Journal()
    saver.watch("run_1", journal)
    journal.extend([TextDelta("the whole answer"), TurnFinished(TurnStatus.COMPLETED)])  # the last event
    await wait_for_async(lambda: store.failures >= 2, what="two failed flushes")
    store.down = False
    stored = await wait_for_async(lambda: inner.load_journal("run_1"), until=lambda events: len(events) == 2)
    assert len(stored) == 2 and not saver.watching(journal)
    await saver.close()
    await inner.close()


async def test_a_saver_closed_while_the_store_is_down_stops_retrying() -> None:
    inner = MemoryStore()
    await inner.open()
    store = Outage(inner, "append_journals")
    saver = JournalSaver(store, interval=0.01)
    journal = Journal()
    saver.watch("run_1", journal)
    journal.extend([TextDelta("never stored")])
    await wait_for_async(lambda: store.failures >= 1, what="a failed flush")
    await saver.close()  # its last flush fails too
    failures = store.failures
    await asyncio.sleep(0.3)  # many retry periods (MAX_RETRY_S is 0.05 here)
    assert store.failures == failures
    await inner.close()
