"""store/metered.py: a `@metered` store times each public operation by backend and counts its failures; a store
without a meter runs unchanged (issue 24)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_api_plugin.core.metrics import Metrics
from hermes_api_plugin.store.base import StoreError, StoreRefused
from hermes_api_plugin.store.metered import StoreMeter, attach_meter, metered
from hermes_api_plugin.store.sqlite.store import SqliteStore


@metered
class Flaky:
    """A store whose operations succeed, fail (the database is down) or are refused."""

    async def fine(self) -> int:
        return 1

    async def down(self) -> None:
        raise StoreError("connection lost")

    async def refused(self) -> None:
        raise StoreRefused("value too long")

    async def _private(self) -> int:
        return 2


def _value(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_operations_are_timed_and_failures_counted_by_kind() -> None:
    metrics, store = Metrics(), Flaky()
    assert attach_meter(store, StoreMeter(metrics, "sqlite"))
    assert await store.fine() == 1
    with pytest.raises(StoreError):
        await store.down()
    with pytest.raises(StoreRefused):
        await store.refused()
    assert await store._private() == 2
    seconds = "hermes_api_store_operation_duration_seconds_count"
    assert _value(metrics, seconds, backend="sqlite", operation="fine") == 1
    assert _value(metrics, seconds, backend="sqlite", operation="down") == 1
    assert _value(metrics, seconds, backend="sqlite", operation="_private") == 0
    errors = "hermes_api_store_operation_errors_total"
    assert _value(metrics, errors, backend="sqlite", operation="down", error="unavailable") == 1
    assert _value(metrics, errors, backend="sqlite", operation="refused", error="refused") == 1
    assert _value(metrics, errors, backend="sqlite", operation="fine", error="unavailable") == 0


async def test_a_store_without_a_meter_runs_unmetered() -> None:
    assert await Flaky().fine() == 1
    assert not attach_meter(object(), StoreMeter(Metrics(), "sqlite"))


async def test_the_sqlite_store_is_metered(tmp_path: Path) -> None:
    metrics = Metrics()
    store = SqliteStore(tmp_path / "store.sqlite3")
    attach_meter(store, StoreMeter(metrics, store.kind))
    await store.open()
    try:
        assert await store.session_for_key("scope", "key") is None
    finally:
        await store.close()
    count = "hermes_api_store_operation_duration_seconds_count"
    assert _value(metrics, count, backend="sqlite", operation="session_for_key") == 1
