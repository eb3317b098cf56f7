"""turns/durable.py: group commit, and a journal another gateway follows committed as it comes (issue 25)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from hermes_api_plugin.core.events import TextDelta, TurnFinished, TurnStatus
from hermes_api_plugin.store import MemoryStore
from hermes_api_plugin.turns import Journal
from hermes_api_plugin.turns.durable import JournalSaver
from tests.helpers import wait_for_async


async def stored(store: MemoryStore, turn_id: str, count: int) -> None:
    await wait_for_async(lambda: store.load_journal(turn_id), until=lambda events: len(events) == count)


async def test_a_followed_journal_is_committed_as_it_comes_and_the_others_wait_for_the_interval() -> None:
    store = MemoryStore()
    await store.open()
    saver = JournalSaver(store, interval=3600.0)  # only a commit at once can store anything in this test
    followed, alone = Journal(), Journal()
    saver.watch("run_f", followed)
    saver.watch("run_a", alone)
    followed.extend([TextDelta("before the follow")])
    saver.followed("run_f")  # what was waiting for the interval goes now
    await stored(store, "run_f", 1)
    followed.extend([TextDelta("after it")])
    await stored(store, "run_f", 2)
    alone.extend([TextDelta("nobody follows this one")])
    await asyncio.sleep(0.05)
    assert await store.load_journal("run_a") == []
    saver.followed("run_unknown")  # a turn this saver does not watch: nothing to do
    followed.extend([TurnFinished(TurnStatus.COMPLETED)])
    await stored(store, "run_f", 3)
    assert not saver.watching(followed) and saver.watching(alone)
    await saver.close()
    assert len(await store.load_journal("run_a")) == 1
    await store.close()


class RecordingStore(MemoryStore):
    """Remembers, per write, whether a stream was said to wait for it."""

    def __init__(self) -> None:
        super().__init__()
        self.awaited: list[bool] = []

    async def append_journals(
        self, batches: Sequence[tuple[str, int, Sequence[str]]], *, awaited: bool = False
    ) -> None:
        self.awaited.append(awaited)
        await super().append_journals(batches, awaited=awaited)


async def test_a_commit_a_stream_waits_for_is_written_as_awaited_and_a_timed_one_is_not() -> None:
    """`awaited` lets the SQLite store hold the loop for the commit (store/sqlite/db.py): only for what a client's
    stream is waiting to show, never for the interval's commits nobody waits on."""
    store = RecordingStore()
    await store.open()
    saver = JournalSaver(store, interval=0.01)
    journal = Journal()
    saver.watch("run_w", journal)
    journal.extend([TextDelta("nobody waits for this one")])
    await stored(store, "run_w", 1)
    journal.extend([TextDelta("a Responses stream waits for this one")])
    await saver.durable(journal)
    assert store.awaited == [False, True]
    await saver.close()
    await store.close()
