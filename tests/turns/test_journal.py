"""The journal of a turn: followers, idle periods, offsets, the terminal record, how it holds its events."""

from __future__ import annotations

import asyncio
import gc
import inspect
import random
from itertools import pairwise
from typing import Any

import pytest

from hermes_api_plugin.core.events import (
    QuestionAnswered,
    QuestionAsked,
    ReasoningDelta,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnFinished,
    TurnStatus,
    TurnTranscript,
    unanswered_requests,
)
from hermes_api_plugin.core.transcript import turn_messages
from hermes_api_plugin.turns import Journal
from hermes_api_plugin.turns.journal import decode_journal, encode_events, encode_journal, journal_bytes
from tests.helpers import collector_reads, tracked_reachable, wait_for_async


async def test_journal_followers_get_every_event_in_order() -> None:
    journal = Journal()
    got: list[list[Any]] = [[], []]

    async def follow(i: int) -> None:
        async for batch in journal.follow():
            assert batch is not None
            got[i].extend(batch)

    tasks = [asyncio.create_task(follow(i)) for i in range(2)]
    await asyncio.sleep(0)
    events = [TextDelta(str(i)) for i in range(50)]
    for event in events:
        journal.extend([event])
        if len(events) % 7 == 0:
            await asyncio.sleep(0)
    journal.extend([TurnFinished(TurnStatus.COMPLETED)])
    await asyncio.wait_for(asyncio.gather(*tasks), 2)
    assert got[0] == got[1] == [*events, TurnFinished(TurnStatus.COMPLETED)]


async def test_journal_is_closed_after_the_terminal_record() -> None:
    journal = Journal()
    journal.extend([TurnFinished(TurnStatus.CANCELLED)])
    journal.extend([TextDelta("late"), TurnFinished(TurnStatus.COMPLETED)])
    assert list(journal.events) == [TurnFinished(TurnStatus.CANCELLED)]
    assert journal.finished is not None and journal.finished.status is TurnStatus.CANCELLED


async def test_journal_follow_reports_idle_periods() -> None:
    journal = Journal()
    seen: list[Any] = []

    async def follow() -> None:
        async for batch in journal.follow(idle_timeout=0.05):
            seen.append(batch)

    task = asyncio.create_task(follow())
    await wait_for_async(lambda: seen.count(None) >= 2, timeout=2, interval=0.01, what="two idle periods")
    journal.extend([TurnFinished(TurnStatus.COMPLETED)])
    await asyncio.wait_for(task, 1)
    assert seen.count(None) >= 2
    assert seen[-1] == [TurnFinished(TurnStatus.COMPLETED)]
    assert journal._waiters == []  # timed-out waiters do not pile up


async def test_journal_follow_from_an_offset_replays_the_rest() -> None:
    journal = Journal()
    journal.extend([TextDelta("a"), TextDelta("b"), TurnFinished(TurnStatus.COMPLETED)])
    batches = [b async for b in journal.follow(1)]
    assert batches == [[TextDelta("b"), TurnFinished(TurnStatus.COMPLETED)]]


async def test_a_parked_follower_with_take_gets_each_append_in_the_append_call() -> None:
    """Issue 25: what a parked follower can handle in place it takes while the journal appends — no task switch, the
    follower stays parked; a False from `take` wakes it with an empty batch, and so does the terminal record."""
    journal = Journal()
    taken: list[list[Any]] = []
    seen: list[Any] = []

    def take(batch: list[Any]) -> bool:
        taken.append(batch)
        return TextDelta("d") not in batch

    async def follow() -> None:
        async for batch in journal.follow(take=take):
            seen.append(batch)

    task = asyncio.create_task(follow())
    await asyncio.sleep(0)  # parked
    journal.extend([TextDelta("a")])
    assert taken == [[TextDelta("a")]]  # before extend returned
    journal.extend([TextDelta("b"), TextDelta("c")])
    assert taken[-1] == [TextDelta("b"), TextDelta("c")]
    await asyncio.sleep(0)
    assert seen == []  # still parked: nothing woke it
    journal.extend([TextDelta("d")])  # take says False: the follower wakes
    await wait_for_async(lambda: seen == [[]], what="the follower woken with an empty batch")
    journal.extend([TextDelta("e")])  # not parked at that instant, or parked again: either way nothing is lost
    await asyncio.sleep(0)
    journal.extend([TurnFinished(TurnStatus.COMPLETED)])
    await asyncio.wait_for(task, 1)
    delivered = [e for batch in [*taken, *[b for b in seen if b]] for e in batch]
    assert [getattr(e, "text", None) for e in delivered] == ["a", "b", "c", "d", "e", None]
    assert journal._offers == []


async def _parked_taking(journal: Journal) -> tuple[list[list[Any]], asyncio.Task[None]]:
    """A follower parked on `journal` whose `take` keeps every batch it is offered (and stays parked)."""
    taken: list[list[Any]] = []

    def take(batch: list[Any]) -> bool:
        taken.append(batch)
        return True

    async def follow() -> None:
        async for _ in journal.follow(take=take):
            pass

    task = asyncio.create_task(follow())
    await asyncio.sleep(0)  # parked
    return taken, task


async def test_a_follower_closed_while_parked_is_offered_nothing_more() -> None:
    journal = Journal()
    taken, task = await _parked_taking(journal)
    assert len(journal._offers) == 1
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    journal.extend([TextDelta("after")])
    assert taken == [] and journal._offers == []


def _settled_journal(deltas: int) -> tuple[Journal, list[Any]]:
    journal = Journal()
    tool = ToolStarted("call_1", "terminal", "{}", "terminal", "💻", 0.0)
    events: list[Any] = [ReasoningDelta("thinking ")] + [TextDelta(f"{i} ") for i in range(deltas)] + [tool]
    journal.extend(events)
    journal.extend([TurnFinished(TurnStatus.COMPLETED)])
    return journal, list(journal.events)


def test_a_journal_reads_as_the_events_it_journaled() -> None:
    journal, before = _settled_journal(20)
    assert list(journal.events) == before and len(journal.events) == len(before)
    assert journal.events[3:7] == before[3:7] and journal.events[-3:] == before[-3:]
    assert journal.events[0] == ReasoningDelta("thinking ") and journal.events[5] == TextDelta("4 ")
    # events other than deltas are the very objects journaled (resume_position finds a request by identity)
    assert journal.events[-2] is before[-2] and journal.events[-1] is before[-1]


def test_a_settled_journal_is_frozen_and_a_full_collection_reads_nothing_of_its_events() -> None:
    """Issue 25: a kept journal's lists were read item by item by every full collection, untracked items or not."""
    journal, before = _settled_journal(1000)
    gc.collect()
    assert collector_reads(journal) < 40  # its slots, the tool event, the terminal record: not 2 000 items
    assert list(journal.events) == before and len(journal.stamps) == len(before) and journal.stamps[-1] > 0
    assert journal.events[-2] is before[-2], "its other events are still the objects journaled"
    journal.extend([TextDelta("late")])
    assert len(journal.events) == len(before), "settled: it takes no more"


def test_a_running_journal_holds_no_object_the_collector_tracks_per_delta() -> None:
    """Issue 25: a running journal kept each delta as an object for the turn's life — at 1 000 streams × 20 Hz twenty
    thousand a second that outlived the young collections, each walked by every full collection until the turn
    settled. It holds their text instead; what it reaches stays the same however many deltas it has."""

    def running(deltas: int) -> Journal:
        journal = Journal()
        tool = ToolStarted("call_1", "terminal", "{}", "terminal", "💻", 0.0)
        journal.extend([ReasoningDelta("thinking "), tool])
        for i in range(deltas):
            journal.extend([TextDelta(f"{i} ") if i % 2 else ReasoningDelta(f"{i} ")])
        return journal

    short, long = running(10), running(1000)
    gc.collect()
    assert tracked_reachable(long) == tracked_reachable(short)
    assert long.finished is None and len(long.events) == 1002
    assert long.events[2:4] == [ReasoningDelta("0 "), TextDelta("1 ")] and long.events[-1] == TextDelta("999 ")
    assert isinstance(long.events[1], ToolStarted) and long.events[1] is list(long.events)[1]


@pytest.mark.parametrize("seed", range(8))
def test_coalesced_events_fold_as_the_events_journaled(seed: int) -> None:
    """A settlement reads the journal coalesced — no object per delta (issue 25) — and must fold it exactly as the
    events journaled: the turn's messages with its reasoning, its answer, the requests it left unanswered."""
    pick = random.Random(seed)
    journal = Journal()
    for i in range(200):
        roll = pick.random()
        if roll < 0.45:
            event: Any = TextDelta(f"t{i} ")
        elif roll < 0.8:
            event = ReasoningDelta(f"r{i} ")
        elif roll < 0.85:
            event = ToolStarted(f"call_{i}", "terminal", "{}", "terminal", "💻", 0.0)
        elif roll < 0.9:
            event = ToolCompleted(f"call_{i - 1}", "terminal", "done", False, 3, stopped=pick.random() < 0.3)
        elif roll < 0.95:
            event = QuestionAsked(f"q{i}?")
        else:
            event = QuestionAnswered("yes")
        journal.extend([event])
    events = list(journal.events)
    coalesced = list(journal.events.coalesced())
    assert turn_messages((), coalesced) == turn_messages((), events)
    folded, expected = TurnTranscript().feed_all(coalesced), TurnTranscript().feed_all(events)
    assert (folded.answer, folded.reasoning) == (expected.answer, expected.reasoning)
    assert unanswered_requests(coalesced) == unanswered_requests(events)
    # one delta per run of one kind, every other event the very object journaled, in order
    assert "".join(e.text for e in coalesced if isinstance(e, TextDelta | ReasoningDelta)) == "".join(
        e.text for e in events if isinstance(e, TextDelta | ReasoningDelta)
    )
    assert all(type(a) is not type(b) for a, b in pairwise(coalesced) if isinstance(a, TextDelta | ReasoningDelta))
    others = [e for e in events if not isinstance(e, TextDelta | ReasoningDelta)]
    assert all(a is b for a, b in zip([e for e in coalesced if e in others], others, strict=True))


def test_a_journal_encodes_the_rows_its_events_encode_to_and_they_decode_back() -> None:
    """The durable saver writes a journal's rows from the deltas' text as held (no object made per delta): the same
    rows `encode_events` writes for those events, running or settled, from any start."""
    journal = Journal()
    tool = ToolStarted("call_1", "terminal", "{}", "terminal", "💻", 0.0)
    journal.extend([ReasoningDelta("why\u0000 "), TextDelta("é"), tool, TextDelta('"quoted"'), QuestionAsked("go?")])
    for start, end in ((0, 5), (2, 4), (3, 3)):
        assert encode_journal(journal, start, end) == encode_events(
            journal.events[start:end], journal.stamps[start:end]
        )
    journal.extend([TurnFinished(TurnStatus.COMPLETED)])
    rows = encode_journal(journal, 0, len(journal.events))
    assert rows == encode_events(list(journal.events), journal.stamps)
    assert list(decode_journal(rows).events) == list(journal.events)


async def test_a_parked_follower_takes_the_appended_objects_and_a_late_one_reads_them_too() -> None:
    journal = Journal()
    taken, task = await _parked_taking(journal)
    delta = TextDelta("live")
    journal.extend([delta])
    assert taken == [[delta]] and taken[0][0] is delta  # no copy on the live path
    late = journal.follow(0)
    assert await anext(late) == [delta]
    await late.aclose()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def test_a_frozen_journal_weighs_its_deltas_by_their_text() -> None:
    journal, before = _settled_journal(20)
    assert journal_bytes(journal.events) == journal_bytes(before)


async def test_a_follower_that_ends_leaves_no_cycle_for_the_garbage_collector() -> None:
    """Issue 25: its idle timer named itself, so every finished stream left its closures to a full collection."""
    journal = Journal()
    journal.extend([TextDelta("a"), TurnFinished(TurnStatus.COMPLETED)])
    gc.collect()
    gc.disable()
    try:
        async for _ in journal.follow(0, idle_timeout=5.0):
            pass
        assert gc.collect() == 0
    finally:
        gc.enable()


async def test_a_follower_closed_while_parked_with_a_timer_leaves_no_cycle_for_the_garbage_collector() -> None:
    """Issue 25: a follower is one object whose timer handle refers back to it; closing it while parked (its client
    left) cancels the handle and withdraws its offer, so nothing of it waits for a full collection."""
    journal = Journal()
    taken: list[list[Any]] = []
    follower = journal.follow(0, idle_timeout=5.0, take=lambda batch: taken.append(batch) or True)
    gc.collect()
    gc.disable()
    try:
        parked = asyncio.ensure_future(follower.__anext__())
        await asyncio.sleep(0)
        journal.extend([TextDelta("a")])
        assert taken == [[TextDelta("a")]] and not parked.done()
        parked.cancel()
        await asyncio.sleep(0)
        await follower.aclose()
        del follower, parked
        assert gc.collect() == 0
        # and no timer of it is left scheduled (the loop would keep it, re-armed every 5 s, for ever)
        assert [o for o in gc.get_objects() if inspect.ismethod(o) and type(o.__self__).__name__ == "_Follower"] == []
    finally:
        gc.enable()
