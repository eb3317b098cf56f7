"""Suspended turns (WIRE.md §15.1): TurnSuspensions over a real callback sink and journal — an answer resolves a
request once, no answer within the (injected) suspend time, an interrupt or a decline resolves it negatively —, the
registry resolving a suspended turn negatively on stop and drain, and the journal saver committing a request at once."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.core.events import (
    ApprovalRequested,
    ApprovalResponded,
    QuestionAnswered,
    QuestionAsked,
    TextDelta,
    ToolCallAnswered,
    ToolCallRequested,
    ToolCompleted,
    TurnFinished,
    TurnStatus,
    TurnTranscript,
    required_action,
)
from hermes_api_plugin.runtimes.scripted import ScriptedRuntime, load_script
from hermes_api_plugin.store import MemoryStore
from hermes_api_plugin.turns import Journal, TurnCounts, TurnRegistry
from hermes_api_plugin.turns.callback_sink import CallbackSink
from hermes_api_plugin.turns.durable import JournalSaver
from hermes_api_plugin.turns.suspension import TurnSuspensions
from hermes_api_plugin.turns.transcripts import session_transcripts
from tests.helpers import wait_for_async

from .support import gateway_hooks, open_store, request, started

SUSPEND_SCRIPT = Path(__file__).parents[1] / "scripts" / "suspend.yaml"
CHOICES = ("once", "session", "deny")


def suspensions(suspend_s: float = 30.0) -> tuple[TurnSuspensions, Journal]:
    journal = Journal()
    return TurnSuspensions(
        asyncio.get_running_loop(), CallbackSink(asyncio.get_running_loop(), journal), suspend_s
    ), journal


async def asked(journal: Journal) -> None:
    await wait_for_async(lambda: required_action(journal.events) is not None, what="the request")


async def test_an_answer_resolves_the_question_once() -> None:
    waits, journal = suspensions()
    task = asyncio.ensure_future(waits.question("Which branch?", ("main",)))
    await asked(journal)
    assert waits.pending == 1 and journal.events == [QuestionAsked("Which branch?", ("main",))]
    assert waits.answer("main") is True
    assert journal.events[-1] == QuestionAnswered("main")  # journaled before the answer returns
    assert waits.answer("release") is False  # answered once: a second answer finds nothing pending
    assert await task == "main" and waits.pending == 0
    assert waits.resolve("once", True) == 0  # no approval pends either


async def test_approvals_resolve_oldest_first_or_all() -> None:
    waits, journal = suspensions()
    first = asyncio.ensure_future(waits.approval("rm a", "delete", CHOICES))
    second = asyncio.ensure_future(waits.approval("rm b", "delete", CHOICES))
    await wait_for_async(lambda: waits.pending == 2, what="two requests")
    assert journal.events[0] == ApprovalRequested("rm a", "delete", CHOICES, suspended=True)
    assert waits.answer("yes") is False  # an approval is no question
    assert waits.resolve("once", False) == 1
    assert await first == "once" and not second.done()
    assert waits.resolve("session", True) == 1
    assert await second == "session"
    assert [e for e in journal.events if isinstance(e, ApprovalResponded)] == [
        ApprovalResponded("once"),
        ApprovalResponded("session"),
    ]


async def test_no_answer_within_the_suspend_time_is_negative() -> None:
    waits, journal = suspensions(suspend_s=0.01)  # the injected bound: no test waits 900 s
    assert await waits.approval("rm -rf /", "delete", CHOICES) == "deny"
    assert await waits.question("Which branch?") is None
    assert journal.events[1::2] == [ApprovalResponded("deny"), QuestionAnswered(None)]
    assert waits.pending == 0


async def test_an_interrupt_from_another_thread_declines_pending_and_later_requests() -> None:
    waits, journal = suspensions()
    task = asyncio.ensure_future(waits.approval("rm -rf /", "delete", CHOICES))
    await asked(journal)
    thread = threading.Thread(target=waits.interrupted)
    thread.start()
    thread.join()
    assert await asyncio.wait_for(task, 5) == "deny"
    assert await asyncio.wait_for(waits.question("Still there?"), 5) is None  # over: resolved at once
    assert journal.events[-1] == QuestionAnswered(None) and waits.pending == 0


async def test_decline_and_a_cancelled_wait_resolve_negatively_once() -> None:
    waits, journal = suspensions()
    task = asyncio.ensure_future(waits.question("Which branch?"))
    await asked(journal)
    assert waits.decline() == 1 and await task is None
    cancelled = asyncio.ensure_future(waits.approval("rm -rf /", "delete", CHOICES))
    await wait_for_async(lambda: waits.pending == 1, what="the request")
    cancelled.cancel()  # the runtime's playback stopped while it waited
    await asyncio.gather(cancelled, return_exceptions=True)
    assert waits.resolve("once", True) == 0  # too late: it never runs
    answers = [e for e in journal.events if isinstance(e, (ApprovalResponded, QuestionAnswered))]
    assert answers == [QuestionAnswered(None), ApprovalResponded("deny")]


async def suspend_registry(suspend_s: float = 30.0, max_concurrent: int = 10, max_waiting: int = 100) -> TurnRegistry:
    runtime = ScriptedRuntime(load_script(SUSPEND_SCRIPT))
    return TurnRegistry(
        runtime,
        session_transcripts(await open_store()),
        gateway_hooks(),
        max_concurrent=max_concurrent,
        suspend_s=suspend_s,
        max_waiting=max_waiting,
    )


async def test_stop_and_drain_deny_a_suspended_approval_and_settle_cancelled() -> None:
    reg = await suspend_registry()
    stopped = started(reg.admit(request("delete the build", session="s1", run="run_stop")))
    drained = started(reg.admit(request("deploy", session="s2", run="run_drain")))
    for turn in (stopped, drained):
        await wait_for_async(lambda turn=turn: turn.required_action is not None, what="the suspension")
    assert isinstance(stopped.required_action, ApprovalRequested) and isinstance(drained.required_action, QuestionAsked)
    reg.stop("run_stop")
    assert (await asyncio.wait_for(stopped.wait(), 5)).status is TurnStatus.CANCELLED
    await asyncio.wait_for(reg.drain(grace_s=5), 10)
    assert (await asyncio.wait_for(drained.wait(), 5)).status is TurnStatus.CANCELLED
    stop_events, drain_events = stopped.journal.events, drained.journal.events
    assert [e for e in stop_events if isinstance(e, ApprovalResponded)] == [ApprovalResponded("deny")]
    assert [e for e in drain_events if isinstance(e, QuestionAnswered)] == [QuestionAnswered(None)]
    for events in (stop_events, drain_events):
        assert isinstance(events[-1], TurnFinished) and required_action(events) is None
    # the denied command never ran: its terminal tool was stopped by the end of the turn
    assert [(e.name, e.stopped) for e in stop_events if isinstance(e, ToolCompleted)] == [("terminal", True)]


async def test_the_registry_bounds_the_wait_with_its_suspend_time() -> None:
    reg = await suspend_registry(suspend_s=0.05)
    turn = started(reg.admit(request("deploy", run="run_timeout")))
    finished = await asyncio.wait_for(turn.wait(), 10)
    assert finished.status is TurnStatus.COMPLETED
    assert [e for e in turn.journal.events if isinstance(e, QuestionAnswered)] == [QuestionAnswered(None)]


async def test_a_turn_waiting_for_its_client_holds_no_slot_and_the_longest_waiting_goes_past_the_bound() -> None:
    """Clients abandon a function_call as OpenAI lets them: turns waiting for an answer must not lock new work out
    until they time out. They have their own bound; an answered turn works again and counts against the cap."""
    reg = await suspend_registry(max_concurrent=1, max_waiting=2)
    turns = []
    for run in ("run_a", "run_b", "run_c"):  # each admitted at cap 1: the ones before it wait for their clients
        turn = started(reg.admit(request("deploy", session=run, run=run)))
        await wait_for_async(lambda turn=turn: turn.required_action is not None, what=f"{run} asks")
        turns.append(turn)
    first, second, third = turns
    assert (await asyncio.wait_for(first.wait(), 5)).status is TurnStatus.COMPLETED  # past the bound of 2
    assert [e for e in first.journal.events if isinstance(e, QuestionAnswered)] == [QuestionAnswered(None)]
    assert reg.counts() == TurnCounts(running=2, queued=0, waiting=2)
    assert second.suspensions.answer("main")  # it works again (0.3 s): the one slot is taken
    with pytest.raises(ApiError) as capped:
        reg.admit(request("hello", session="s_d", run="run_d"))
    assert capped.value.status == 429
    assert (await asyncio.wait_for(second.wait(), 5)).status is TurnStatus.COMPLETED
    assert TurnTranscript().feed_all(second.journal.events).answer == "Deploying main."
    assert third.required_action is not None and reg.counts().waiting == 1
    await asyncio.wait_for(reg.drain(grace_s=5), 10)


async def test_a_request_to_the_client_is_made_durable_at_once() -> None:
    """A suspended turn may wait many minutes: its request is committed at once, not after the saver's interval, so
    a restart (W-15.4) or another gateway sees what it waits for."""
    store = MemoryStore()
    await store.open()
    saver = JournalSaver(store, interval=3600.0)  # only an immediate flush can store anything in this test
    journal = Journal()
    saver.watch("run_1", journal)
    journal.extend([TextDelta("Cleaning up.")])
    await asyncio.sleep(0.05)
    assert await store.load_journal("run_1") == []  # ordinary events wait for the interval
    journal.extend([ApprovalRequested("rm -rf build/", "delete", CHOICES, suspended=True)])
    stored = await wait_for_async(lambda: store.load_journal("run_1"), until=lambda events: len(events) == 2)
    assert len(stored) == 2
    journal.extend([QuestionAsked("Which branch?")])
    await wait_for_async(lambda: store.load_journal("run_1"), until=lambda events: len(events) == 3)
    await saver.close()
    await store.close()


async def test_a_client_tool_call_waits_for_its_output_by_call_id() -> None:
    """§15.1: the call's output by its id returns to the agent once; an output for another id finds nothing."""
    waits, journal = suspensions()
    task = asyncio.ensure_future(waits.tool_call("call_1", "get_weather", '{"city":"Paris"}'))
    await asked(journal)
    assert waits.pending_calls() == ("call_1",)
    assert journal.events == [ToolCallRequested("call_1", "get_weather", '{"city":"Paris"}')]
    assert waits.tool_output("call_2", "x") is False
    assert waits.tool_output("call_1", "sunny") is True and waits.tool_output("call_1", "again") is False
    assert await task == "sunny" and journal.events[-1] == ToolCallAnswered("call_1", "sunny")
    assert waits.pending_calls() == ()


async def test_a_declined_tool_call_returns_no_output_and_held_approvals_do_not_suspend() -> None:
    waits, journal = suspensions()
    call = asyncio.ensure_future(waits.tool_call("call_1", "f", "{}"))
    await asked(journal)
    assert waits.decline() == 1 and await call is None
    assert journal.events[-1] == ToolCallAnswered("call_1", None)
    held = TurnSuspensions(
        asyncio.get_running_loop(), CallbackSink(asyncio.get_running_loop(), journal), 30.0, hold_approvals=True
    )
    approval = asyncio.ensure_future(held.approval("rm x", "", CHOICES))
    await wait_for_async(lambda: isinstance(journal.events[-1], ApprovalRequested), what="the held request")
    assert journal.events[-1].suspended is False and required_action(journal.events) is None  # type: ignore[union-attr]
    assert held.resolve("once", False) == 1 and await approval == "once"
