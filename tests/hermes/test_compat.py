"""`hermes_api_plugin.hermes.compat` against the installed hermes-agent (the pinned 0.19):

- every name of `HERMES_NAMES` exists, accepts the arguments the plugin passes, and has the attributes and hooks
  the plugin relies on — so a hermes-agent upgrade that renames or re-signs one fails here, by name, instead of
  in a turn;
- a name made unusable (deleted, re-signed, raising) takes its fallback and logs exactly one WARNING, however
  often it is called;
- importing the plugin's hermes modules imports no hermes-agent module (the imports stay lazy).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
import json
import logging
import subprocess
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.core.content import text_message
from hermes_api_plugin.hermes import compat
from hermes_api_plugin.hermes.compat import HERMES_NAMES, HermesName, _core
from hermes_api_plugin.runtimes.base import TurnRequest
from hermes_api_plugin.runtimes.hermes import _hermes_gateway_settings
from tests.live import write_home


@pytest.fixture(autouse=True)
def _fresh_fallback_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a fresh process would: no fallback warned about yet."""
    monkeypatch.setattr(_core, "_warned", set())


def _self_placeholder(name: HermesName) -> list[object]:
    """A placeholder for `self` when the name is a plain method looked up on its class."""
    owner: Any = importlib.import_module(name.module)
    *parents, attr = name.path.split(".")
    for part in parents:
        owner = getattr(owner, part)
    plain_method = inspect.isclass(owner) and isinstance(inspect.getattr_static(owner, attr), types.FunctionType)
    return [object()] if plain_method else []


def _mentions(target: Any, attr: str) -> bool:
    """`attr` is a class attribute, a dataclass field, or read/set by name in the class's source (`.attr`,
    `"attr"`): instance attributes exist only on instances, which these checks do not build."""
    if hasattr(target, attr):
        return True
    if dataclasses.is_dataclass(target) and attr in {f.name for f in dataclasses.fields(target)}:
        return True
    source = inspect.getsource(target)
    return f".{attr}" in source or f'"{attr}"' in source


@pytest.mark.parametrize("name", HERMES_NAMES, ids=lambda name: name.qualname)
def test_declared_name_exists_and_accepts_what_the_plugin_passes(name: HermesName) -> None:
    target = name.resolve()  # ImportError / AttributeError: renamed or removed
    if name.args is not None:
        assert callable(target), f"{name.qualname} is no longer callable"
        args = _self_placeholder(name) + [object()] * len(name.args)
        kwargs = {key: object() for key in name.kwargs}
        try:
            signature = inspect.signature(target)
        except ValueError:  # a builtin without a signature (the runner weakref once a gateway runs): callable is all
            pass
        else:
            signature.bind(*args, **kwargs)  # TypeError: it no longer takes what the plugin passes
    for attr in name.attrs:
        assert _mentions(target, attr), f"{name.qualname} no longer has `{attr}`"
    for hook in name.hooks:
        assert _mentions(target, hook), f"{name.qualname} no longer calls or defines `{hook}`"


def test_declared_names_are_unique_and_cover_the_known_private_helpers() -> None:
    assert len({name.qualname for name in HERMES_NAMES}) == len(HERMES_NAMES)
    private = [n for n in HERMES_NAMES if any(part.startswith("_") for part in n.path.split("."))]
    assert {n.path for n in private} >= {
        "_resolve_runtime_agent_kwargs",
        "GatewayRunner._load_reasoning_config",
        "GatewayRunner._load_fallback_model",
        "_get_platform_tools",
        "_detect_tool_failure",
        "_gateway_runner_ref",
    }


def test_top_level_modules_are_hermes_agents() -> None:
    """The boundary test (main suite, no hermes-agent there) recognises hermes-agent imports by this list."""
    top_level = importlib.metadata.distribution("hermes-agent").read_text("top_level.txt") or ""
    assert set(top_level.split()) == compat.HERMES_TOP_LEVEL_MODULES


def test_importing_the_plugin_imports_no_hermes_agent_module() -> None:
    """Hermes imports the entry point in every `hermes` command, and run_agent takes seconds and writes under
    $HERMES_HOME: compat, the bridge and the runtime import hermes-agent only when used."""
    code = (
        "import sys, hermes_api_plugin.hermes.bridge, hermes_api_plugin.runtimes.hermes\n"
        "from hermes_api_plugin.hermes.compat import HERMES_TOP_LEVEL_MODULES as top\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in top))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


# -- fallbacks ------------------------------------------------------------------------------------------------

FAILED_TERMINAL = json.dumps({"output": "", "exit_code": 2, "error": None})


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "hermes_api_plugin"]


def _missing(monkeypatch: pytest.MonkeyPatch, module: str, attr: str) -> None:
    monkeypatch.delattr(importlib.import_module(module), attr)


def _resigned(monkeypatch: pytest.MonkeyPatch, module: str, attr: str) -> None:
    """The name now needs an argument the plugin does not pass."""
    monkeypatch.setattr(importlib.import_module(module), attr, lambda required_new_argument, *a, **k: None)


def _raising(monkeypatch: pytest.MonkeyPatch, module: str, attr: str) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("hermes-agent bug")

    monkeypatch.setattr(importlib.import_module(module), attr, broken)


CASES: list[tuple[str, Callable[..., None], str, str, Callable[[], Any], Any]] = [
    # (id, breakage, module, attr, call, expected fallback result)
    (
        "missing",
        _missing,
        "agent.display",
        "_detect_tool_failure",
        lambda: compat.agent.detect_tool_failure("terminal", FAILED_TERMINAL),
        True,
    ),
    (
        "re-signed",
        _resigned,
        "agent.display",
        "_detect_tool_failure",
        lambda: compat.agent.detect_tool_failure("terminal", FAILED_TERMINAL),
        True,
    ),
    (
        "raising",
        _raising,
        "agent.display",
        "_detect_tool_failure",
        lambda: compat.agent.detect_tool_failure("terminal", FAILED_TERMINAL),
        True,
    ),
    (
        "missing",
        _missing,
        "gateway.run",
        "_resolve_runtime_agent_kwargs",
        lambda: compat.agent.runtime_agent_kwargs(),
        None,
    ),
    ("missing", _missing, "gateway.run", "_gateway_runner_ref", compat.gateway.gateway_runner, None),
    ("missing", _missing, "hermes_cli.tools_config", "_get_platform_tools", compat.agent.platform_toolsets, None),
    (
        "missing",
        _missing,
        "gateway.session_context",
        "set_session_vars",
        lambda: compat.sessions.bind_session_vars("s"),
        None,
    ),
    (
        "raising",
        _raising,
        "gateway.session_context",
        "clear_session_vars",
        lambda: compat.sessions.clear_session_vars([]),
        None,
    ),
    ("raising", _raising, "hermes_state", "SessionDB", compat.sessions.session_db, None),
]


@pytest.mark.parametrize(
    ("breakage", "module", "attr", "call", "expected"),
    [case[1:] for case in CASES],
    ids=[f"{case[3]}-{case[0]}" for case in CASES],
)
def test_an_unusable_name_takes_its_fallback_with_one_warning(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    breakage: Callable[..., None],
    module: str,
    attr: str,
    call: Callable[[], Any],
    expected: Any,
) -> None:
    breakage(monkeypatch, module, attr)
    with caplog.at_level(logging.WARNING, "hermes_api_plugin"):
        assert call() == expected
        assert call() == expected  # the second time: same fallback, no second line
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert f"hermes-agent {module}.{attr} " in warnings[0]
    assert "falling back to: " in warnings[0]


def test_a_working_name_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "hermes_api_plugin"):
        assert compat.agent.detect_tool_failure("terminal", FAILED_TERMINAL) is True
        assert compat.agent.detect_tool_failure("terminal", json.dumps({"output": "ok", "exit_code": 0})) is False
        assert compat.gateway.gateway_runner() is None  # no GatewayRunner in this process
        compat.sessions.clear_session_vars(compat.sessions.bind_session_vars("compat-test"))
    assert _warnings(caplog) == []


def test_without_hermes_gateway_helpers_the_model_section_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The runtime's fallback for a missing `_resolve_runtime_agent_kwargs`: provider, base_url, key and model
    from config.yaml's model: section, as before compat existed."""
    _missing(monkeypatch, "gateway.run", "_resolve_runtime_agent_kwargs")
    _missing(monkeypatch, "gateway.run", "_resolve_gateway_model")
    model = {"provider": "custom", "base_url": "http://127.0.0.1:9/v1", "api_key": "k-123", "default": "m-1"}
    settings = load_settings(write_home(tmp_path / "home", config={"model": model}, script=None), environ={})
    request = TurnRequest(turn_id="t", session_id="s", input=text_message("user", "hi"))
    with caplog.at_level(logging.WARNING, "hermes_api_plugin"):
        resolved = _hermes_gateway_settings(settings, request)
    assert {k: resolved[k] for k in ("model", "provider", "base_url", "api_key", "api_mode")} == {
        "model": "m-1",
        "provider": "custom",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "k-123",
        "api_mode": "chat_completions",
    }
    assert sorted(w.split(" ")[3] for w in _warnings(caplog)) == [
        "gateway.run._resolve_gateway_model",
        "gateway.run._resolve_runtime_agent_kwargs",
    ]


@pytest.mark.parametrize("installed", [True, False], ids=["installed", "fell-back"])
def test_an_installation_runs_its_put_once_whatever_it_returned(installed: bool) -> None:
    """A stand-in goes in once per process; a put that failed (and logged its fallback) is not retried every turn,
    and threads racing to it wait for the first."""
    installation = _core.Installation()
    calls: list[int] = []
    started = threading.Barrier(8)

    def put() -> bool:
        calls.append(1)
        return installed

    def race() -> None:
        started.wait()
        installation.once(put)

    threads = [threading.Thread(target=race) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    installation.once(put)
    assert calls == [1] and installation.done is installed
