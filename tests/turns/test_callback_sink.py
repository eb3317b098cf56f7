"""The callback sink (turns/callback_sink.py): thread-safe enqueue, tool id normalisation, coalescing, stopped tools."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Any, cast

from hermes_api_plugin.core.events import (
    ReasoningDelta,
    TextDelta,
    ToolCompleted,
    ToolStarted,
)
from hermes_api_plugin.turns import CallbackSink, Journal, display_tool_name
from hermes_api_plugin.turns.callback_sink import COALESCE_S, IN_PLACE_DELTAS
from tests.helpers import wait_for_async


async def test_sink_callbacks_from_many_threads_all_arrive_in_per_thread_order() -> None:
    loop = asyncio.get_running_loop()
    journal = Journal()
    sink = CallbackSink(loop, journal)

    def produce(tag: str) -> None:
        for i in range(500):
            sink.on_text(f"{tag}{i};")

    threads = [threading.Thread(target=produce, args=(t,)) for t in "abcd"]
    for thread in threads:
        thread.start()
    # The loop keeps flushing while the threads produce; close() converts whatever is still pending.
    await wait_for_async(
        lambda: not any(t.is_alive() for t in threads), interval=0.001, what="the producer threads' end"
    )
    sink.close()
    text = "".join(e.text for e in journal.events if isinstance(e, TextDelta))
    for tag in "abcd":
        assert re.findall(rf"{tag}(\d+);", text) == [str(i) for i in range(500)]
    assert len(journal.events) < 2000  # adjacent deltas were coalesced


async def test_sink_drops_empty_deltas_and_late_callbacks() -> None:
    journal = Journal()
    sink = CallbackSink(asyncio.get_running_loop(), journal)
    sink.on_reasoning("")
    sink.on_text(None)
    sink.on_text("x")
    sink.close()
    sink.on_text("after close")
    await asyncio.sleep(0.01)
    assert journal.events == [TextDelta("x")]


async def test_sink_normalises_tool_ids_and_hides_underscore_tools() -> None:
    """W-3.16 / W-3.6"""
    journal = Journal()
    sink = CallbackSink(asyncio.get_running_loop(), journal)
    sink.on_tool_start("call_ok", "terminal", {"command": "ls"})
    sink.on_tool_start("call_ok", "terminal", {"command": "pwd"})  # repeated id → substituted
    sink.on_tool_start(None, "web_search", {"query": "x"})  # missing id → substituted
    sink.on_tool_start("_h", "_hidden", {})
    sink.on_tool_complete("_h", "_hidden", "x", False)
    sink.on_tool_complete("nope", "unknown_tool", "x", False)  # orphan → dropped
    sink.on_tool_complete(None, "web_search", "found", False)  # matched by name
    sink.on_tool_complete("call_ok", "terminal", "a", False)
    sink.on_tool_complete("call_ok", "terminal", "b", True)
    sink.close()
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


async def test_sink_stop_open_tools_reports_running_tools_as_stopped() -> None:
    journal = Journal()
    sink = CallbackSink(asyncio.get_running_loop(), journal)
    sink.on_tool_start("c1", "terminal", {"command": "sleep 9"})
    sink.flush()
    time.sleep(0.02)
    (stopped,) = sink.stop_open_tools()
    assert isinstance(stopped, ToolCompleted)
    assert stopped.call_id == "c1" and stopped.stopped and stopped.is_error and stopped.duration_ms >= 20


# -- registry ----------------------------------------------------------------------------------------


class _SetClock:
    """The running loop, but `time()` is what the test sets: the sink reads its burst window from it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.now = loop.time()

    def time(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop, name)


async def test_a_loop_thread_callback_after_a_quiet_spell_is_journaled_in_the_call() -> None:
    """An in-loop runtime's delta reaches the journal (and every stream writing in place) before its callback returns:
    no loop iteration between them (issue 25); so do the next IN_PLACE_DELTAS within the burst window (a runtime
    catching up with its schedule in one step), and only the ones after them wait for the window's flush."""
    journal = Journal()
    clock = _SetClock(asyncio.get_running_loop())
    sink = CallbackSink(cast(asyncio.AbstractEventLoop, clock), journal)
    sink.on_text("now")
    assert journal.events == [TextDelta("now")]
    caught_up = [TextDelta(str(i)) for i in range(IN_PLACE_DELTAS)]
    for delta in caught_up:
        sink.on_text(delta.text)
    assert journal.events == [TextDelta("now"), *caught_up]
    sink.on_text("a")
    sink.on_text("b")
    assert len(journal.events) == 1 + IN_PLACE_DELTAS
    await wait_for_async(lambda: len(journal.events) == 2 + IN_PLACE_DELTAS, interval=0.001, what="the window's flush")
    assert journal.events[-1] == TextDelta("ab")
    clock.now += COALESCE_S  # a quiet spell: the next delta opens a window of its own
    sink.on_text("later")
    assert journal.events[-1] == TextDelta("later")


async def test_a_callback_opening_a_burst_from_another_thread_returns_once_the_loop_journaled_it() -> None:
    """The agent's thread hands a burst after a quiet spell to the loop and waits, letting go of the interpreter lock,
    until the loop has journaled it (issue 25): it cannot go on parsing while the loop waits for the lock."""
    journal = Journal()
    sink = CallbackSink(asyncio.get_running_loop(), journal, handoff_s=30)
    seen: list[list[object]] = []

    def agent() -> None:
        sink.on_reasoning("first")
        seen.append(list(journal.events))  # what the journal held when the callback returned

    thread = threading.Thread(target=agent)
    thread.start()
    thread.join(0.2)  # this coroutine blocks the loop meanwhile: the burst cannot be journaled yet
    assert thread.is_alive() and journal.events == []
    await wait_for_async(lambda: not thread.is_alive(), what="the callback's return")
    assert seen == [[ReasoningDelta("first")]]


async def test_a_callback_waits_for_a_busy_loop_no_longer_than_the_handoff_time() -> None:
    journal = Journal()
    sink = CallbackSink(asyncio.get_running_loop(), journal, handoff_s=0.01)
    thread = threading.Thread(target=sink.on_reasoning, args=("first",))
    thread.start()
    thread.join(10)  # the loop stays blocked all along
    assert not thread.is_alive() and journal.events == []
    await wait_for_async(lambda: journal.events == [ReasoningDelta("first")], what="the loop's flush")


async def test_deltas_of_one_kind_join_one_event_and_kinds_keep_their_order() -> None:
    """A burst of same-kind deltas becomes one event (one DeltaRun under the lock); a change of kind or a tool
    between them starts a new one, so the journal keeps the agent's order."""
    journal = Journal()
    sink = CallbackSink(asyncio.get_running_loop(), journal, in_place_deltas=0)
    sink.on_text("first")  # journaled at once: what follows is a burst
    for text in ("I ", "think"):
        sink.on_reasoning(text)
    sink.on_text("Hel")
    sink.on_text("lo")
    sink.on_reasoning("more")
    sink.on_tool_start("call_1", "terminal", {"command": "ls"})
    sink.on_reasoning("again")  # after the tool: a run of its own, not the end of "more"
    sink.on_text(" wor")
    sink.flush()
    sink.on_text("ld")  # the journaled run is closed: a new one
    sink.close()
    kinds = [(type(e).__name__, getattr(e, "text", None)) for e in journal.events]
    assert kinds == [
        ("TextDelta", "first"),
        ("ReasoningDelta", "I think"),
        ("TextDelta", "Hello"),
        ("ReasoningDelta", "more"),
        ("ToolStarted", None),
        ("ReasoningDelta", "again"),
        ("TextDelta", " wor"),
        ("TextDelta", "ld"),
    ]
