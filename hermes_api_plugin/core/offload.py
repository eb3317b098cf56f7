"""Work that grows with a request's size, off the event loop (issue 20, defect 3).

Parsing a body of thousands of messages (JSON, the schema check, content parts), hashing a long history (the
identity of a keyed request, the conversation index's keys) and encoding or decoding a long transcript for the store
cost milliseconds per thousand messages; on the loop they held every other request and stream for seconds. Above
`LARGE_BODY_BYTES` of body, or `LARGE_MESSAGES` messages, such work runs on a small pool of its own threads, and the
loop keeps serving while it runs (the work is Python code, which gives up the interpreter lock every few
milliseconds). Smaller requests — nearly all of them — keep the fast path: no thread hop, no extra latency.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

LARGE_BODY_BYTES = 64 * 1024  # a body this large is parsed off the loop (a 64 KB parse takes ~1 ms)
LARGE_MESSAGES = 256  # a history this long is hashed, compared and encoded off the loop
WORKERS = 2  # the work holds the interpreter lock: more threads would not make it faster, only the loop slower

_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="hermes-api-large")
    return _pool


async def off_loop(work: Callable[[], T], large: bool) -> T:
    """`work()`: inline when the input is small, else on the pool's threads (its exceptions propagate as raised)."""
    if not large:
        return work()
    return await asyncio.get_running_loop().run_in_executor(_executor(), work)
