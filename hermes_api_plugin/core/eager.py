"""Running a coroutine to its end in the caller, without a task, when it never has to wait (issue 25).

What Python 3.12's eager tasks do, for one call on 3.11: a write of an event stream nearly always completes at once —
aiohttp waits only when the client stops reading — so the live delivery of an event (http/delivery.py) runs it
where the journal gained the event instead of scheduling a task for it. When the coroutine does wait, it goes on in a
task from where it stopped, and the caller awaits that task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_eagerly(coro: Coroutine[Any, Any, T]) -> tuple[bool, T | asyncio.Task[T]]:
    """`(True, result)` when `coro` finished without waiting (its exception raised here), else `(False, task)`: the
    task runs the rest of it."""
    try:
        awaited = coro.send(None)
    except StopIteration as done:
        return True, done.value
    return False, asyncio.get_running_loop().create_task(_resume(coro, awaited))


async def _resume(coro: Coroutine[Any, Any, T], awaited: Any) -> T:
    """Drive `coro` as a task would, from the future it stopped at: wait for that future, then send into `coro` (which
    reads the future's outcome itself); a cancellation of this task is thrown into `coro`."""
    while True:
        try:
            if awaited is None:  # a bare yield: give the loop one turn
                await asyncio.sleep(0)
            else:
                await asyncio.wait((awaited,))
        except BaseException as exc:  # cancelled: `coro` decides what that means for it
            try:
                awaited = coro.throw(exc)
            except StopIteration as done:
                return done.value
            continue
        try:
            awaited = coro.send(None)
        except StopIteration as done:
            return done.value
