"""The real reference gateway process: startup refusals, binding, signals, disconnects, init, curl, keepalive.

WIRE.md §1.2 (startup and binding), §1.8 (draining), §2 (SSE), §3.5/§3.6 (cancelled finish), §5.5 (disconnect).
Every gateway here is `python -m hermes_api_plugin gateway` started through tests/live.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from hermes_api_plugin.config.settings import parse_env_file
from tests.helpers import PROGRESS, assert_error_envelope, parse_sse, read_reply, read_until, wait_for_async
from tests.live import TEST_KEY, LiveGateway, spawn_gateway, start_gateway, write_home

REFUSAL = "Refusing to start: API_SERVER_KEY is missing or shorter than 16 characters"


def chat_body(text: str, *, stream: bool = True) -> dict[str, Any]:
    return {"model": "hermes-agent", "stream": stream, "messages": [{"role": "user", "content": text}]}


def wait_exit(live: LiveGateway, timeout: float = 20.0) -> int:
    """Wait for a gateway that should exit on its own; stop() joins the reader and closes stdout."""
    try:
        live.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        live.stop(signal.SIGKILL)
        pytest.fail(f"gateway did not exit within {timeout}s:\n{live.output()}")
    return live.stop()


# -- W-1.1: key and enable refusals -------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", [None, "123456789012345", "   123456789012345   "], ids=["missing", "15-chars", "15-chars-padded"]
)
def test_gateway_refuses_to_start_without_a_valid_key(tmp_path: Path, key: str | None) -> None:
    """W-1.1: a missing or short key → exit 1, exactly one refusal line naming API_SERVER_KEY and .env, no retry."""
    home = write_home(tmp_path / "home", env={"API_SERVER_KEY": key})
    live = spawn_gateway(home)
    started = time.monotonic()
    rc = wait_exit(live)
    assert rc == 1, live.output()
    assert time.monotonic() - started < 15, "the refusal is final: no retry loop"
    refusals = [line for line in live.lines if REFUSAL in line]
    assert len(refusals) == 1, live.output()
    assert refusals[0].startswith("[API Server] ")
    assert "API_SERVER_KEY" in refusals[0] and ".env" in refusals[0]
    assert sum("API_SERVER_KEY" in line for line in live.lines) == 1
    assert not any("listening" in line for line in live.lines)


def test_gateway_with_valid_key_logs_the_listening_line(gateway_factory: Callable[..., LiveGateway]) -> None:
    """W-1.1: with a valid key the gateway logs exactly `[API Server] API server listening on http://127.0.0.1:PORT`."""
    live = gateway_factory()
    assert live.host == "127.0.0.1" and live.port > 0
    expected = f"[API Server] API server listening on http://127.0.0.1:{live.port}"
    assert expected in live.lines, live.output()
    assert not any(REFUSAL in line for line in live.lines)
    assert not any("WARNING" in line for line in live.lines)


def test_gateway_accepts_a_sixteen_character_key(gateway_factory: Callable[..., LiveGateway]) -> None:
    """W-1.1: 16 characters after trimming is enough (no other strength rule)."""
    live = gateway_factory(env={"API_SERVER_KEY": "  change-me-local-dev  "})
    live.key = "change-me-local-dev"
    request = urllib.request.Request(f"{live.url}/v1/models", headers=live.headers)
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.status == 200
        assert json.loads(resp.read())["data"][0]["id"] == "hermes-agent"


@pytest.mark.parametrize("enabled", [None, "false", "nope"], ids=["missing", "false", "garbage"])
def test_gateway_does_not_start_unless_enabled(tmp_path: Path, enabled: str | None) -> None:
    """§1.2: a key alone does not enable the server; exit 1 with one clear line naming API_SERVER_ENABLED."""
    home = write_home(tmp_path / "home", env={"API_SERVER_ENABLED": enabled})
    live = spawn_gateway(home)
    assert wait_exit(live) == 1, live.output()
    refusals = [line for line in live.lines if "Not starting" in line]
    assert len(refusals) == 1, live.output()
    assert refusals[0].startswith("[API Server] ") and "API_SERVER_ENABLED" in refusals[0] and ".env" in refusals[0]
    assert not any("listening" in line for line in live.lines)


async def test_process_environment_wins_over_dotenv(gateway_factory: Callable[..., LiveGateway]) -> None:
    """§12, W-1.1: API_SERVER_KEY from the process environment replaces the .env key."""
    env_key = "process-env-key-0123456789"
    live = gateway_factory(extra_env={"API_SERVER_KEY": env_key})
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{live.url}/v1/models", headers={"Authorization": f"Bearer {TEST_KEY}"}) as resp:
            assert_error_envelope(await read_reply(resp), 401, "gateway_auth_failed")
        async with session.get(f"{live.url}/v1/models", headers={"Authorization": f"Bearer {env_key}"}) as resp:
            assert resp.status == 200


# -- W-1.2: binding ------------------------------------------------------------------------------------


async def test_non_loopback_bind_warns_before_listening(gateway_factory: Callable[..., LiveGateway]) -> None:
    """W-1.2: API_SERVER_HOST=0.0.0.0 starts, logging the exposure warning before the listening line."""
    live = gateway_factory(extra_env={"API_SERVER_HOST": "0.0.0.0"})
    warnings = [i for i, line in enumerate(live.lines) if "reachable from the network" in line]
    listening = [i for i, line in enumerate(live.lines) if "API server listening on" in line]
    assert len(warnings) == 1 and len(listening) == 1, live.output()
    assert warnings[0] < listening[0]
    warning = live.lines[warnings[0]]
    assert warning.startswith("[API Server] WARNING: 0.0.0.0 is reachable from the network.")
    assert "SSH tunnel or Tailscale" in warning
    assert live.lines[listening[0]] == f"[API Server] API server listening on http://0.0.0.0:{live.port}"
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{live.port}/health") as resp:
        assert resp.status == 200


def test_port_in_use_exits_with_port_line(gateway_factory: Callable[..., LiveGateway], tmp_path: Path) -> None:
    """§1.2: a port held by another process → exit 1 with the port line."""
    first = gateway_factory()
    second = spawn_gateway(write_home(tmp_path / "second"), {"API_SERVER_PORT": str(first.port)})
    assert wait_exit(second) == 1, second.output()
    line = f"[API Server] Port {first.port} is already in use — set API_SERVER_PORT"
    assert line in second.lines, second.output()
    assert not any("listening" in text for text in second.lines)
    assert first.proc.poll() is None, "the first gateway keeps running"


# -- W-1.12: shutdown with an open stream --------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_signal_settles_open_stream_cancelled_and_exits_zero(
    gateway_factory: Callable[..., LiveGateway], sig: int
) -> None:
    """W-1.12, W-3.13: on SIGTERM/SIGINT the open stream ends with Stopped tool, cancelled finish, [DONE]; exit 0."""
    live = gateway_factory()
    async with aiohttp.ClientSession() as session:
        async with session.post(
            f"{live.url}/v1/chat/completions", json=chat_body("hang"), headers=live.headers
        ) as resp:
            assert resp.status == 200
            raw = await read_until(resp, b'"status":"running"')
            live.proc.send_signal(sig)
            raw += await asyncio.wait_for(resp.content.read(), 30)
    rc = await asyncio.to_thread(live.proc.wait, 30)
    live.stop()
    assert rc == 0, live.output()
    assert any("Stopped" in line for line in live.lines), live.output()
    assert raw.endswith(b"data: [DONE]\n\n"), raw[-300:]
    records, _ = parse_sse(raw)
    chunks = [r.json() for r in records if r.data != "[DONE]"]
    progress = [r.json() for r in records if r.event == PROGRESS]
    assert [p["status"] for p in progress] == ["running", "completed"]
    assert progress[1]["is_error"] is True
    assert progress[1]["event"]["data"] == {"description": "Stopped terminal: sleep 600", "done": True}
    finish = chunks[-1]
    assert finish["choices"][0]["finish_reason"] == "cancelled"
    assert finish["hermes"] == {"completed": False, "partial": False, "failed": False, "error_code": "cancelled"}
    assert "error" not in finish


# -- W-5.8 (first half): a disconnect cancels an unkeyed turn ------------------------------------------


async def test_disconnect_cancels_the_unkeyed_turn(gateway_factory: Callable[..., LiveGateway]) -> None:
    """W-5.8, §5.5: dropping the connection of an unkeyed stream cancels its turn (the slot frees at once)."""
    live = gateway_factory(config={"api_server": {"max_concurrent_runs": 1}})
    url = f"{live.url}/v1/chat/completions"
    async with aiohttp.ClientSession() as session:
        resp = await session.post(url, json=chat_body("hang"), headers=live.headers)
        try:
            assert resp.status == 200
            session_id = resp.headers["X-Hermes-Session-Id"]
            await read_until(resp, b'"status":"running"')
            # While the turn runs, the cap of 1 is reached.
            async with session.post(url, json=chat_body("hello", stream=False), headers=live.headers) as busy:
                assert_error_envelope(await read_reply(busy), 429, "rate_limit_exceeded")
                assert busy.headers["Retry-After"] == "1"
        finally:
            resp.close()  # drops the TCP connection

        async def hello() -> int:
            async with session.post(url, json=chat_body("hello", stream=False), headers=live.headers) as again:
                if again.status == 200:
                    reply = json.loads(await again.text())
                    assert reply["choices"][0]["message"]["content"] == "Hello from the scripted runtime."
                else:
                    assert again.status == 429
                return again.status

        await wait_for_async(
            hello,
            timeout=2.0,
            until=lambda status: status == 200,
            interval=0.1,
            what="a free slot after the disconnect (the turn was still running)",
        )
    # The cancelled turn settled and stored its exchange (no answer) in the derived session.
    db = live.home / "hermes_api.sqlite3"
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT role, content FROM messages WHERE session_id = ? ORDER BY id", (session_id,)
        ).fetchall()
    # user input, the assistant's tool call, the stopped tool's result, the (empty) answer
    assert [r[0] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert json.loads(rows[0][1]) == [{"type": "text", "text": "hang"}]
    assert json.loads(rows[2][1]) == [{"type": "text", "text": "[interrupted]"}]
    assert all("never reached" not in r[1] for r in rows)


# -- hermes-api init -------------------------------------------------------------------------------------


def run_init(home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("API_SERVER_")}
    env["HERMES_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "hermes_api_plugin", "init"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_init_writes_private_env_with_a_key_and_keeps_it(tmp_path: Path) -> None:
    """§1.2, §12: `hermes-api init` writes .env (0600) enabling the server with a ≥ 16-char key; reruns keep it."""
    home = tmp_path / "fresh-home"
    first = run_init(home)
    assert first.returncode == 0, first.stderr
    env_file = home / ".env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    values = parse_env_file(env_file.read_text(encoding="utf-8"))
    assert values["API_SERVER_ENABLED"] == "true"
    key = values["API_SERVER_KEY"]
    assert len(key.strip()) >= 16
    assert f"API_SERVER_KEY={key}" in first.stdout
    content = env_file.read_text(encoding="utf-8")

    second = run_init(home)
    assert second.returncode == 0, second.stderr
    assert f"API_SERVER_KEY={key}" in second.stdout
    assert env_file.read_text(encoding="utf-8") == content
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600

    # The written home starts a gateway that accepts that key.
    live = start_gateway(home)
    try:
        live.key = key
        with urllib.request.urlopen(
            urllib.request.Request(f"{live.url}/v1/models", headers=live.headers), timeout=10
        ) as resp:
            assert resp.status == 200
    finally:
        live.stop()


# -- the curl acceptance check ---------------------------------------------------------------------------


def test_curl_acceptance_stream(live_gateway: LiveGateway) -> None:
    """§3.1 example, W-3.1–W-3.5: `curl -sN` shows reasoning, a tool pair, content, stop with usage, [DONE] last."""
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    result = subprocess.run(
        [
            curl,
            "-sN",
            "-X",
            "POST",
            f"{live_gateway.url}/v1/chat/completions",
            "-H",
            f"Authorization: Bearer {live_gateway.key}",
            "-H",
            "Content-Type: application/json",
            "-d",
            json.dumps(chat_body("use tool")),
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.endswith(b"data: [DONE]\n\n")
    records, _ = parse_sse(out)
    chunks = [r.json() for r in records if r.data != "[DONE]"]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": ""}
    reasoning = "".join(d.get("reasoning_content", "") for d in deltas)
    assert reasoning == "I should look at the files first.\n\nTwo entries."
    content = "".join(d.get("content", "") for d in deltas)
    assert content == "Your project has README.md and src/."
    progress = [r.json() for r in records if r.event == PROGRESS]
    assert [(p["tool"], p["status"]) for p in progress] == [("terminal", "running"), ("terminal", "completed")]
    assert progress[0]["toolCallId"] == progress[1]["toolCallId"]
    finish = chunks[-1]
    assert finish["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert finish["usage"] == {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}
    assert records[-1].data == "[DONE]"


# -- W-2.4, W-2.5: keepalive on a long turn ------------------------------------------------------------


@pytest.mark.slow
async def test_keepalive_keeps_a_long_turn_alive(live_gateway: LiveGateway) -> None:
    """W-2.4, W-2.5: a 25 s silent step gets `: keepalive` comments (1 s config), none after [DONE];
    the same turn through the openai client (5 s read timeout) completes without a timeout."""

    def openai_run() -> tuple[str, str, str | None]:
        client = openai.OpenAI(
            base_url=live_gateway.url + "/v1",
            api_key=live_gateway.key,
            max_retries=0,
            timeout=openai.Timeout(60.0, read=5.0),
        )
        try:
            stream = client.chat.completions.create(
                model="hermes-agent", stream=True, messages=[{"role": "user", "content": "keepalive"}]
            )
            content, reasoning, finish = [], [], None
            with stream:
                for chunk in stream:
                    assert len(chunk.choices) == 1
                    delta = chunk.choices[0].delta
                    content.append(delta.content or "")
                    reasoning.append(getattr(delta, "reasoning_content", None) or "")
                    finish = chunk.choices[0].finish_reason or finish
            return "".join(content), "".join(reasoning), finish
        finally:
            client.close()

    async def raw_run() -> bytes:
        async with aiohttp.ClientSession() as session:
            async with session.post(
                f"{live_gateway.url}/v1/chat/completions", json=chat_body("keepalive"), headers=live_gateway.headers
            ) as resp:
                assert resp.status == 200
                return await asyncio.wait_for(resp.read(), 60)

    started = time.monotonic()
    raw, (content, reasoning, finish) = await asyncio.gather(raw_run(), asyncio.to_thread(openai_run))
    assert time.monotonic() - started >= 24
    records, keepalives = parse_sse(raw)
    assert keepalives >= 2
    assert raw.count(b": keepalive\n\n") == keepalives
    assert b"data: : keepalive" not in raw
    assert raw.endswith(b"data: [DONE]\n\n"), "nothing, not even a keepalive, follows [DONE]"
    chunks = [r.json() for r in records if r.data != "[DONE]"]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "Done waiting."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert (content, reasoning, finish) == ("Done waiting.", "This takes a while.", "stop")
