"""background.py: host work a request answered for before it ended (the cron fire's run) is held until it ends,
counted, awaited by the drain within its grace, and refused once the drain began (§1.8)."""

from __future__ import annotations

import asyncio
import logging
import warnings

import pytest

from hermes_api_plugin.cluster.background import BackgroundWork
from hermes_api_plugin.core.errors import ApiError


async def test_work_is_counted_until_it_ends_and_a_failure_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    work = BackgroundWork()
    gate = asyncio.Event()

    async def held() -> None:
        await gate.wait()
        raise RuntimeError("the run broke")

    task = work.spawn(held(), name="cron fire 'x'")
    assert work.active == 1
    with caplog.at_level(logging.ERROR, logger="hermes_api_plugin"):
        gate.set()
        await asyncio.wait({task})
        await asyncio.sleep(0)  # the done callback runs on the next loop pass
    assert work.active == 0
    assert "background task cron fire 'x' failed: RuntimeError: the run broke" in caplog.text


async def test_the_drain_waits_then_refuses_new_work_without_leaving_it_unawaited() -> None:
    work = BackgroundWork()
    gate = asyncio.Event()
    ended: list[str] = []

    async def run() -> None:
        await gate.wait()
        ended.append("run")

    work.spawn(run(), name="run")
    drained = asyncio.ensure_future(work.drain(5))
    await asyncio.sleep(0)
    assert work.closed

    async def late() -> None:
        ended.append("late")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine was never awaited" would be a RuntimeWarning
        with pytest.raises(ApiError) as refused:
            work.spawn(late(), name="late")
    assert refused.value.status == 503 and refused.value.code == "gateway_draining"
    assert not drained.done()
    gate.set()
    await asyncio.wait_for(drained, 5)
    assert ended == ["run"] and work.active == 0


async def test_work_still_running_after_the_grace_is_cancelled_and_named(caplog: pytest.LogCaptureFixture) -> None:
    work = BackgroundWork()
    task = work.spawn(asyncio.Event().wait(), name="cron fire 'stuck'")  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="hermes_api_plugin"):
        await asyncio.wait_for(work.drain(0.05), 5)
    assert task.cancelled() and work.active == 0
    assert "1 background task(s) still running after 0.05 s: cron fire 'stuck'" in caplog.text
