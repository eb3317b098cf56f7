"""Fixtures of the real-Hermes suite: a scripted model provider and Hermes homes pointing at it.

These tests need hermes-agent, which pins `openai==2.24.0`, so they run from their own virtualenv
(`./test --hermes` creates `.venv-hermes` with `pip install -e '.[hermes,postgres]'`); the main suite ignores this
folder (`--ignore=tests/hermes` in pytest's addopts). Without hermes-agent every test here is skipped —
or fails under CI=true, where a skipped acceptance test would hide a broken setup.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.live import write_home

from .provider import ScriptedProvider
from .support import HermesGateway, hermes_config, start_gateway

HERMES_AVAILABLE = importlib.util.find_spec("run_agent") is not None
HERE = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "hermes: runs the real Hermes AIAgent (hermes-agent) against a scripted provider"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE not in Path(str(item.fspath)).parents:
            continue
        item.add_marker(pytest.mark.hermes)
        if not HERMES_AVAILABLE:
            reason = f"hermes-agent is not installed in {sys.prefix} (run ./test --hermes)"
            if os.environ.get("CI") == "true":
                item.add_marker(pytest.mark.usefixtures("_hermes_required"))
            else:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def _hermes_required() -> None:
    pytest.fail("hermes-agent is not installed in this environment (CI=true: not skipped)")


@pytest.fixture(scope="session", autouse=True)
def _private_hermes_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """hermes-agent modules imported in-process create and read `$HERMES_HOME` (default ~/.hermes): point it at
    a scratch folder. Not restored: hermes-agent's exit handlers run after the session and must not fall back
    to ~/.hermes. Gateway subprocesses get their own home explicitly."""
    os.environ["HERMES_HOME"] = str(tmp_path_factory.mktemp("hermes-home-default"))


@pytest.fixture(scope="module")
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider() as server:
        yield server


HomeFactory = Callable[..., Path]


@pytest.fixture(scope="module")
def hermes_home(tmp_path_factory: pytest.TempPathFactory, provider: ScriptedProvider) -> HomeFactory:
    """Write a Hermes home for the scripted provider: `make(env=..., **config_sections)`."""

    def make(*, env: dict[str, str] | None = None, **sections: Any) -> Path:
        root = tmp_path_factory.mktemp("hermes")
        config = hermes_config(provider, root / "work", **sections)
        return write_home(root / "home", env=env, config=config, script=None)

    return make


@pytest.fixture
def run_hermes() -> Iterator[Callable[[Path], HermesGateway]]:
    """Start `hermes gateway run -v` on a home: `run_hermes(home)`; every gateway started is stopped after."""
    started: list[HermesGateway] = []

    def start(home: Path) -> HermesGateway:
        started.append(start_gateway(home))
        return started[-1]

    yield start
    for live in started:
        live.stop()
