"""The benchmark runtime: the scripted runtime plus a `ticks N HZ` turn whose deltas carry timestamps."""

from __future__ import annotations

import asyncio
import time

from hermes_api_plugin.events import TurnStatus
from hermes_api_plugin.runtimes.base import AgentTurn, TurnOutcome
from hermes_api_plugin.runtimes.scripted import ScriptedRuntime, load_script

SCRIPT = """
options: {chunk_chars: 1, delay_ms: 0}
turns:
  - match: "^deltas"
    steps: [{text: "%s"}]
  - match: "^idle"
    steps: [{sleep: 600}]
  - steps: [{text: "ok"}]
"""


def write_script(path: str, deltas: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(SCRIPT % ("x" * deltas))


class BenchRuntime(ScriptedRuntime):
    """`ticks N HZ`: N text deltas `<time.time()>;`, HZ per second (latency); anything else: the script."""

    async def run(self, turn: AgentTurn) -> TurnOutcome:
        words = turn.request.input.text.split()
        if not words or words[0] != "ticks":
            return await super().run(turn)
        count, hz = int(words[1]), float(words[2])
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i in range(count):
            if turn.interrupted:
                return TurnOutcome(TurnStatus.CANCELLED)
            delay = start + i / hz - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if turn.stream_delta_callback is not None:
                turn.stream_delta_callback(f"{time.time():.6f};")
        return TurnOutcome(TurnStatus.COMPLETED)


def runtime(script_path: str) -> BenchRuntime:
    from pathlib import Path

    return BenchRuntime(load_script(Path(script_path)))
