"""Side by side with the API server built into hermes-agent 0.19.0 (benchmark part 4).

`.venv-hermes/bin/python -m bench.side_by_side [--streams 20]` (the venv `./test --hermes` builds, with
hermes-agent installed). Both servers run the real `AIAgent` against the same scripted OpenAI-compatible
provider on loopback (`tests/hermes/provider.py`, scenario `[bench]`: 10 reasoning deltas then 200 answer
deltas per call); each serves N concurrent streaming chats with unique prompts, one server at a time, after
one warm-up request each (the first turn of a process pays seconds of lazy imports). Measured per server:
time to the first content byte p50/p95, total wall time, requests completed, peak RSS (VmHWM) of the
gateway process, and whether any reasoning reached the client. Results merge into bench/results.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from tests.hermes.provider import ScriptedProvider

from .common import ROOT, percentile
from .gateways import gateway, peak_rss_kb, stream_chat


async def _chat(session: aiohttp.ClientSession, url: str, prompt: str) -> dict[str, Any]:
    streamed = await stream_chat(session, url, [{"role": "user", "content": prompt}])
    return {
        "ttfb": streamed.first_content,
        "reasoning": streamed.first_reasoning is not None,
        "deltas": streamed.deltas,
        "done": streamed.done,
        "total": streamed.total,
    }


async def measure(provider: ScriptedProvider, root: Path, ours: bool, streams: int) -> dict[str, Any]:
    async with gateway(provider, root, ours) as running:
        url = running.url
        tag = "plugin" if ours else "upstream"
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=300)
        ) as session:
            await _chat(session, url, f"[bench] warm-up {tag} {time.time_ns()}")
            started = time.perf_counter()
            results = await asyncio.gather(
                *(_chat(session, url, f"[bench] request {i} {tag} {time.time_ns()}") for i in range(streams)),
                return_exceptions=True,
            )
            wall = time.perf_counter() - started
        ok = [r for r in results if isinstance(r, dict) and r["done"]]
        ttfb = [r["ttfb"] * 1000 for r in ok if r["ttfb"] is not None]
        return {
            "server": "hermes-api-plugin (hermes runtime)" if ours else "hermes-agent 0.19.0 built-in api_server",
            "requests": streams,
            "completed": len(ok),
            "wall_s": round(wall, 2),
            "ttfb_p50_ms": round(percentile(ttfb, 50), 1),
            "ttfb_p95_ms": round(percentile(ttfb, 95), 1),
            "content_deltas_per_request": round(sum(r["deltas"] for r in ok) / max(len(ok), 1), 1),
            "reasoning_arrives": any(r["reasoning"] for r in ok),
            "peak_rss_mb": round(peak_rss_kb(running.pid) / 1024, 1),
            "errors": [repr(r)[:200] for r in results if not isinstance(r, dict)][:3],
        }


def report(result: dict[str, Any]) -> str:
    return (
        f"side_by_side.{'plugin' if 'plugin' in result['server'] else 'upstream':9s} "
        f"{result['completed']}/{result['requests']} completed in {result['wall_s']} s, first content "
        f"p50 {result['ttfb_p50_ms']} ms / p95 {result['ttfb_p95_ms']} ms, peak RSS {result['peak_rss_mb']} MB, "
        f"reasoning {'arrives' if result['reasoning_arrives'] else 'never arrives'}"
    )


async def run(streams: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with ScriptedProvider() as provider, tempfile.TemporaryDirectory(prefix="hermes-sbs-") as tmp:
        for ours in (True, False):
            result = await measure(provider, Path(tmp), ours, streams)
            out["plugin" if ours else "upstream"] = result
            print(report(result), flush=True)
    plugin, upstream = out["plugin"], out["upstream"]
    if plugin["ttfb_p50_ms"] and upstream["ttfb_p50_ms"]:
        out["ttfb_p50_ratio_upstream_over_plugin"] = round(upstream["ttfb_p50_ms"] / plugin["ttfb_p50_ms"], 2)
        out["wall_ratio_upstream_over_plugin"] = round(upstream["wall_s"] / plugin["wall_s"], 2)
        print(
            "side_by_side.ratio     upstream / plugin: "
            f"first content p50 x{out['ttfb_p50_ratio_upstream_over_plugin']}, "
            f"wall time x{out['wall_ratio_upstream_over_plugin']}",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.side_by_side")
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--out", default=str(ROOT / "results.json"))
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.streams))
    path = Path(args.out)
    document = json.loads(path.read_text()) if path.exists() else {"results": {}}
    document.setdefault("results", {})["side_by_side"] = {"streams": args.streams, **result}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
