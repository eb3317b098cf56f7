"""`python -m bench.cost`: instructions per event and per stream, the plugin's streams against the raw writer.

Latency and CPU time on a shared 2-core machine move by tens of percent from run to run; an instruction count does
not. The bench server runs under Valgrind's callgrind (`valgrind` must be installed); the client — this process,
outside it — runs phases of N concurrent streams of the bench runtime's `ticks T HZ` turn (N × T text deltas at a
rate the instrumented server keeps up with, so no delta is coalesced), each phase between a zeroing and a dump of
callgrind's counters (`callgrind_control`). Per kind (a chat stream, a Responses stream, the raw writer's
`/raw_ticks`) two phases, T1 and T2 ticks: per event = the difference of their counts over the difference of their
events; per stream = what the T1 phase cost beyond its events, over N (admission, head, settlement, the
connection). Reported as instructions (Ir) and as plugin / raw ratios.

`--profile PATH` keeps callgrind's dumps there (one per phase) for `callgrind_annotate`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp

from .common import TICKS_KINDS, Server, ticks_stream, write_home


async def _control(session: aiohttp.ClientSession, server: Server, option: str) -> None:
    """`callgrind_control <option> <pid>`; callgrind takes commands only while the program runs, so the raw app is
    poked (a zero-delta `/raw`) until it has: the same few instructions in every phase."""
    proc = await asyncio.create_subprocess_exec(
        "callgrind_control", option, str(server.proc.pid), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    while proc.returncode is None:
        async with session.get(f"{server.raw_url}/raw?n=0") as response:
            await response.read()
        try:
            await asyncio.wait_for(proc.wait(), 0.2)
        except TimeoutError:
            continue
    assert proc.returncode == 0, f"callgrind_control {option} failed"


def _latest_total(out: Path) -> int:
    dumps = sorted(out.glob("callgrind.out.*"), key=lambda p: p.stat().st_mtime_ns)
    for line in dumps[-1].read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {dumps[-1]}")


async def _phase(
    session: aiohttp.ClientSession, server: Server, out: Path, kind: str, streams: int, ticks: int, hz: int
) -> tuple[int, int]:
    """Instructions and events of one phase: N streams of `ticks`, spread over one tick period."""
    await _control(session, server, "-z")
    counts = await asyncio.gather(
        *(ticks_stream(session, server, kind, ticks, hz, i / streams / hz) for i in range(streams))
    )
    await _control(session, server, "-d")
    return _latest_total(out), sum(counts)


async def measure(work: Path, out: Path, streams: int, ticks: tuple[int, int], hz: int) -> dict[str, Any]:
    wrap = ("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out.%p", "--dump-instr=no")
    server = Server(write_home(work, 1), 500, wrap=wrap)
    result: dict[str, Any] = {"streams": streams, "ticks": list(ticks), "hz": hz}
    try:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
            for kind in TICKS_KINDS:  # warm-up: first-use imports and caches are not the steady cost
                await _phase(session, server, out, kind, 2, 2, hz)
            for kind in TICKS_KINDS:
                (short_ir, short_events), (long_ir, long_events) = [
                    await _phase(session, server, out, kind, streams, t, hz) for t in ticks
                ]
                per_event = (long_ir - short_ir) / (long_events - short_events)
                result[kind] = {
                    "ir_per_event": round(per_event),
                    "ir_per_stream": round((short_ir - per_event * short_events) / streams),
                }
    finally:
        server.stop()
    for kind in ("chat", "responses"):
        result[kind]["ratio_per_event"] = round(result[kind]["ir_per_event"] / result["raw"]["ir_per_event"], 3)
        result[kind]["ratio_per_stream"] = round(result[kind]["ir_per_stream"] / result["raw"]["ir_per_stream"], 3)
    return result


def report(result: dict[str, Any]) -> list[str]:
    raw = result["raw"]
    lines = [f"cost.raw               {raw['ir_per_event']} Ir per event, {raw['ir_per_stream']} Ir per stream"]
    for kind in ("chat", "responses"):
        v = result[kind]
        lines.append(
            f"cost.{kind:<18}{v['ir_per_event']} Ir per event (x {v['ratio_per_event']} raw), "
            f"{v['ir_per_stream']} Ir per stream (x {v['ratio_per_stream']})"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cost")
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--ticks", type=int, nargs=2, default=[5, 25], metavar=("T1", "T2"))
    parser.add_argument("--hz", type=int, default=5)
    parser.add_argument("--profile", help="keep callgrind's dumps in this directory")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results.json"))
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench.cost needs valgrind (callgrind and callgrind_control)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="hermes-cost-") as tmp:
        out = Path(args.profile) if args.profile else Path(tmp) / "callgrind"
        out.mkdir(parents=True, exist_ok=True)
        result = asyncio.run(measure(Path(tmp) / "home", out, args.streams, tuple(args.ticks), args.hz))
    for line in report(result):
        print(line, flush=True)
    path = Path(args.out)
    document = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    document.setdefault("results", {})["cost"] = result
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
