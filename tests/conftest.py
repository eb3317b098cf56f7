"""Shared fixtures: the real app in-process (through the plugin's startup hook) and the real gateway process."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from .helpers import serve_app
from .live import TEST_KEY, LiveGateway, start_gateway, write_home
from .pg import DatabaseFactory, PostgresServer, PostgresUnavailable, launch

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


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL cluster for the whole session (tests/pg.py), started on first use. Missing server
    binaries or driver: the test skips, saying why; under CI=true it fails (.ci/run installs them)."""
    try:
        server = launch()
    except PostgresUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs PostgreSQL: {exc}")
        pytest.skip(str(exc))
    yield server
    server.destroy()


@pytest.fixture
def postgres_databases(postgres_server: PostgresServer) -> Iterator[DatabaseFactory]:
    """`postgres_databases()`: the URL of a new, empty database (as many as a test needs); dropped after the test."""
    if postgres_server.pid() is None:  # an earlier test stopped it and failed before starting it again
        postgres_server.start()
    made: list[str] = []

    def new() -> str:
        made.append(postgres_server.new_database())
        return made[-1]

    yield new
    if postgres_server.pid() is None:
        postgres_server.start()
    for url in made:
        postgres_server.drop_database(url)


@pytest.fixture
def postgres_url(postgres_databases: DatabaseFactory) -> str:
    """The URL (with its password) of a fresh, empty database of the session's PostgreSQL server."""
    return postgres_databases()
