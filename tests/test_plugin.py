"""The plugin's hookimpls against the gateway contract: registration, and one test per hook."""

from __future__ import annotations

import inspect
from pathlib import Path

import pluggy
import pytest

from hermes_api_plugin import hookspecs, plugin
from hermes_api_plugin.config import load_settings
from hermes_api_plugin.content import Message, TextPart
from hermes_api_plugin.events import ToolStarted, TurnStatus
from hermes_api_plugin.gateway.server import ReferenceGateway, build_plugin_manager
from hermes_api_plugin.keys import STORE, TURNS
from hermes_api_plugin.runtimes import select_runtime
from hermes_api_plugin.runtimes.base import AgentTurn, TurnOutcome, TurnRequest

from .helpers import wait_for_async
from .live import write_home


def _hookimpl_names() -> list[str]:
    return [
        name
        for name, fn in inspect.getmembers(plugin, inspect.isfunction)
        if getattr(fn, "hermes_api_impl", None) is not None
    ]


class RecordingSink:
    def __init__(self) -> None:
        self.closed = False

    def on_reasoning(self, text: str) -> None: ...
    def on_text(self, text: str | None) -> None: ...
    def on_tool_start(self, call_id, name, arguments) -> None: ...  # type: ignore[no-untyped-def]
    def on_tool_complete(self, call_id, name, result, is_error) -> None: ...  # type: ignore[no-untyped-def]
    def on_commentary(self, text: str, already_streamed: bool) -> None: ...
    def on_compaction(self, summary: str) -> None: ...
    def on_approval_request(self, command: str, description: str, choices: tuple[str, ...]) -> None: ...
    def on_approval_response(self, choice: str) -> None: ...

    def close(self) -> None:
        self.closed = True


def _turn(**overrides: object) -> AgentTurn:
    request = TurnRequest(turn_id="run_x", session_id="s", input=Message("user", (TextPart("hi"),)), **overrides)  # type: ignore[arg-type]
    return AgentTurn(request, RecordingSink())


def _gateway(tmp_path: Path) -> tuple[pluggy.PluginManager, ReferenceGateway]:
    home = write_home(tmp_path / "home")
    settings = load_settings(home, environ={"HERMES_HOME": str(home)})
    pm = build_plugin_manager()
    return pm, ReferenceGateway(settings, select_runtime(settings), pm)


def test_plugin_registers_through_entry_point_and_matches_specs() -> None:
    pm = build_plugin_manager()
    assert pm.get_plugin("hermes_api_plugin") is plugin
    pm.check_pending()  # every hookimpl has a spec, with compatible arguments


def test_plugin_registers_on_a_fresh_manager() -> None:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs.GatewaySpec)
    pm.register(plugin)
    pm.check_pending()
    assert {impl.plugin_name for impl in pm.hook.hermes_api_agent_turn_start.get_hookimpls()}


def test_hook_names_carry_the_project_prefix() -> None:
    specs = [n for n in dir(hookspecs.GatewaySpec) if not n.startswith("_")]
    assert specs and all(n.startswith("hermes_api_") for n in specs)
    for name in specs:
        assert getattr(hookspecs.GatewaySpec, name).__doc__, f"{name} is undocumented"


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


def test_hook_hermes_api_agent_turn_start() -> None:
    turn = _turn()
    plugin.hermes_api_agent_turn_start(turn=turn)
    sink = turn.sink
    assert turn.reasoning_callback == sink.on_reasoning
    assert turn.stream_delta_callback == sink.on_text
    assert turn.tool_start_callback == sink.on_tool_start
    assert turn.tool_complete_callback == sink.on_tool_complete
    assert turn.interim_assistant_callback == sink.on_commentary
    assert turn.compaction_callback == sink.on_compaction
    assert turn.approval_callback == sink.on_approval_request


def test_hook_agent_turn_start_respects_reasoning_and_commentary_opt_outs() -> None:
    """W-10.1: reasoning.enabled false installs no reasoning callback; §10.3 commentary gate."""
    turn = _turn(reasoning_enabled=False, commentary_enabled=False)
    plugin.hermes_api_agent_turn_start(turn=turn)
    assert turn.reasoning_callback is None
    assert turn.interim_assistant_callback is None
    assert turn.stream_delta_callback is not None


def test_hook_hermes_api_agent_turn_end() -> None:
    turn = _turn()
    plugin.hermes_api_agent_turn_end(turn=turn, outcome=TurnOutcome(TurnStatus.COMPLETED))
    assert isinstance(turn.sink, RecordingSink) and turn.sink.closed


@pytest.mark.parametrize(
    "name",
    [
        "hermes_api_gateway_startup",
        "hermes_api_gateway_shutdown",
        "hermes_api_agent_turn_start",
        "hermes_api_agent_turn_end",
    ],
)
def test_contract_hooks_are_specified(name: str) -> None:
    assert hasattr(hookspecs.GatewaySpec, name)
