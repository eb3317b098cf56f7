"""The plugin against the gateway contract (hookspecs.py), as a gateway that loads it sees it: the hooks it
implements and what each does, and a second plugin beside it on the live reference gateway (issue 21, part 5)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest

from hermes_api_plugin import hookspecs, plugin
from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.core.content import Message, TextPart
from hermes_api_plugin.core.events import ToolStarted, TurnStatus
from hermes_api_plugin.gateway.server import ReferenceGateway, build_plugin_manager
from hermes_api_plugin.http.app_keys import STORE, TURNS
from hermes_api_plugin.runtimes import select_runtime
from hermes_api_plugin.runtimes.base import TurnRequest

from .gateway.observer_plugin import observer_env
from .helpers import GOLDEN, chat_body, live_request, normalise, wait_for_async
from .live import LiveGateway, start_gateway, write_home


def _declared_hooks() -> set[str]:
    """The hooks hookspecs.py declares (pluggy's spec marker), read from the spec module."""
    return {name for name, fn in vars(hookspecs.GatewaySpec).items() if hasattr(fn, f"{hookspecs.PROJECT}_spec")}


def _hookimpl_names() -> list[str]:
    return [
        name
        for name, fn in inspect.getmembers(plugin, inspect.isfunction)
        if getattr(fn, f"{hookspecs.PROJECT}_impl", None) is not None
    ]


def _gateway(tmp_path: Path) -> tuple[pluggy.PluginManager, ReferenceGateway]:
    home = write_home(tmp_path / "home")
    settings = load_settings(home, environ={"HERMES_HOME": str(home)})
    pm = build_plugin_manager()
    return pm, ReferenceGateway(settings, select_runtime(settings), pm)


def test_the_entry_point_group_loads_the_plugin_and_its_hooks_match_the_specs() -> None:
    pm = build_plugin_manager()
    assert pm.get_plugin("hermes_api_plugin") is plugin
    pm.check_pending()  # every hookimpl has a spec, with compatible arguments
    assert set(_hookimpl_names()) <= _declared_hooks()


def test_declared_hooks_carry_the_project_prefix_and_say_when_and_what_they_return() -> None:
    declared = _declared_hooks()
    assert declared and all(name.startswith("hermes_api_") for name in declared)
    for name in declared:
        doc = getattr(hookspecs.GatewaySpec, name).__doc__ or ""
        assert all(part in doc for part in ("When:", "Arguments:", "Return:")), f"{name} is not documented"


def test_every_hookimpl_has_a_test() -> None:
    """Meta-test: each hookimpl `X` in plugin.py has a `test_hook_X` in this module."""
    names = _hookimpl_names()
    assert names, "plugin.py defines no hookimpl"
    missing = [n for n in names if f"test_hook_{n}" not in globals()]
    assert not missing, f"hookimpls without a test: {missing}"


async def test_hook_hermes_api_gateway_startup(tmp_path: Path) -> None:
    pm, gateway = _gateway(tmp_path)
    pm.hook.hermes_api_gateway_startup(gateway=gateway)
    assert len(gateway.apps) == 1
    app = gateway.apps[0]
    assert TURNS in app and STORE in app
    paths = {r.resource.canonical for r in app.router.routes() if r.resource is not None}
    assert {"/health", "/v1/models", "/v1/capabilities", "/v1/chat/completions"} <= paths


async def test_hook_hermes_api_gateway_shutdown(tmp_path: Path) -> None:
    pm, gateway = _gateway(tmp_path)
    pm.hook.hermes_api_gateway_startup(gateway=gateway)
    app = gateway.apps[0]
    await app[STORE].open()
    registry = app[TURNS]
    held = registry.admit(
        TurnRequest(turn_id="run_" + "0" * 32, session_id="s", input=Message("user", (TextPart("hang"),)))
    )
    held.start()
    turn = held.turn
    await wait_for_async(lambda: any(isinstance(e, ToolStarted) for e in turn.journal.events), what="the tool start")
    results = pm.hook.hermes_api_gateway_shutdown(gateway=gateway)
    for result in results:
        if inspect.isawaitable(result):
            await result
    assert turn.journal.finished is not None
    assert turn.journal.finished.status is TurnStatus.CANCELLED
    assert registry.draining


# -- a second plugin on the live reference gateway (issue 21, part 5) -------------------------------------------------


def _observed_gateway(tmp_path: Path, *, fail: bool = False) -> tuple[LiveGateway, Path]:
    """The reference gateway with the observer plugin (tests/gateway/observer_plugin.py) installed beside this one
    in the entry-point group, playing the golden script; and the observer's log."""
    home = write_home(tmp_path / "home", script="golden.yaml", config={"api_server": {"sse_keepalive_seconds": 30}})
    env, log = observer_env(tmp_path, fail=fail)
    return start_gateway(home, env), log


def _calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def observed(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[LiveGateway, Path]]:
    gateway, log = _observed_gateway(tmp_path, fail=getattr(request, "param", False))
    yield gateway, log
    gateway.stop()


@pytest.mark.parametrize("observed", [False, True], ids=["observer", "failing-observer"], indirect=True)
def test_a_second_plugin_implementing_turn_start_leaves_the_stream_golden_and_sees_the_turn(
    observed: tuple[LiveGateway, Path],
) -> None:
    """Issue 21, part 5: a second plugin whose turn-start hook installs callbacks of its own on the turn after this
    plugin's (as the contract once invited), or raises: the chat stream keeps its reasoning, tool progress and text
    byte for byte (tests/golden/chat-use-tool.sse), and the plugin saw the turn start and end."""
    gateway, log = observed
    reply = live_request(gateway, "POST", "/v1/chat/completions", chat_body("use tool"))
    assert reply.status == 200
    assert normalise(reply.raw).decode() == (GOLDEN / "chat-use-tool.sse").read_text(encoding="utf-8")
    run_id = reply.headers["X-Hermes-Run-Id"]
    turn_calls = [c for c in _calls(log) if c["hook"].startswith("hermes_api_agent_turn_")]
    assert turn_calls == [
        {"hook": "hermes_api_agent_turn_start", "turn_id": run_id, "input": "use tool"},
        {"hook": "hermes_api_agent_turn_end", "turn_id": run_id, "status": "completed"},
    ]


def test_a_gateway_lifecycle_calls_exactly_the_declared_hooks_in_order(observed: tuple[LiveGateway, Path]) -> None:
    """Start-up, one turn, SIGTERM: the second plugin was called once for each hook hookspecs.py declares — no other
    — start-up first, the turn's start before its end, shutdown last."""
    gateway, log = observed
    assert live_request(gateway, "POST", "/v1/chat/completions", chat_body("use tool")).status == 200
    assert gateway.stop() == 0
    hooks = [c["hook"] for c in _calls(log)]
    assert sorted(hooks) == sorted(_declared_hooks())
    assert hooks[0] == "hermes_api_gateway_startup" and hooks[-1] == "hermes_api_gateway_shutdown"
    assert hooks.index("hermes_api_agent_turn_start") < hooks.index("hermes_api_agent_turn_end")
