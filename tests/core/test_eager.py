"""core/eager.py: a coroutine runs to its end in the caller when it never waits, else goes on in a task."""

from __future__ import annotations

import asyncio

import pytest

from hermes_api_plugin.core.eager import run_eagerly


async def test_a_coroutine_that_never_waits_finishes_in_the_call() -> None:
    steps: list[str] = []

    async def quick() -> int:
        steps.append("ran")
        return 7

    assert run_eagerly(quick()) == (True, 7)
    assert steps == ["ran"]


async def test_a_coroutine_that_waits_goes_on_in_a_task_with_what_it_waited_for() -> None:
    loop = asyncio.get_running_loop()
    gate: asyncio.Future[str] = loop.create_future()
    steps: list[str] = []

    async def slow() -> str:
        steps.append("before")
        got = await gate
        steps.append(got)
        await asyncio.sleep(0)  # a bare yield on the way
        return got + "!"

    done, task = run_eagerly(slow())
    assert not done and isinstance(task, asyncio.Task)
    assert steps == ["before"]
    gate.set_result("opened")
    assert await asyncio.wait_for(task, 1) == "opened!"
    assert steps == ["before", "opened"]


async def test_errors_surface_where_the_coroutine_is_at() -> None:
    async def fails_at_once() -> None:
        raise ValueError("now")

    with pytest.raises(ValueError, match="now"):
        run_eagerly(fails_at_once())
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def fails_later() -> None:
        await gate

    _, task = run_eagerly(fails_later())
    gate.set_exception(ConnectionResetError("gone"))
    with pytest.raises(ConnectionResetError):
        await asyncio.wait_for(task, 1)  # type: ignore[arg-type]


async def test_cancelling_the_task_cancels_the_coroutine_where_it_waits() -> None:
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    cleaned: list[bool] = []

    async def waits() -> None:
        try:
            await gate
        finally:
            cleaned.append(True)

    _, task = run_eagerly(waits())
    await asyncio.sleep(0)
    task.cancel()  # type: ignore[union-attr]
    with pytest.raises(asyncio.CancelledError):
        await task  # type: ignore[misc]
    assert cleaned == [True]
