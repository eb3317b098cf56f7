"""`python -m bench.rounds [--rounds 3] [--against DIR]`: throughput, latency and CPU per stream, three rounds, the
median of each.

Each round runs `python -m bench --only throughput latency latency_threads stream_cpu` here and, with `--against`,
in another checkout (e.g. an older commit, its `bench/` brought up to this one's), alternating which goes first, so the
machine's drift falls on both alike. Every figure keeps its same-run baseline (the raw writer); the summary is the
median over rounds of each figure and ratio, and the range. Written to results.json under `rounds` (this checkout)
and `rounds_against`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("throughput", "latency", "latency_threads", "stream_cpu")

LATENCY = (
    ("p50_ms", ("p50_ms",)),
    ("p99_ms", ("p99_ms",)),
    ("raw_p50_ms", ("raw", "p50_ms")),
    ("raw_p99_ms", ("raw", "p99_ms")),
    ("p99_ratio", ("ratio", "p99")),
    ("server_busy", ("server_busy",)),
    ("raw_server_busy", ("raw", "server_busy")),
    ("slip_p99_ms", ("slip_p99_ms",)),
    ("raw_slip_p99_ms", ("raw", "slip_p99_ms")),
    ("first_delta_p99_ms", ("first_delta_p99_ms",)),
    ("raw_first_delta_p99_ms", ("raw", "first_delta_p99_ms")),
)


def figures(results: dict[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    """(name, path in a round's results) of every figure the summary keeps: the throughput ratios (to the raw writer
    and to the producer), and per concurrency the latency figures with their raw partners."""
    out = [("chat_ratio", ("throughput", "chat_ratio")), ("responses_ratio", ("throughput", "responses_ratio"))]
    # the producer's ceiling (a checkout from before it was measured has none)
    ceiling = ("producer_ratio", "chat_of_producer", "responses_of_producer")
    out.extend((name, ("throughput", name)) for name in ceiling if name in results["throughput"])
    # the server's CPU per one-delta stream (a checkout from before it was measured has none)
    if "stream_cpu" in results:
        for kind in ("chat", "responses", "raw"):
            out.append((f"stream_cpu_{kind}_ms", ("stream_cpu", kind, "cpu_ms_per_stream")))
            out.append((f"stream_cpu_{kind}_tracked", ("stream_cpu", kind, "tracked_after")))
        out.extend((f"stream_cpu_{kind}_ratio", ("stream_cpu", kind, "ratio")) for kind in ("chat", "responses"))
    for part in ("latency", "latency_threads"):  # the turns on the loop, and on a thread each (a checkout may lack it)
        for streams in results.get(part, {}):
            out.extend((f"{part}_{streams}_{name}", (part, streams, *path)) for name, path in LATENCY)
    return out


def _one(checkout: Path, out: Path, quick: bool) -> dict[str, Any]:
    subprocess.run(
        [sys.executable, "-m", "bench", "--only", *PARTS, "--out", str(out), *(["--quick"] * quick)],
        cwd=checkout,
        check=True,
        stdout=sys.stderr,
    )
    results: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))["results"]
    return results


def _pick(results: dict[str, Any], path: tuple[str, ...]) -> float:
    value: Any = results
    for key in path:
        value = value[key]
    return float(value)


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per figure: the median over rounds and every round's value."""
    out: dict[str, Any] = {"rounds": len(rounds)}
    for name, path in figures(rounds[0]):
        values = [_pick(r, path) for r in rounds]
        out[name] = {"median": round(statistics.median(values), 3), "values": [round(v, 3) for v in values]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rounds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, help="another checkout, its bench/ able to run these parts")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args(argv)
    checkouts = [ROOT] if args.against is None else [ROOT, args.against.resolve()]
    runs: list[list[dict[str, Any]]] = [[] for _ in checkouts]
    with tempfile.TemporaryDirectory(prefix="hermes-rounds-") as tmp:
        for r in range(args.rounds):
            order = range(len(checkouts)) if r % 2 == 0 else reversed(range(len(checkouts)))
            for i in order:
                runs[i].append(_one(checkouts[i], Path(tmp) / f"round-{r}-{i}.json", args.quick))
    summaries = [summary(rounds) for rounds in runs]
    for checkout, checkout_runs, s in zip(checkouts, runs, summaries, strict=True):
        print(f"{checkout}:")
        for name, _path in figures(checkout_runs[0]):  # the parts and sizes each checkout's bench has
            print(f"  {name:<24} median {s[name]['median']}  ({', '.join(str(v) for v in s[name]['values'])})")
    path = Path(args.out)
    document = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    document.setdefault("results", {})["rounds"] = summaries[0]
    if args.against is not None:
        summaries[1]["checkout"] = str(args.against)
        document["results"]["rounds_against"] = summaries[1]
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
