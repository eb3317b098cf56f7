"""Fixtures of the cluster tests: gateways sharing one temporary PostgreSQL database (tests/pg.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import serve_app
from tests.live import write_home


@pytest.fixture
async def suspend_replicas(postgres_url: str, aiohttp_client: Any, tmp_path: Path) -> tuple[TestClient, TestClient]:
    """Gateways A and B on one database, each the real API app running tests/scripts/suspend.yaml (turns that
    suspend for their client, WIRE.md §15)."""
    # postgres_url first: its database is dropped after the apps' clean shutdown, not under it
    env = {"API_SERVER_STORE_URL": postgres_url}
    a = await serve_app(aiohttp_client, write_home(tmp_path / "a", env=env, script="suspend.yaml"))
    b = await serve_app(aiohttp_client, write_home(tmp_path / "b", env=env, script="suspend.yaml"))
    return a, b
