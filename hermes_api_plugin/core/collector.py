"""What the gateway process asks of Python's cyclic garbage collector: the objects of its start-up left out of
every later full collection.

A full collection walks every object the collector tracks and stops the event loop while it does: every open
stream waits that long. A gateway process starts with tens of thousands of objects that live as long as it does —
modules, classes, functions, hermes-agent's tool registry and models (84 k tracked in a `hermes` gateway before its
first turn; a full collection of them alone took 20-60 ms here) — and walking them again finds nothing to free.
`gc.freeze()` moves them to the collector's permanent generation once the gateway is up; the collector keeps
collecting everything made after. An object of the start-up that later becomes part of a reference cycle is then
never freed by the collector (reference counting still frees the rest): the price `gc.freeze()` documents, paid for
objects that last as long as the process anyway. `api_server.gc.freeze_at_start: false` leaves the collector as
Python sets it.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_frozen = False


def freeze_start_up() -> int:
    """Collect, then freeze what is left, once per process (several apps, one process: the first start does it).
    Returns how many objects were frozen (0 when already done)."""
    global _frozen
    with _lock:
        if _frozen:
            return 0
        _frozen = True
        gc.collect()
        gc.freeze()
        return gc.get_freeze_count()
