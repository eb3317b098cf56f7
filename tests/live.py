"""Test helpers: a Hermes home on disk and the real reference gateway as a subprocess (SSE parsing, replies and
waits: tests/helpers.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

SCRIPTS = Path(__file__).parent / "scripts"
TEST_KEY = "test-key-0123456789abcdef"
_LISTENING = re.compile(r"API server listening on http://(\S+):(\d+)")


def write_home(
    home: Path,
    *,
    env: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
    script: str | None = "chat.yaml",
) -> Path:
    """A HERMES_HOME with .env, config.yaml and a copy of a test script logging executions."""
    home.mkdir(parents=True, exist_ok=True)
    dotenv = {"API_SERVER_ENABLED": "true", "API_SERVER_KEY": TEST_KEY, **(env or {})}
    (home / ".env").write_text("".join(f"{k}={v}\n" for k, v in dotenv.items() if v is not None), encoding="utf-8")
    doc: dict[str, Any] = {"api_server": {"sse_keepalive_seconds": 1}}
    for section, values in (config or {}).items():
        if isinstance(values, dict) and isinstance(doc.get(section), dict):
            doc[section] = {**doc[section], **values}
        else:
            doc[section] = values
    if script is not None:
        script_doc = yaml.safe_load((SCRIPTS / script).read_text(encoding="utf-8"))
        script_doc.setdefault("options", {})["execution_log"] = str(home / "executions.jsonl")
        (home / "script.yaml").write_text(yaml.safe_dump(script_doc, sort_keys=False), encoding="utf-8")
        doc.setdefault("agent", {})["script"] = str(home / "script.yaml")
    (home / "config.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return home


def executions(home: Path) -> list[dict[str, Any]]:
    path = home / "executions.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gateway_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("API_SERVER_") and k != "HERMES_API_SCRIPT"}
    env.update({"HERMES_HOME": str(home), "API_SERVER_PORT": "0", "PYTHONUNBUFFERED": "1"})
    env.update(extra or {})
    return env


def stop_process(
    proc: subprocess.Popen[str],
    reader: threading.Thread | None = None,
    sig: int = signal.SIGTERM,
    timeout: float = 30.0,
) -> int:
    """Stop a gateway subprocess the way an operator would: `sig`, then SIGKILL after `timeout` s; then let the
    thread pumping its output catch the last lines and close the pipe. Returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    if reader is not None:
        reader.join(5)
    if proc.stdout is not None and not proc.stdout.closed:
        proc.stdout.close()
    return proc.returncode


class Endpoint(Protocol):
    """What a client needs of a gateway it talks to: its base URL (no `/v1`) and its API key. A `LiveGateway`, or
    `hermes gateway run` with the plugin (tests/hermes/support.py `HermesGateway`)."""

    @property
    def url(self) -> str: ...

    @property
    def key(self) -> str: ...


@dataclass
class LiveGateway:
    """A running `python -m hermes_api_plugin gateway` process."""

    proc: subprocess.Popen[str]
    home: Path
    lines: list[str] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 0
    key: str = TEST_KEY
    reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for_line(self, pattern: str, timeout: float = 10.0) -> re.Match[str] | None:
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                match = compiled.search(line)
                if match:
                    return match
            if self.proc.poll() is not None and not any(compiled.search(line) for line in self.lines):
                time.sleep(0.1)  # let the reader thread catch the last lines
                return next((m for m in (compiled.search(line) for line in self.lines) if m), None)
            time.sleep(0.02)
        return None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        return stop_process(self.proc, self.reader, sig, timeout)

    def executions(self) -> list[dict[str, Any]]:
        return executions(self.home)


def spawn_gateway(home: Path, extra_env: dict[str, str] | None = None, prefix: Sequence[str] = ()) -> LiveGateway:
    """Start the gateway process without waiting for it to listen (`prefix`: a command it runs under, e.g. unshare)."""
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "hermes_api_plugin", "gateway"],
        env=gateway_env(home, extra_env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
    )
    live = LiveGateway(proc=proc, home=home)
    live.reader = read_lines(proc, live.lines)
    return live


def read_lines(proc: subprocess.Popen[str], lines: list[str]) -> threading.Thread:
    """A started daemon thread appending each line of the process's output to `lines` (so a full pipe never blocks
    the process, and tests can search what it logged)."""

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    return reader


def start_gateway(
    home: Path, extra_env: dict[str, str] | None = None, timeout: float = 30.0, prefix: Sequence[str] = ()
) -> LiveGateway:
    """Start the gateway and wait for its listening line (port 0 → the port it printed)."""
    live = spawn_gateway(home, extra_env, prefix)
    match = live.wait_for_line(_LISTENING.pattern, timeout)
    if match is None:
        live.stop(signal.SIGKILL)
        raise RuntimeError(f"gateway did not start:\n{live.output()}")
    live.host, live.port = match.group(1), int(match.group(2))
    return live
