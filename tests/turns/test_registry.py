"""The turn registry: one terminal record per turn, cap and drain, interrupts, session queues, held turns."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref

import pluggy
import pytest

from hermes_api_plugin import hookspecs
from hermes_api_plugin.core.content import Message
from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.core.events import (
    Commentary,
    ReasoningDelta,
    StatusChanged,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
)
from hermes_api_plugin.runtimes.base import AgentTurn, TurnHooks, TurnResult
from hermes_api_plugin.runtimes.scripted import ScriptedRuntime, load_script
from hermes_api_plugin.turns import TurnRegistry
from hermes_api_plugin.turns.transcripts import session_transcripts
from tests.gateway.observer_plugin import Observer
from tests.helpers import kept_record, tracked_reachable, wait_for_async
from tests.turns.support import (
    SCRIPT,
    gateway_hooks,
    open_store,
    registry,
    request,
    started,
    tool_started,
)


async def test_registry_runs_a_turn_to_one_terminal_record_and_stores_the_exchange() -> None:
    store = await open_store()
    reg = await registry(store=store)
    turn = started(reg.admit(request("use tool")))
    finished = await asyncio.wait_for(turn.wait(), 5)
    assert finished.status is TurnStatus.COMPLETED
    assert sum(isinstance(e, TurnFinished) for e in turn.journal.events) == 1
    assert isinstance(turn.journal.events[0], StatusChanged)
    assert reg.active == 0
    history = await store.load_session_messages("s1")
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    call = history[1].tool_calls[0]
    assert (call.name, call.arguments) == ("terminal", '{"command":"ls -la"}')
    assert history[2].tool_call_id == call.id and history[2].text == "README.md\nsrc/"
    assert history[3].text == "Your project has README.md and src/."
    assert history[3].reasoning == "I should look at the files first.\n\nTwo entries."


async def test_what_a_turn_said_is_read_from_its_journal_once_per_length() -> None:
    """Issue 25: the session's transcript and a chat conversation's continuity key share one reading of the journal
    at settlement instead of folding it each."""
    store = await open_store()
    reg = await registry(store=store)
    turn = started(reg.admit(request("use tool")))
    await asyncio.wait_for(turn.wait(), 5)
    # dropped once settled: a client stalled on the stream keeps the turn, not its answer twice (test_stalled_readers)
    assert turn._said is None
    said = turn.said()
    assert turn.said() is said
    stored = await store.load_session_messages("s1")
    assert [(m.role, m.text, m.reasoning) for m in said] == [(m.role, m.text, m.reasoning) for m in stored[1:]]
    assert [m.role for m in said] == ["assistant", "tool", "assistant"]


async def test_registry_cap_rejects_with_429_and_drain_with_503() -> None:
    """W-1.9 (cap) / W-1.12 (drain)"""
    reg = await registry(max_concurrent=1)
    turn = started(reg.admit(request("hang", run="run_a")))
    with pytest.raises(ApiError) as capped:
        reg.admit(request("hi", run="run_b"))
    assert capped.value.status == 429 and capped.value.headers == {"Retry-After": "1"}
    await tool_started(turn)
    await reg.drain()
    assert turn.journal.finished is not None and turn.journal.finished.status is TurnStatus.CANCELLED
    stopped = [e for e in turn.journal.events if isinstance(e, ToolCompleted)]
    assert stopped and stopped[-1].stopped
    with pytest.raises(ApiError) as drained:
        reg.admit(request("hi", run="run_c"))
    assert drained.value.status == 503 and drained.value.code == "gateway_draining"


async def test_interrupt_settles_cancelled_within_100ms() -> None:
    reg = await registry()
    turn = started(reg.admit(request("hang")))
    await tool_started(turn)
    cancelled_at = time.monotonic()
    turn.cancel()
    finished = await asyncio.wait_for(turn.wait(), 1)
    assert time.monotonic() - cancelled_at < 0.1
    assert finished.status is TurnStatus.CANCELLED and finished.error_code == "cancelled"


async def test_turns_on_one_session_run_one_at_a_time_in_order() -> None:
    """§1.8: a second turn on the same session is queued until the first settles."""
    store = await open_store()
    reg = await registry(store=store)
    first = started(
        reg.admit(
            request("use tool", session="q", run="run_1"),
            queue_key="q",
            history=lambda: store.load_session_messages("q"),
        )
    )
    ran_with: list[Message] = []  # the second turn's history (a settled turn lets go of it: issue 20, defect 2)

    async def second_history() -> list[Message]:
        ran_with.extend(await store.load_session_messages("q"))
        return ran_with

    second = started(reg.admit(request("hello", session="q", run="run_2"), queue_key="q", history=second_history))
    await wait_for_async(lambda: first.status is TurnStatus.RUNNING, what="the first turn running")
    assert first.status is TurnStatus.RUNNING and second.status is TurnStatus.QUEUED
    await asyncio.wait_for(second.wait(), 5)
    assert first.journal.finished is not None
    assert [m.role for m in ran_with] == ["user", "assistant", "tool", "assistant"]
    assert ran_with[-1].text == "Your project has README.md and src/."


async def test_cancelling_a_queued_turn_settles_it_without_running() -> None:
    reg = await registry()
    first = started(reg.admit(request("hang", session="q", run="run_1"), queue_key="q"))
    second = started(reg.admit(request("hello", session="q", run="run_2"), queue_key="q"))
    await wait_for_async(lambda: first.status is TurnStatus.RUNNING, what="the first turn running")
    second.cancel()
    finished = await asyncio.wait_for(second.wait(), 1)
    assert finished.status is TurnStatus.CANCELLED
    assert not any(isinstance(e, StatusChanged) for e in second.journal.events)
    first.cancel()
    await asyncio.wait_for(first.wait(), 1)


async def test_held_turn_waits_for_release() -> None:
    reg = await registry()
    held = reg.admit(request("hello"))
    turn = held.turn
    await asyncio.sleep(0.05)
    assert turn.journal.events == []
    held.start()
    assert (await asyncio.wait_for(turn.wait(), 5)).status is TurnStatus.COMPLETED


async def test_unstreamed_final_answer_is_appended_as_text() -> None:
    """W-3.15"""
    reg = await registry()
    turn = started(reg.admit(request("final only")))
    await asyncio.wait_for(turn.wait(), 5)
    texts = [e.text for e in turn.journal.events if isinstance(e, TextDelta)]
    assert "".join(texts) == "Streamed part. Unstreamed rest."
    assert texts[-1] == "Unstreamed rest."


async def test_runtime_crash_settles_failed() -> None:
    class Broken(ScriptedRuntime):
        async def run(self, turn: AgentTurn) -> TurnResult:
            raise RuntimeError("kaput")

    reg = TurnRegistry(
        Broken(load_script(SCRIPT)), session_transcripts(await open_store()), gateway_hooks(), max_concurrent=1
    )
    finished = await asyncio.wait_for(started(reg.admit(request("x"))).wait(), 2)
    assert finished.status is TurnStatus.FAILED and finished.error_code == "agent_error"
    assert "kaput" in (finished.error_message or "")


async def test_a_held_turn_left_without_start_is_cancelled_and_frees_its_slot() -> None:
    """Issue 11: the block around a held turn either starts it or cancels it; it never stays queued."""
    reg = await registry(max_concurrent=1)
    held = reg.admit(request("use tool"))
    with pytest.raises(ConnectionResetError):
        async with held:
            raise ConnectionResetError("the head could not be written")
    finished = await asyncio.wait_for(held.turn.wait(), 2)
    assert finished.status is TurnStatus.CANCELLED
    assert not any(isinstance(e, StatusChanged) for e in held.turn.journal.events), "the agent never ran"
    await wait_for_async(lambda: reg.active == 0, what="the slot freed")
    async with reg.admit(request("hello", run="run_2")) as turn:
        pass  # a block left without start(): also cancelled
    assert (await asyncio.wait_for(turn.wait(), 2)).status is TurnStatus.CANCELLED


async def test_a_started_held_turn_runs_to_its_end() -> None:
    reg = await registry()
    held = reg.admit(request("hello"))
    async with held as turn:
        held.start()
    assert (await asyncio.wait_for(turn.wait(), 5)).status is TurnStatus.COMPLETED


async def test_stop_interrupts_an_unsettled_turn_and_knows_no_other() -> None:
    reg = await registry()
    turn = started(reg.admit(request("hang")))
    await tool_started(turn)
    assert reg.stop(turn.run_id) is turn
    assert (await asyncio.wait_for(turn.wait(), 2)).status is TurnStatus.CANCELLED
    assert reg.stop(turn.run_id) is None
    assert (await kept_record(reg, turn.run_id)).journal is turn.journal, "a settled run stays readable"


async def test_a_stopped_turn_reads_as_its_end_while_that_is_being_stored() -> None:
    """Another gateway follows the stored journal, so it sees the terminal record once it is stored, before this
    journal ends: meanwhile this gateway answers the decided status too, never "stopping" (cluster test (d))."""
    reg = await registry()
    stored = asyncio.Event()
    release = asyncio.Event()

    async def persist(turn: object, finished: TurnFinished) -> None:
        stored.set()
        await release.wait()

    turn = started(reg.admit(request("hang"), persist=persist))
    await tool_started(turn)
    turn.cancel()
    assert turn.stopping
    await asyncio.wait_for(stored.wait(), 2)
    assert turn.journal.finished is None
    assert (turn.status, turn.stopping) == (TurnStatus.CANCELLED, False)
    release.set()
    assert (await asyncio.wait_for(turn.wait(), 2)).status is TurnStatus.CANCELLED


async def test_a_settled_turn_lets_go_of_the_runtime_so_a_late_interrupt_reaches_nothing() -> None:
    """A settled run stays readable for an hour; its runtime state must not stay with it. The scripted runtime's
    interrupt listener closed over its playback (the 4 MB final answer of a big turn: the load test
    tests/load/test_stalled_readers.py measured 170 MB kept by 20 settled turns), and the Hermes runtime's over the
    agent handle, which a client leaving after the end would interrupt while the agent runs the next turn."""
    interrupts: list[TurnResult] = []
    answers: list[weakref.ref[TurnResult]] = []

    class Listening(ScriptedRuntime):
        async def run(self, turn: AgentTurn) -> TurnResult:
            outcome = TurnResult(TurnStatus.COMPLETED, "the answer")
            answers.append(weakref.ref(outcome))
            turn.on_interrupt(lambda: interrupts.append(outcome))
            return outcome

    reg = TurnRegistry(
        Listening(load_script(SCRIPT)), session_transcripts(await open_store()), gateway_hooks(), max_concurrent=1
    )
    turn = started(reg.admit(request("x")))
    assert (await asyncio.wait_for(turn.wait(), 2)).status is TurnStatus.COMPLETED
    await kept_record(reg, turn.run_id)
    turn.cancel()  # e.g. on_client_gone for a client that stalled until after the end
    assert interrupts == []
    gc.collect()
    assert answers[0]() is None, "the settled turn still holds the runtime's outcome"


# -- issue 21, part 5: the turn hooks observe; the registry attaches each turn's sink ------------------------------


def _stream(events: list[TurnEvent]) -> list[tuple[object, ...]]:
    """What a turn streams, independent of timing: adjacent deltas joined, tools by name, arguments and result."""
    shown: list[tuple[object, ...]] = []
    for event in events:
        if isinstance(event, ReasoningDelta | TextDelta) and shown and shown[-1][0] == type(event).__name__:
            shown[-1] = (shown[-1][0], str(shown[-1][1]) + event.text)
        elif isinstance(event, ReasoningDelta | TextDelta | Commentary):
            shown.append((type(event).__name__, event.text))
        elif isinstance(event, ToolStarted):
            shown.append(("ToolStarted", event.name, event.arguments))
        elif isinstance(event, ToolCompleted):
            shown.append(("ToolCompleted", event.name, event.result, event.is_error))
        elif isinstance(event, TurnFinished):
            shown.append(("TurnFinished", event.status, event.error_code))
    return shown


async def _streamed(hooks: TurnHooks, text: str) -> list[tuple[object, ...]]:
    reg = TurnRegistry(
        ScriptedRuntime(load_script(SCRIPT)), session_transcripts(await open_store()), hooks, max_concurrent=1
    )
    turn = started(reg.admit(request(text)))
    await asyncio.wait_for(turn.wait(), 5)
    return _stream(list(turn.journal.events))


async def test_a_second_plugin_in_the_turn_hooks_leaves_the_stream_intact_and_sees_the_turn() -> None:
    """Issue 21, part 5: a plugin implementing the turn hooks — one that even installs callbacks of its own on the
    turn after every other implementation, as the old contract invited — observes the turn; the turn still streams
    its reasoning, tools, commentary and text, exactly as with this plugin alone."""
    alone = await _streamed(gateway_hooks(), "use tool")
    kinds = [shown[0] for shown in alone]
    assert {"ReasoningDelta", "ToolStarted", "ToolCompleted", "Commentary", "TextDelta"} <= set(kinds)
    observer = Observer()
    assert await _streamed(gateway_hooks(observer), "use tool") == alone
    assert observer.calls == [
        {"hook": "hermes_api_agent_turn_start", "turn_id": "run_1", "input": "use tool"},
        {"hook": "hermes_api_agent_turn_end", "turn_id": "run_1", "status": "completed"},
    ]


async def test_a_plugin_whose_turn_hooks_raise_is_logged_and_the_turn_streams_as_without_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    alone = await _streamed(gateway_hooks(), "use tool")
    failing = Observer(fail=True)
    assert await _streamed(gateway_hooks(failing), "use tool") == alone
    assert [call["hook"] for call in failing.calls] == ["hermes_api_agent_turn_start", "hermes_api_agent_turn_end"]
    failures = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert failures == [
        "[API Server] a plugin's hermes_api_agent_turn_start failed on turn run_1",
        "[API Server] a plugin's hermes_api_agent_turn_end failed on turn run_1",
    ]


async def test_a_turn_streams_with_no_plugin_implementing_the_turn_hooks() -> None:
    """The sink is the turn's own, not something a hook installs: a relay with the specs and no turn hookimpl at
    all (this plugin implements none) still streams every kind of event."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs.GatewaySpec)
    assert not pm.hook.hermes_api_agent_turn_start.get_hookimpls()
    shown = await _streamed(pm.hook, "use tool")
    assert [kind for kind, *_ in shown] == [
        "ReasoningDelta",
        "ToolStarted",
        "ToolCompleted",
        "Commentary",
        "ReasoningDelta",
        "TextDelta",
        "TurnFinished",
    ]


async def test_a_kept_settled_turn_is_a_record_of_its_journal_and_ids_and_lets_go_of_the_turn() -> None:
    """Issue 25: what a kept turn holds, every full garbage collection walks (the 1 000-stream p99 stall): the turn
    that ran — its task, callbacks, sink, suspensions — goes; its record keeps the journal, deltas packed."""

    class Chatty(ScriptedRuntime):
        async def run(self, turn: AgentTurn) -> TurnResult:
            reasoning = turn.callbacks.reasoning
            assert reasoning is not None
            for i in range(100):  # alternating kinds: each delta is its own journal event
                reasoning(f"{i} ")
                turn.callbacks.text(f"{i} ")
            return TurnResult(TurnStatus.COMPLETED)

    reg = TurnRegistry(
        Chatty(load_script(SCRIPT)), session_transcripts(await open_store()), gateway_hooks(), max_concurrent=1
    )
    turn = started(reg.admit(request("x")))
    run_id, gone = turn.run_id, weakref.ref(turn)
    await asyncio.wait_for(turn.wait(), 2)
    streamed = list(turn.journal.events)
    kept = await kept_record(reg, run_id)
    gc.collect()
    gc.disable()  # freed as it goes: no cycle left to the collector either
    try:
        del turn
        assert gone() is None, "the registry (or a cycle) still holds the turn that ran"
    finally:
        gc.enable()
    assert sum(isinstance(e, TextDelta | ReasoningDelta) for e in streamed) == 200
    assert kept.status is TurnStatus.COMPLETED and list(kept.journal.events) == streamed
    assert tracked_reachable(kept) < 25
