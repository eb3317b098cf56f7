"""The benchmark runtime: the scripted runtime plus turns whose text deltas carry timestamps.

`ticks N HZ`: N deltas, HZ per second (the latency part), played on the loop; `thread_ticks N HZ`: the same schedule
played from a thread of the turn's own, as Hermes runs its agent (`runtimes/hermes.py`), the callbacks made there (the
latency_threads part). `paced N MIN_MS MAX_MS [tag]`: N deltas MIN_MS–MAX_MS
apart, the gaps a fixed pseudo-random spread (the replicas part; the tag only makes the prompt unique). Each delta
is `<time.time() of the runtime callback>;`, which the client subtracts from its receipt time. `idle` sleeps at once
and `hold` after `HELD_DELTAS` deltas a millisecond apart, each its own journal event (the idle_streams part: what a
running turn holds per delta). `ask …` and
`approve …` suspend at once (a question, an approval) and answer immediately once answered (the answers part).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

from hermes_api_plugin.core.events import TurnStatus
from hermes_api_plugin.runtimes.base import AgentTurn, TurnResult
from hermes_api_plugin.runtimes.scripted import ScriptedRuntime, load_script

from .common import HELD_DELTAS

SCRIPT = """
options: {chunk_chars: 1, delay_ms: 0}
turns:
  - match: "^deltas"
    steps: [{text: "%s"}]
  - match: "^idle"
    steps: [{sleep: 600}]
  - match: "^hold"
    steps: [{sleep: 600}]
  - match: "^ask "
    steps: [{question: "Which branch?"}, {text: "Branch {answer}."}]
  - match: "^approve "
    steps: [{approval: "rm -rf build/"}, {text: "Done."}]
  - steps: [{text: "ok"}]
"""


def write_script(path: str, deltas: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(SCRIPT % ("x" * deltas))


def paced_offsets(count: int, min_ms: float, max_ms: float) -> list[float]:
    """Seconds from the turn's start of each of `count` deltas, min_ms–max_ms apart (the same spread every run)."""
    spread = random.Random(count)
    offsets, at = [], 0.0
    for _ in range(count):
        offsets.append(at)
        at += spread.uniform(min_ms, max_ms) / 1000
    return offsets


def stamped_offsets(words: list[str]) -> list[float] | None:
    """The delta schedule a `ticks` or `paced` prompt asks for; None for any other prompt (the script answers)."""
    if words[:1] in (["ticks"], ["thread_ticks"]):
        hz = float(words[2])
        return [i / hz for i in range(int(words[1]))]
    if words[:1] == ["paced"]:
        return paced_offsets(int(words[1]), float(words[2]), float(words[3]))
    return None


class BenchRuntime(ScriptedRuntime):
    """`ticks` and `paced` turns: timestamped text deltas on a schedule; anything else: the script."""

    async def run(self, turn: AgentTurn) -> TurnResult:
        if turn.request.input.text == "hold":
            for _ in range(HELD_DELTAS):
                await asyncio.sleep(0.001)
                turn.callbacks.text("y")
            return await super().run(turn)  # the script's `hold`: idle until the client leaves
        words = turn.request.input.text.split()
        offsets = stamped_offsets(words)
        if offsets is None:
            return await super().run(turn)
        if words[0] == "thread_ticks":
            return await _on_a_thread(turn, offsets)
        loop = asyncio.get_running_loop()
        start = loop.time()
        for offset in offsets:
            if turn.interrupted:
                return TurnResult(TurnStatus.CANCELLED)
            delay = start + offset - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            turn.callbacks.text(f"{time.time():.6f};")
        return TurnResult(TurnStatus.COMPLETED)


def play_on_a_thread(
    offsets: list[float], deliver: Callable[[str], None], interrupted: Callable[[], bool], ended: Callable[[], None]
) -> None:
    """In a thread of its own: sleeps to each offset of the schedule and hands `deliver` the stamp (`<time.time()>;`),
    then calls `ended`; returns once the thread started. The raw writer's threaded partner (server.py) plays the same
    way."""

    def play() -> None:
        start = time.monotonic()
        try:
            for offset in offsets:
                if interrupted():
                    return
                delay = start + offset - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                deliver(f"{time.time():.6f};")
        finally:
            ended()

    threading.Thread(target=play, name="bench ticks", daemon=True).start()


async def _on_a_thread(turn: AgentTurn, offsets: list[float]) -> TurnResult:
    """The turn's deltas made on a thread of its own, as Hermes' agent makes them: every callback crosses to the
    loop."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def resolve() -> None:
        if not done.done():
            done.set_result(None)

    def ended() -> None:
        try:
            loop.call_soon_threadsafe(resolve)
        except RuntimeError:  # the loop closed (shutdown)
            pass

    def interrupted() -> bool:
        return turn.interrupted

    play_on_a_thread(offsets, turn.callbacks.text, interrupted, ended)
    await done
    return TurnResult(TurnStatus.CANCELLED if turn.interrupted else TurnStatus.COMPLETED)


def runtime(script_path: str) -> BenchRuntime:
    return BenchRuntime(load_script(Path(script_path)))
