"""Turn journal, the thread-safe callback bridge, and the registry that runs and settles turns."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_api_plugin.content import Message, TextPart
from hermes_api_plugin.errors import ApiError
from hermes_api_plugin.events import (
    StatusChanged,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnFinished,
    TurnStatus,
)
from hermes_api_plugin.runtimes.base import AgentTurn, TurnOutcome, TurnRequest
from hermes_api_plugin.runtimes.scripted import ScriptedRuntime, load_script
from hermes_api_plugin.store import MemoryStore, SessionStore
from hermes_api_plugin.turns import HeldTurn, Journal, Turn, TurnBridge, TurnRegistry, display_tool_name
from hermes_api_plugin.turns.transcripts import session_transcripts
from tests.helpers import wait_for_async

SCRIPT = Path(__file__).parent / "scripts" / "chat.yaml"


async def tool_started(turn: Turn) -> None:
    """Wait until the turn's tool runs (its journal has the ToolStarted event)."""
    await wait_for_async(lambda: any(isinstance(e, ToolStarted) for e in turn.journal.events), what="the tool start")


class PluginHooks:
    """The plugin's own hookimpls, called directly (the pluggy path is covered in test_plugin)."""

    def __init__(self) -> None:
        from hermes_api_plugin import plugin

        self._plugin = plugin
        self.ends = 0

    def hermes_api_agent_turn_start(self, *, turn: AgentTurn) -> None:
        self._plugin.hermes_api_agent_turn_start(turn=turn)

    def hermes_api_agent_turn_end(self, *, turn: AgentTurn, outcome: TurnOutcome) -> None:
        self.ends += 1
        self._plugin.hermes_api_agent_turn_end(turn=turn, outcome=outcome)


def request(text: str, session: str = "s1", run: str = "run_1") -> TurnRequest:
    return TurnRequest(turn_id=run, session_id=session, input=Message("user", (TextPart(text),)))


async def open_store() -> SessionStore:
    """The session store the registry writes transcripts to (over an in-memory database)."""
    store = MemoryStore()
    await store.open()
    return store.sessions


async def registry(max_concurrent: int = 10, store: Any = None) -> TurnRegistry:
    runtime = ScriptedRuntime(load_script(SCRIPT))
    return TurnRegistry(
        runtime, session_transcripts(store or await open_store()), PluginHooks(), max_concurrent=max_concurrent
    )


def started(held: HeldTurn) -> Turn:
    """A turn let run at once, as a surface does once its head is out."""
    held.start()
    return held.turn


# -- journal -----------------------------------------------------------------------------------------


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
    assert journal.events == [TurnFinished(TurnStatus.CANCELLED)]
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


# -- bridge ------------------------------------------------------------------------------------------


async def test_bridge_callbacks_from_many_threads_all_arrive_in_per_thread_order() -> None:
    loop = asyncio.get_running_loop()
    journal = Journal()
    bridge = TurnBridge(loop, journal)

    def produce(tag: str) -> None:
        for i in range(500):
            bridge.on_text(f"{tag}{i};")

    threads = [threading.Thread(target=produce, args=(t,)) for t in "abcd"]
    for thread in threads:
        thread.start()
    # The loop keeps flushing while the threads produce; close() converts whatever is still pending.
    await wait_for_async(
        lambda: not any(t.is_alive() for t in threads), interval=0.001, what="the producer threads' end"
    )
    bridge.close()
    text = "".join(e.text for e in journal.events if isinstance(e, TextDelta))
    for tag in "abcd":
        assert re.findall(rf"{tag}(\d+);", text) == [str(i) for i in range(500)]
    assert len(journal.events) < 2000  # adjacent deltas were coalesced


async def test_bridge_drops_empty_deltas_and_late_callbacks() -> None:
    journal = Journal()
    bridge = TurnBridge(asyncio.get_running_loop(), journal)
    bridge.on_reasoning("")
    bridge.on_text(None)
    bridge.on_text("x")
    bridge.close()
    bridge.on_text("after close")
    await asyncio.sleep(0.01)
    assert journal.events == [TextDelta("x")]


async def test_bridge_normalises_tool_ids_and_hides_underscore_tools() -> None:
    """W-3.16 / W-3.6"""
    journal = Journal()
    bridge = TurnBridge(asyncio.get_running_loop(), journal)
    bridge.on_tool_start("call_ok", "terminal", {"command": "ls"})
    bridge.on_tool_start("call_ok", "terminal", {"command": "pwd"})  # repeated id → substituted
    bridge.on_tool_start(None, "web_search", {"query": "x"})  # missing id → substituted
    bridge.on_tool_start("_h", "_hidden", {})
    bridge.on_tool_complete("_h", "_hidden", "x", False)
    bridge.on_tool_complete("nope", "unknown_tool", "x", False)  # orphan → dropped
    bridge.on_tool_complete(None, "web_search", "found", False)  # matched by name
    bridge.on_tool_complete("call_ok", "terminal", "a", False)
    bridge.on_tool_complete("call_ok", "terminal", "b", True)
    bridge.close()
    started = [e for e in journal.events if isinstance(e, ToolStarted)]
    completed = [e for e in journal.events if isinstance(e, ToolCompleted)]
    assert [s.name for s in started] == ["terminal", "terminal", "web_search"]
    assert started[0].call_id == "call_ok"
    assert all(re.fullmatch(r"call_[0-9a-f]{24}", s.call_id) for s in started[1:])
    assert len({s.call_id for s in started}) == 3
    assert [c.call_id for c in completed] == [started[2].call_id, started[0].call_id, started[1].call_id]
    assert [c.result for c in completed] == ["found", "a", "b"]
    assert started[0].label == "ls" and started[2].label == "x"


def test_display_tool_name_escapes_and_cuts() -> None:
    """W-3.16"""
    assert display_tool_name("terminal") == "terminal"
    assert display_tool_name("wérk tool") == "w\\u00e9rk\\u0020tool"
    assert display_tool_name("😀") == "\\ud83d\\ude00"
    assert len(display_tool_name("é" * 300)) == 256


async def test_bridge_stop_open_tools_reports_running_tools_as_stopped() -> None:
    journal = Journal()
    bridge = TurnBridge(asyncio.get_running_loop(), journal)
    bridge.on_tool_start("c1", "terminal", {"command": "sleep 9"})
    bridge.flush()
    time.sleep(0.02)
    (stopped,) = bridge.stop_open_tools()
    assert isinstance(stopped, ToolCompleted)
    assert stopped.call_id == "c1" and stopped.stopped and stopped.is_error and stopped.duration_ms >= 20


# -- registry ----------------------------------------------------------------------------------------


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
    second = started(
        reg.admit(
            request("hello", session="q", run="run_2"), queue_key="q", history=lambda: store.load_session_messages("q")
        )
    )
    await wait_for_async(lambda: first.status is TurnStatus.RUNNING, what="the first turn running")
    assert first.status is TurnStatus.RUNNING and second.status is TurnStatus.QUEUED
    await asyncio.wait_for(second.wait(), 5)
    assert first.journal.finished is not None
    assert [m.role for m in second.request.history] == ["user", "assistant", "tool", "assistant"]
    assert second.request.history[-1].text == "Your project has README.md and src/."


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
        async def run(self, turn: AgentTurn) -> TurnOutcome:
            raise RuntimeError("kaput")

    reg = TurnRegistry(
        Broken(load_script(SCRIPT)), session_transcripts(await open_store()), PluginHooks(), max_concurrent=1
    )
    finished = await asyncio.wait_for(started(reg.admit(request("x"))).wait(), 2)
    assert finished.status is TurnStatus.FAILED and finished.error_code == "agent_error"
    assert "kaput" in (finished.error_message or "")
