"""The bridge functions in-process, against hermes-agent's real classes: `register(ctx)`, the adapter,
the `gateway:startup` hook handler (`hooks/hermes-api-plugin/handler.py` → `on_gateway_startup`), runtime
selection and the result mapping of the hermes runtime (WIRE.md §1.2, §3.6, §12 `agent.runtime`)."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import yaml

from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.core.events import TurnStatus
from hermes_api_plugin.hermes import bridge, compat
from hermes_api_plugin.http.app_keys import BACKGROUND
from hermes_api_plugin.runtimes import (
    HermesRuntime,
    RuntimeUnavailable,
    ScriptedRuntime,
    select_runtime,
)
from hermes_api_plugin.runtimes.hermes_messages import outcome_from_result, reasoning_config_for
from tests.helpers import ROOT
from tests.live import TEST_KEY, write_home

HANDLER = ROOT / "hooks" / "hermes-api-plugin" / "handler.py"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Hermes home with the API server enabled; HERMES_HOME points at it (Hermes resolves it from there)."""
    path = write_home(tmp_path / "home", script=None)
    monkeypatch.setenv("HERMES_HOME", str(path))
    for name in ("API_SERVER_ENABLED", "API_SERVER_KEY", "API_SERVER_PORT", "API_SERVER_HOST"):
        monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture(autouse=True)
def _entry_point_not_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a process where register(ctx) has not run (it sets a process-wide flag)."""
    monkeypatch.setattr(bridge, "_registered", False)


def load_handler() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hermes_hook_hermes_api_plugin_test", HANDLER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hook_bundle_is_what_hermes_discovers() -> None:
    """HOOK.yaml names the event Hermes emits after the adapters connected; handler.py has `handle`."""
    manifest = yaml.safe_load((HANDLER.parent / "HOOK.yaml").read_text(encoding="utf-8"))
    assert manifest["name"] == "hermes-api-plugin"
    assert manifest["events"] == ["gateway:startup"]
    assert callable(load_handler().handle)


def test_register_records_the_api_server_platform_with_hermes_entry_fields(home: Path) -> None:
    """register(ctx) only records a PlatformEntry named api_server (accepted by Hermes' own dataclass)."""
    from gateway.platform_registry import PlatformEntry

    recorded: dict[str, Any] = {}
    bridge.register(SimpleNamespace(register_platform=lambda **kw: recorded.update(kw)))
    entry = PlatformEntry(**recorded)  # unknown keys would raise TypeError here
    assert entry.name == "api_server"
    assert entry.check_fn() is True
    assert entry.is_connected(None) is True  # API_SERVER_ENABLED=true in the home's .env
    assert entry.validate_config(None) is True
    adapter = entry.adapter_factory(_platform_config())
    assert getattr(adapter, "hermes_api_plugin", False) is True
    assert adapter.platform.value == "api_server"


def test_a_key_alone_does_not_enable_the_platform(home: Path, caplog: pytest.LogCaptureFixture) -> None:
    (home / ".env").write_text(f"API_SERVER_KEY={TEST_KEY}\n", encoding="utf-8")
    recorded: dict[str, Any] = {}
    bridge.register(SimpleNamespace(register_platform=lambda **kw: recorded.update(kw)))
    assert recorded["is_connected"](None) is False
    with caplog.at_level(logging.INFO, "hermes_api_plugin"):
        assert recorded["validate_config"](None) is False
    assert "[API Server] Not starting: API_SERVER_ENABLED is not true" in caplog.text


def _platform_config() -> Any:
    from gateway.config import PlatformConfig

    return PlatformConfig(enabled=True)


def _runner(adapters: dict[Any, Any]) -> Any:
    return SimpleNamespace(adapters=adapters, config=SimpleNamespace(platforms={}))


async def test_hook_confirms_the_entry_point_adapter(home: Path, caplog: pytest.LogCaptureFixture) -> None:
    from gateway.config import Platform

    adapter = bridge.make_adapter(_platform_config())
    with caplog.at_level(logging.INFO, "hermes_api_plugin"):
        result = await bridge.on_gateway_startup({}, runner=_runner({Platform.API_SERVER: adapter}))
    assert result == "active"
    assert "hermes-api-plugin serves the api_server platform" in caplog.text


async def test_hook_reports_the_builtin_holding_the_port(home: Path, caplog: pytest.LogCaptureFixture) -> None:
    from gateway.config import Platform

    builtin = SimpleNamespace(platform=Platform.API_SERVER)
    with caplog.at_level(logging.INFO, "hermes_api_plugin"):
        result = await bridge.on_gateway_startup({}, runner=_runner({Platform.API_SERVER: builtin}))
    assert result == "held"
    assert "[API Server] Port 8642 is held by Hermes' built-in api_server — disable platforms.api_server" in caplog.text


async def test_hook_does_not_retry_a_refused_entry_point_adapter(
    home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The entry point is loaded but its adapter refused (it logged the one refusal line): the hook starts
    nothing and logs no second refusal (§1.2: exactly one line, final)."""
    (home / ".env").write_text("API_SERVER_ENABLED=true\nAPI_SERVER_KEY=short\n", encoding="utf-8")
    bridge.register(SimpleNamespace(register_platform=lambda **kw: None))
    with caplog.at_level(logging.INFO, "hermes_api_plugin"):
        assert await bridge.on_gateway_startup({}, runner=_runner({})) == "refused"
    assert "Refusing to start" not in caplog.text


async def test_hook_does_nothing_when_not_enabled_or_outside_a_gateway(home: Path) -> None:
    (home / ".env").write_text("", encoding="utf-8")
    assert await bridge.on_gateway_startup({}, runner=_runner({})) == "disabled"
    assert await load_handler().handle("gateway:startup", {}) == "no-gateway"  # no running GatewayRunner
    assert await load_handler().handle("agent:start", {}) is None


async def test_hook_boots_the_adapter_and_hands_it_to_the_gateway(
    home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The `started` path in-process, on the scripted runtime: bound, listening line, registered with the
    runner (whose stop() disconnects it), drained by disconnect()."""
    from gateway.config import Platform

    monkeypatch.setenv("API_SERVER_PORT", "0")
    config = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    config["agent"] = {"runtime": "scripted"}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    adapters: dict[Any, Any] = {}
    with caplog.at_level(logging.INFO, "hermes_api_plugin"):
        assert await bridge.on_gateway_startup({}, runner=_runner(adapters)) == "started"
        adapter = adapters[Platform.API_SERVER]
        assert "[API Server] API server listening on http://127.0.0.1:" in caplog.text
        assert adapter.port and adapter.active_agent_work_count() == 0
        await adapter.disconnect()
        await adapter.disconnect()  # idempotent
    assert "[API Server] Stopped" in caplog.text


async def test_background_work_is_agent_work_hermes_drains_and_disconnect_awaits(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fired cron job's run (background work, WIRE §14.3) counts in `active_agent_work_count`, which Hermes'
    shutdown drain waits on, and the adapter's disconnect waits for it to end before it reports stopped."""
    from gateway.config import Platform

    monkeypatch.setenv("API_SERVER_PORT", "0")
    config = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    config["agent"] = {"runtime": "scripted"}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    adapters: dict[Any, Any] = {}
    assert await bridge.on_gateway_startup({}, runner=_runner(adapters)) == "started"
    adapter = adapters[Platform.API_SERVER]
    (app,) = adapter._gateway[1].apps
    gate, ended = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        await gate.wait()
        ended.set()

    app[BACKGROUND].spawn(run(), name="cron fire 'x'")
    disconnect = None
    try:
        assert adapter.active_agent_work_count() == 1
        disconnect = asyncio.ensure_future(adapter.disconnect())
        done, _ = await asyncio.wait({disconnect}, timeout=0.3)  # time enough to stop, which it must not: run held
        assert not done
    finally:
        gate.set()
        await asyncio.wait_for(disconnect or adapter.disconnect(), 10)
    assert ended.is_set() and adapter.active_agent_work_count() == 0


async def test_port_in_use_is_a_final_refusal(
    home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("API_SERVER_PORT", str(port))
        adapter = bridge.make_adapter(_platform_config())
        with caplog.at_level(logging.INFO, "hermes_api_plugin"):
            assert await adapter.connect() is False
    assert f"[API Server] Port {port} is already in use — set API_SERVER_PORT" in caplog.text
    assert adapter.has_fatal_error and adapter.fatal_error_retryable is False


def test_install_hook_copies_the_bundle(tmp_path: Path) -> None:
    env = {"HERMES_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "hermes_api_plugin", "install-hook"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    target = tmp_path / "hooks" / "hermes-api-plugin"
    assert f"Installed the gateway:startup hook in {target}" in done.stdout
    assert "enabled: [hermes-api-plugin]" in done.stdout
    assert (target / "handler.py").read_bytes() == HANDLER.read_bytes()
    assert (target / "HOOK.yaml").read_bytes() == (HANDLER.parent / "HOOK.yaml").read_bytes()


def test_runtime_selection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§12 agent.runtime: auto → hermes only with a model provider; scripted when asked; hermes when asked."""
    monkeypatch.setattr(HermesRuntime, "start_warm_up", lambda self: None)  # no hermes-agent import here

    def settings(**agent: Any) -> Any:
        config: dict[str, Any] = {"agent": agent} if agent else {}
        if agent.pop("with_model", False):
            config["model"] = {"provider": "custom", "base_url": "http://127.0.0.1:1/v1", "default": "m"}
        path = write_home(tmp_path / f"h{len(list(tmp_path.iterdir()))}", config=config)
        return load_settings(path, environ={})

    assert isinstance(select_runtime(settings()), ScriptedRuntime)
    assert isinstance(select_runtime(settings(with_model=True)), HermesRuntime)
    assert isinstance(select_runtime(settings(with_model=True, runtime="scripted")), ScriptedRuntime)
    runtime = select_runtime(settings(runtime="hermes"))
    assert isinstance(runtime, HermesRuntime) and runtime.providers() == frozenset()
    assert select_runtime(settings(with_model=True)).providers() == frozenset({"custom"})


def test_runtime_hermes_without_hermes_agent_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat.agent, "hermes_available", lambda: False)
    path = write_home(tmp_path / "h", config={"agent": {"runtime": "hermes"}})
    with pytest.raises(RuntimeUnavailable, match="hermes-agent is not installed"):
        select_runtime(load_settings(path, environ={}))


@pytest.mark.parametrize(
    ("result", "status", "code"),
    [
        (
            {"final_response": "done", "completed": True, "turn_exit_reason": "text_response(finish_reason=stop)"},
            TurnStatus.COMPLETED,
            None,
        ),
        (
            {"final_response": "summary", "completed": False, "turn_exit_reason": "max_iterations_reached(2/2)"},
            TurnStatus.INCOMPLETE,
            "iteration_budget_exhausted",
        ),
        (
            {"final_response": None, "completed": False, "turn_exit_reason": "budget_exhausted"},
            TurnStatus.INCOMPLETE,
            "iteration_budget_exhausted",
        ),
        (
            {"final_response": "cut", "completed": True, "turn_exit_reason": "text_response(finish_reason=length)"},
            TurnStatus.INCOMPLETE,
            "output_truncated",
        ),
        (
            {"final_response": None, "interrupted": True, "turn_exit_reason": "interrupted_by_user"},
            TurnStatus.CANCELLED,
            "cancelled",
        ),
        ({"final_response": "boom", "failed": True, "error": "provider said 500"}, TurnStatus.FAILED, "agent_error"),
        (
            {"final_response": None, "completed": False, "turn_exit_reason": "all_retries_exhausted_no_response"},
            TurnStatus.FAILED,
            "agent_error",
        ),
    ],
)
def test_result_mapping(result: dict[str, Any], status: TurnStatus, code: str | None) -> None:
    outcome = outcome_from_result({**result, "prompt_tokens": 5, "completion_tokens": 3}, interrupted=False)
    assert (outcome.status, outcome.error_code) == (status, code)
    assert (outcome.usage.prompt_tokens, outcome.usage.completion_tokens) == (5, 3)
    if status is TurnStatus.FAILED and result.get("error"):
        assert outcome.error_message == "provider said 500"


def test_interrupt_wins_over_an_unfinished_result_and_helpers() -> None:
    outcome = outcome_from_result({"final_response": "partial", "completed": False}, interrupted=True)
    assert outcome.status is TurnStatus.CANCELLED
    assert reasoning_config_for(None) is None
    assert reasoning_config_for("none") == {"enabled": False}
    assert reasoning_config_for("high") == {"enabled": True, "effort": "high"}
    assert compat.agent.detect_tool_failure("terminal", '{"output": "x", "exit_code": 1, "error": null}') is True
    assert compat.agent.detect_tool_failure("terminal", '{"output": "tool-ok", "exit_code": 0, "error": null}') is False
