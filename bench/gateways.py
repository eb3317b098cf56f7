"""Gateways on the real Hermes agent for the benchmarks that need hermes-agent (bench/side_by_side.py, bench/warm.py).

A Hermes home whose model is the scripted provider (tests/hermes/provider.py) on loopback; the plugin's reference
gateway (`python -m hermes_api_plugin gateway`, `agent.runtime: hermes`) or hermes-agent's own `hermes gateway run`
with only its built-in api_server, as a subprocess; what /proc says about that process (peak and current RSS, CPU
time); and a streaming `/v1/chat/completions` client that times the first reasoning and content bytes.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from tests.hermes.provider import ScriptedProvider
from tests.hermes.support import hermes_config

from .common import KEY, ROOT

BIN = Path(sys.executable).parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def hermes_home(
    root: Path,
    provider: ScriptedProvider,
    port: int,
    ours: bool,
    name: str = "",
    extra: dict[str, Any] | None = None,
    sections: dict[str, Any] | None = None,
) -> Path:
    """A HERMES_HOME under `root` for one gateway; `extra` merges into the plugin's `api_server:` section, `sections`
    into Hermes' config (e.g. `platform_toolsets`, `approvals`)."""
    label = name or ("plugin" if ours else "upstream")
    home = root / label
    work = root / f"work-{label}"
    home.mkdir(parents=True)
    work.mkdir()
    (home / ".env").write_text(
        f"API_SERVER_ENABLED=true\nAPI_SERVER_KEY={KEY}\nAPI_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT={port}\n",
        encoding="utf-8",
    )
    # The Hermes config of the real-Hermes suite (scripted provider, no memory, terminal tool only), with the bench's
    # provider key and a built-in server allowed 100 concurrent runs.
    config = hermes_config(
        provider,
        work,
        model={"api_key": "bench"},
        gateway={"api_server": {"max_concurrent_runs": 100}},
        **(sections or {}),
    )
    if ours:
        config["agent"] = {"runtime": "hermes"}
        config["api_server"] = {"max_concurrent_runs": 0, **(extra or {})}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return home


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(home: Path, ours: bool) -> subprocess.Popen[bytes]:
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


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def wait_health(url: str, timeout: float = 60.0) -> None:
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


@dataclass
class Gateway:
    """A running gateway subprocess and its URL."""

    proc: subprocess.Popen[bytes]
    url: str

    @property
    def pid(self) -> int:
        return self.proc.pid


@asynccontextmanager
async def gateway(
    provider: ScriptedProvider,
    root: Path,
    ours: bool,
    name: str = "",
    extra: dict[str, Any] | None = None,
    sections: dict[str, Any] | None = None,
) -> AsyncIterator[Gateway]:
    """Start a gateway on a free port, wait for `/health`, stop it (SIGTERM, then SIGKILL) on the way out."""
    port = free_port()
    proc = start(hermes_home(root, provider, port, ours, name, extra, sections), ours)
    try:
        url = f"http://127.0.0.1:{port}"
        await wait_health(url)
        yield Gateway(proc, url)
    finally:
        stop(proc)


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak_rss_kb(pid: int) -> int:
    """VmHWM of the process and its children (hermes gateway runs in one process; be safe)."""
    return sum(_status_kb(each, "VmHWM") for each in [pid, *_children(pid)])


def rss_kb(pid: int) -> int:
    """VmRSS of the process now (the gateway process alone: a terminal tool's shell is not the gateway's memory)."""
    return _status_kb(pid, "VmRSS")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (its threads included, its children not), in seconds."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@dataclass
class Streamed:
    """What one streaming chat completion delivered, times in seconds from the request being sent."""

    sent: float  # time.monotonic() when the request left (the provider's Recorded.started uses the same clock)
    first_content: float | None = None
    first_reasoning: float | None = None
    content: str = ""
    deltas: int = 0
    done: bool = False
    total: float = 0.0


async def stream_chat(
    session: aiohttp.ClientSession, url: str, messages: list[dict[str, Any]], headers: dict[str, str] | None = None
) -> Streamed:
    """POST a streaming `/v1/chat/completions` and read it to the end, as Open WebUI does."""
    body = {"model": "hermes-agent", "stream": True, "messages": messages}
    result = Streamed(sent=time.monotonic())
    parts: list[str] = []
    async with session.post(
        url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}", **(headers or {})}
    ) as reply:
        buffer = b""
        async for chunk in reply.content.iter_any():
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.startswith(b"data: "):
                    continue
                if line == b"data: [DONE]":
                    result.done = True
                    continue
                payload = json.loads(line[6:])
                for choice in payload.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if delta.get("reasoning_content") and result.first_reasoning is None:
                        result.first_reasoning = time.monotonic() - result.sent
                    if delta.get("content"):
                        result.deltas += 1
                        parts.append(delta["content"])
                        if result.first_content is None:
                            result.first_content = time.monotonic() - result.sent
    result.content = "".join(parts)
    result.total = time.monotonic() - result.sent
    return result
