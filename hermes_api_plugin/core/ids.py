"""Random hex for the ids the plugin makes (runs, completions, responses, sessions, tool calls): the operating
system's randomness, as `secrets.token_hex` gives it, fetched a page at a time.

`secrets.token_hex` is one `getrandom` system call per id, and a chat stream makes three ids (issue 25: 2.5 % of a
one-delta stream's loop time at 100 streams). The bytes are the same kind: each id takes fresh ones from the page,
none is ever handed out twice, and the page is refilled from `os.urandom` when it runs out. Thread-safe: Hermes makes
tool-call ids on its agent threads.
"""

from __future__ import annotations

import os
import threading

PAGE_BYTES = 4096

_lock = threading.Lock()
_page = b""
_taken = 0


def random_hex(nbytes: int) -> str:
    """`nbytes` bytes of OS randomness as 2 × `nbytes` hex digits (as `secrets.token_hex(nbytes)`)."""
    global _page, _taken
    with _lock:
        if _taken + nbytes > len(_page):
            _page, _taken = os.urandom(max(PAGE_BYTES, nbytes)), 0
        start = _taken
        _taken = start + nbytes
        return _page[start : start + nbytes].hex()
