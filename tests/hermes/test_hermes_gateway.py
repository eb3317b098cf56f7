"""The plugin inside Hermes Agent's own gateway: the real `hermes gateway run` CLI of hermes-agent 0.19.

- plugin entry point enabled (`plugins.enabled: [hermes-api-plugin]`): Hermes builds this plugin's adapter for
  its `api_server` platform instead of the built-in one; `/v1/capabilities` and a streamed chat with
  `reasoning_content` and a real tool run are served; SIGTERM drains it;
- entry point not enabled, startup hook installed (`hermes-api install-hook`): the hook boots the plugin, or
  reports the built-in api_server holding the port (WIRE.md §1.2);
- refusals inside `hermes gateway` (§1.2): a short key is refused once and not retried; a key alone does
  not enable the server.
"""

from __future__ import annotations

import re
import secrets
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import openai

from tests.live import TEST_KEY

from .conftest import HomeFactory
from .support import BIN, OURS, PLUGINS, HermesGateway, clean_env, listening

REFUSAL = "[API Server] Refusing to start: API_SERVER_KEY is missing or shorter than 16 characters — set it in "


def install_hook(home: Path) -> str:
    done = subprocess.run(
        [str(BIN / "hermes-api"), "install-hook"],
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_entry_point_replaces_the_builtin_api_server(
    hermes_home: HomeFactory, run_hermes: Callable[[Path], HermesGateway]
) -> None:
    """`hermes gateway run` with the plugin enabled serves /v1/capabilities and a streamed chat with
    reasoning_content and a real tool run, from this plugin; the startup hook confirms it; SIGTERM drains."""
    home = hermes_home(env={"API_SERVER_PORT": "0"}, plugins=PLUGINS)
    assert "plugins:" in install_hook(home)
    gateway = run_hermes(home)
    port = listening(gateway)
    assert gateway.wait_for("hermes-api-plugin serves the api_server platform", 30), gateway.output()[-4000:]
    assert "(model:" not in gateway.output()  # Hermes' built-in api_server never started

    status, capabilities = gateway.get("/v1/capabilities")
    assert status == 200
    assert capabilities["object"] == "hermes.api_server.capabilities"
    assert capabilities["runtime"]["agent"] == "hermes"
    assert capabilities["features"]["reasoning_streaming"] is True

    sdk = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=TEST_KEY, max_retries=0, timeout=90.0)
    reasoning, content, progress, finish = [], [], [], None
    with sdk.chat.completions.create(
        model="hermes-agent", stream=True, messages=[{"role": "user", "content": "Inside hermes gateway: run it"}]
    ) as stream:
        for chunk in stream:
            delta = chunk.choices[0].delta
            extra = chunk.model_extra or {}
            reasoning.append((delta.model_extra or {}).get("reasoning_content") or "")
            content.append(delta.content or "")
            if extra.get("status") in ("running", "completed"):
                progress.append(extra["status"])
            finish = chunk.choices[0].finish_reason or finish
    sdk.close()
    assert "I should run the command first." in "".join(reasoning)
    assert "tool-ok" in "".join(content)
    assert progress == ["running", "completed"]
    assert finish == "stop"
    assert "falling back to:" not in gateway.output()  # hermes.compat took no fallback on the pinned hermes-agent

    gateway.stop()
    assert "[API Server] Stopped" in gateway.output()
    assert "✓ api_server disconnected" in gateway.output()


def test_startup_hook_boots_the_plugin_when_the_entry_point_is_off(
    hermes_home: HomeFactory, run_hermes: Callable[[Path], HermesGateway]
) -> None:
    """No plugins.enabled, no API_SERVER_* in .env (so the built-in stays off), api_server.enabled/key in
    config.yaml: the gateway:startup hook starts the plugin, and the gateway's shutdown drains it."""
    home = hermes_home(
        env={"API_SERVER_ENABLED": None, "API_SERVER_KEY": None},
        api_server={"enabled": True, "key": TEST_KEY, "port": 0},
    )
    install_hook(home)
    gateway = run_hermes(home)
    listening(gateway)
    assert gateway.wait_for("hermes-api-plugin started from the gateway:startup hook", 30), gateway.output()[-4000:]
    status, capabilities = gateway.get("/v1/capabilities")
    assert status == 200 and capabilities["runtime"]["agent"] == "hermes"
    gateway.stop()
    assert "[API Server] Stopped" in gateway.output()


def test_startup_hook_reports_the_builtin_api_server_holding_the_port(
    hermes_home: HomeFactory, run_hermes: Callable[[Path], HermesGateway]
) -> None:
    """§1.2: entry point off, API_SERVER_ENABLED in .env → Hermes' built-in api_server binds; the hook says so
    with the documented line and starts nothing."""
    port = free_port()
    key = secrets.token_hex(24)  # the built-in refuses placeholder-looking keys
    home = hermes_home(env={"API_SERVER_KEY": key, "API_SERVER_PORT": str(port)})
    install_hook(home)
    gateway = run_hermes(home)
    line = f"[API Server] Port {port} is held by Hermes' built-in api_server — disable platforms.api_server"
    assert gateway.wait_for(re.escape(line), 60), gateway.output()[-4000:]
    assert not OURS.search(gateway.output())
    gateway.port = port
    status, health = gateway.get("/health", key)
    assert status == 200 and health.get("platform") == "hermes-agent"  # the built-in answers


def test_short_key_is_refused_once_inside_hermes_gateway(
    hermes_home: HomeFactory, run_hermes: Callable[[Path], HermesGateway]
) -> None:
    """§1.2: the refusal line exactly once and no retry loop (a non-retryable platform error in Hermes)."""
    home = hermes_home(env={"API_SERVER_KEY": "short", "API_SERVER_PORT": "0"}, plugins=PLUGINS)
    install_hook(home)  # the startup hook must not start a second attempt either
    gateway = run_hermes(home)
    assert gateway.wait_for(re.escape(REFUSAL), 60), gateway.output()[-4000:]
    gateway.wait_for("non-retryable|Gateway running|Press Ctrl", 20)
    time.sleep(1.0)
    assert gateway.output().count("Refusing to start: API_SERVER_KEY") == 1
    assert not OURS.search(gateway.output())
    assert "queued for retry" not in gateway.output()


def test_a_key_alone_does_not_enable_it_inside_hermes_gateway(
    hermes_home: HomeFactory, run_hermes: Callable[[Path], HermesGateway]
) -> None:
    """§1.2: Hermes enables its api_server platform for API_SERVER_KEY alone; the plugin does not start."""
    home = hermes_home(env={"API_SERVER_ENABLED": None, "API_SERVER_PORT": "0"}, plugins=PLUGINS)
    gateway = run_hermes(home)
    assert gateway.wait_for(re.escape("[API Server] Not starting: API_SERVER_ENABLED is not true"), 60), (
        gateway.output()[-4000:]
    )
    gateway.wait_for("Gateway will continue|Press Ctrl", 20)
    assert not OURS.search(gateway.output())
    assert gateway.output().count("Not starting: API_SERVER_ENABLED is not true") == 1
