"""Store operation latency and errors by backend (issue 24): a class decorator times every public coroutine method of a
store class, as one `operation` label named after the method.

The backends stay free of metric code: `@metered` on the class, and `attach_meter` once per app (a store without a
meter — metrics off, or a test's own store — runs its methods unwrapped but for one attribute read). A store method
is never on the per-event path: journals are group-committed (turns/durable.py), so one observation per operation
costs nothing a turn can feel.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ..core.metrics import Metrics
from .base import StoreError, StoreRefused

C = TypeVar("C", bound=type)
_UNMETERED = frozenset({"open", "close"})  # start-up and shutdown, not operations


class StoreMeter:
    """One store's instruments: a histogram child and an error counter per operation (children remembered by
    `Metrics.child`)."""

    def __init__(self, metrics: Metrics, backend: str) -> None:
        self._metrics = metrics
        self._backend = backend

    def took(self, operation: str, seconds: float) -> None:
        self._metrics.child(self._metrics.store_duration, self._backend, operation).observe(seconds)

    def failed(self, operation: str, exc: StoreError) -> None:
        error = "refused" if isinstance(exc, StoreRefused) else "unavailable"
        self._metrics.store_errors.labels(self._backend, operation, error).inc()


def _timed(operation: str, method: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        meter: StoreMeter | None = self.meter
        if meter is None:
            return await method(self, *args, **kwargs)
        began = time.perf_counter()
        try:
            return await method(self, *args, **kwargs)
        except StoreError as exc:
            meter.failed(operation, exc)
            raise
        finally:
            meter.took(operation, time.perf_counter() - began)

    return timed


def metered(cls: C) -> C:
    """Time the public coroutine methods `cls` defines (inherited ones are timed where they are defined)."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or name in _UNMETERED or not inspect.iscoroutinefunction(member):
            continue
        setattr(cls, name, _timed(name, member))
    setattr(cls, "meter", None)  # noqa: B010 - what `attach_meter` sets per store
    return cls


def attach_meter(store: object, meter: StoreMeter) -> bool:
    """Give a `@metered` store (or session store) its meter; False for a store class that is not metered."""
    if not hasattr(type(store), "meter"):
        return False
    setattr(store, "meter", meter)  # noqa: B010 - the attribute `metered` adds to the class, unknown to the roles
    return True
