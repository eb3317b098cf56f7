"""Helpers the real-Hermes tests share: `hermes gateway run` as a subprocess and plain HTTP calls to a gateway.

- `hermes_config`: the config.yaml of a Hermes home whose model is the scripted provider (provider.py);
- `start_gateway` / `HermesGateway` / `listening`: Hermes' own gateway CLI (hermes-agent 0.19) with the plugin
  in it, its `-v` log lines collected (the `run_hermes` fixture of conftest.py stops what a test started; the
  agent loops of tests/clients/test_hermes_agent_loops.py start it from .venv-hermes);
- `call`: one request to a `HermesGateway`, the status and JSON body back (errors included);
- `http` / `wait_for`: one request to the reference gateway (`tests.live.LiveGateway`), and polling a predicate;
- `write_compression_split`: what an earlier Hermes left in its SessionDB after splitting a session.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.live import TEST_KEY, LiveGateway, read_lines, stop_process

from .provider import MODEL, ScriptedProvider

BIN = Path(sys.executable).parent
OURS = re.compile(r"hermes_api_plugin: \[API Server\] API server listening on http://(\S+):(\d+)$")
PLUGINS = {"enabled": ["hermes-api-plugin"]}
WORK_MODEL = "work-model"  # the work profile's model.default: what its turns ask the provider for
SKILL = "work-only-skill"


@dataclass
class HermesGateway:
    """A running `hermes gateway run -v` (its -v log lines are where the plugin's lines show)."""

    proc: subprocess.Popen[str]
    home: Path
    lines: list[str] = field(default_factory=list)
    port: int = 0
    reader: threading.Thread | None = None

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str | re.Pattern[str], timeout: float = 60.0) -> re.Match[str] | None:
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                match = compiled.search(line)
                if match:
                    return match
            if self.proc.poll() is not None:
                time.sleep(0.2)
                return next((m for m in map(compiled.search, list(self.lines)) if m), None)
            time.sleep(0.05)
        return None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        return stop_process(self.proc, self.reader, sig, timeout)

    # what tests written against tests.live.LiveGateway read (a tests.live.Endpoint)
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def key(self) -> str:
        return TEST_KEY

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {TEST_KEY}"}

    def get(self, path: str, key: str = TEST_KEY) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", headers={"Authorization": f"Bearer {key}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())


def hermes_config(provider: ScriptedProvider, workdir: Path, **sections: Any) -> dict[str, Any]:
    """config.yaml for a Hermes home whose model is the scripted provider (no memory, no scanner download)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "model": {
            "provider": "custom",
            "default": MODEL,
            "base_url": provider.base_url,
            "api_key": "test-provider-key",
            "context_length": 131072,
        },
        "memory": {"memory_enabled": False, "user_profile_enabled": False, "provider": ""},
        "terminal": {"backend": "local", "cwd": str(workdir)},
        "platform_toolsets": {"api_server": ["terminal"]},
        "mcp_servers": {},
        "security": {"tirith_enabled": False},
    }
    for section, values in sections.items():
        if isinstance(values, dict) and isinstance(config.get(section), dict):
            config[section] = {**config[section], **values}
        else:
            config[section] = values
    return config


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_"))}
    env.update({"HERMES_HOME": str(home), "PYTHONUNBUFFERED": "1"})
    return env


def start_gateway(home: Path, bin_dir: Path = BIN) -> HermesGateway:
    """Start `hermes gateway run -v` (from `bin_dir`: this venv's by default) on `home`, its output pumped into
    `lines`; the caller stops it."""
    proc = subprocess.Popen(
        [str(bin_dir / "hermes"), "gateway", "run", "-v"],
        env=clean_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
    )
    live = HermesGateway(proc, home)
    live.reader = read_lines(proc, live.lines)
    return live


def listening(gateway: HermesGateway) -> int:
    match = gateway.wait_for(OURS)
    assert match is not None, f"the plugin did not start in hermes gateway:\n{gateway.output()[-6000:]}"
    gateway.port = int(match.group(2))
    return gateway.port


def call(gateway: HermesGateway, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps({} if body is None else body).encode() if method in ("POST", "PATCH") else None
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.port}{path}",
        method=method,
        data=data,
        headers={"Authorization": f"Bearer {TEST_KEY}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def http(gateway: LiveGateway, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        gateway.url + path, data=data, method=method, headers={**gateway.headers, "Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read().decode()
    return json.loads(raw) if response.headers.get_content_type() == "application/json" else raw


def wait_for(predicate: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def write_compression_split(db: Any, source: str = "cli") -> None:
    """What an earlier Hermes left after compacting a session by splitting it: the root ended with
    `end_reason = 'compression'`, the conversation going on in a child."""
    db.create_session("old", source)
    db.append_message("old", "user", content="before the split")
    db.end_session("old", "compression")
    db.create_session("tip", source, parent_session_id="old")
    db.append_message("tip", "user", content="after the split")


def add_work_profile(home: Path, provider: ScriptedProvider) -> Path:
    """`hermes profile create work` as it leaves the folder: its own config (another default model), no API server
    of its own (a secondary profile binding a port is a multiplexer misconfiguration), one skill of its own."""
    work = home / "profiles" / "work"
    config = hermes_config(provider, work / "workdir", model={"default": WORK_MODEL})
    (work / "config.yaml").parent.mkdir(parents=True, exist_ok=True)
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (work / ".env").write_text("", encoding="utf-8")
    skill = work / "skills" / SKILL
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {SKILL}\ndescription: Only the work profile has it.\n---\n\nDo work things.\n", encoding="utf-8"
    )
    return work
