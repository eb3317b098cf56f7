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
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from tests.hermes.provider import MODEL, ScriptedProvider

from .__main__ import KEY, ROOT, percentile

BIN = Path(sys.executable).parent


def _home(root: Path, provider: ScriptedProvider, port: int, ours: bool) -> Path:
    home = root / ("plugin" if ours else "upstream")
    work = root / ("work-plugin" if ours else "work-upstream")
    home.mkdir(parents=True)
    work.mkdir()
    (home / ".env").write_text(
        f"API_SERVER_ENABLED=true\nAPI_SERVER_KEY={KEY}\nAPI_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT={port}\n",
        encoding="utf-8",
    )
    config: dict[str, Any] = {
        "model": {
            "provider": "custom",
            "default": MODEL,
            "base_url": provider.base_url,
            "api_key": "bench",
            "context_length": 131072,
        },
        "memory": {"memory_enabled": False, "user_profile_enabled": False, "provider": ""},
        "terminal": {"backend": "local", "cwd": str(work)},
        "platform_toolsets": {"api_server": ["terminal"]},
        "mcp_servers": {},
        "security": {"tirith_enabled": False},
        "gateway": {"api_server": {"max_concurrent_runs": 100}},
    }
    if ours:
        config["agent"] = {"runtime": "hermes"}
        config["api_server"] = {"max_concurrent_runs": 0}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return home


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(home: Path, ours: bool) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("API_SERVER_")}
    env["HERMES_HOME"] = str(home)
    command = (
        [str(BIN / "python"), "-m", "hermes_api_plugin", "gateway"]
        if ours
        else [str(BIN / "hermes"), "gateway", "run", "-v"]
    )
    return subprocess.Popen(
        command,
        env=env,
        cwd=ROOT.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _wait_health(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            try:
                async with session.get(url + "/health") as reply:
                    if reply.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not answer /health")


async def _chat(session: aiohttp.ClientSession, url: str, prompt: str) -> dict[str, Any]:
    body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": prompt}]}
    started = time.perf_counter()
    first_content: float | None = None
    reasoning = False
    deltas = 0
    done = False
    async with session.post(
        url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"}
    ) as reply:
        buffer = b""
        async for chunk in reply.content.iter_any():
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.startswith(b"data: "):
                    continue
                if line == b"data: [DONE]":
                    done = True
                    continue
                payload = json.loads(line[6:])
                for choice in payload.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if delta.get("reasoning_content"):
                        reasoning = True
                    if delta.get("content"):
                        deltas += 1
                        if first_content is None:
                            first_content = time.perf_counter() - started
    return {
        "ttfb": first_content,
        "reasoning": reasoning,
        "deltas": deltas,
        "done": done,
        "total": time.perf_counter() - started,
    }


def _peak_rss_kb(pid: int) -> int:
    """VmHWM of the process and its children (hermes gateway runs in one process; be safe)."""
    total = 0
    pids = [pid] + [
        int(p) for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    ]
    for each in pids:
        try:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


async def measure(provider: ScriptedProvider, root: Path, ours: bool, streams: int) -> dict[str, Any]:
    port = _free_port()
    home = _home(root, provider, port, ours)
    proc = _start(home, ours)
    url = f"http://127.0.0.1:{port}"
    try:
        await _wait_health(url)
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
            "peak_rss_mb": round(_peak_rss_kb(proc.pid) / 1024, 1),
            "errors": [repr(r)[:200] for r in results if not isinstance(r, dict)][:3],
        }
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
