"""Shared fixtures: the real app in-process (through the plugin's startup hook) and the real gateway process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from .helpers import serve_app
from .live import TEST_KEY, LiveGateway, start_gateway, write_home

AUTH = {"Authorization": f"Bearer {TEST_KEY}"}


@pytest.fixture
def auth() -> dict[str, str]:
    return dict(AUTH)


ApiFactory = Callable[..., Awaitable[TestClient]]


@pytest.fixture
async def make_api(aiohttp_client: Any, tmp_path: Path) -> ApiFactory:
    """Build the real API app through the plugin manager and serve it on 127.0.0.1 (in-process)."""
    counter = 0

    async def make(
        *, env: dict[str, str] | None = None, config: dict[str, Any] | None = None, script: str = "chat.yaml"
    ) -> TestClient:
        nonlocal counter
        counter += 1
        return await serve_app(
            aiohttp_client, write_home(tmp_path / f"home{counter}", env=env, config=config, script=script)
        )

    return make


@pytest.fixture
async def api(make_api: ApiFactory) -> AsyncIterator[TestClient]:
    yield await make_api()


@pytest.fixture(scope="module")
def live_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    """One real gateway process per test module, test script, 1 s keepalive."""
    gateway = start_gateway(write_home(tmp_path_factory.mktemp("hermes_home")))
    yield gateway
    gateway.stop()


@pytest.fixture
def gateway_factory(tmp_path: Path) -> Iterator[Callable[..., LiveGateway]]:
    started: list[LiveGateway] = []
    counter = 0

    def start(
        *,
        env: dict[str, str] | None = None,
        config: dict[str, Any] | None = None,
        script: str | None = "chat.yaml",
        extra_env: dict[str, str] | None = None,
    ) -> LiveGateway:
        nonlocal counter
        counter += 1
        home = write_home(tmp_path / f"gw{counter}", env=env, config=config, script=script)
        gateway = start_gateway(home, extra_env)
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()
