"""Waiting out a store outage: a write that must not be lost is retried until the store takes it.

What a settled turn stores (its transcript, the surface's state, the rest of its journal, the settled admission)
exists only in this process until then: giving up during a database restart would lose the answer, and a keyed
retry would find the turn neither running nor settled (unknown_execution). Only StoreUnavailable is retried — a
refused statement fails the same way again. Every step retried here is idempotent (upserts, one transaction each).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .base import StoreUnavailable

log = logging.getLogger("hermes_api_plugin")

T = TypeVar("T")
# Pauses between attempts; the last repeats. An attempt on a database that is down already waits for a connection
# (postgres/db.py ACQUIRE_TIMEOUT_S), so these only space out stores that fail at once.
RETRY_DELAYS_S = (0.25, 0.5, 1.0, 2.0)


async def until_stored(write: Callable[[], Awaitable[T]], what: str) -> T:
    """`await write()` until it does not raise StoreUnavailable; one log line when it first fails and one when it
    finally got through. Cancellation (the gateway draining) ends the wait."""
    failures = 0
    while True:
        try:
            result = await write()
        except StoreUnavailable as exc:
            if not failures:
                log.warning("[API Server] could not store %s, retrying until the store is back: %s", what, exc)
            await asyncio.sleep(RETRY_DELAYS_S[min(failures, len(RETRY_DELAYS_S) - 1)])
            failures += 1
            continue
        if failures:
            log.info("[API Server] stored %s after %d failed attempts", what, failures)
        return result
