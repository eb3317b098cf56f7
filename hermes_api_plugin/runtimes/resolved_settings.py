"""What Hermes resolves for every turn's agent — provider, credentials, API mode, toolsets, reasoning default,
fallback chain — remembered for a few seconds while the files it reads are unchanged.

Hermes' helpers read config.yaml (`load_config` deep-copies the whole config, seven times per resolution), `.env`
and `auth.json` on every call: about 5 ms of CPU per turn here, paid before the agent's first provider request — a
fifth of a warm turn's overhead. The memo below answers a repeated question from memory when:

- the same question is asked (provider, model override, profile home: the caller's key);
- config.yaml, `.env` and `auth.json` of the home are as they were (size and mtime) — `hermes model`, a new key in
  `.env`, a login or a token refresh written by Hermes all change one of them;
- it is younger than `TTL_S`. OAuth access tokens are refreshed by Hermes at least 60 s before they expire
  (`hermes_cli/auth.py`'s refresh skews, 60–3600 s), so a token remembered for at most 15 s is never handed to a
  provider expired, even when nothing on disk changed.

Each answer is a deep copy: the caller edits its kwargs and AIAgent keeps what it is given. An answer holding a live
object (Hermes' `credential_pool`, which tracks which key is exhausted) is never remembered: that state is not ours to
copy or share (`keep`). Pure: the resolution, the file list and the clock are injected
(tests/runtimes/test_resolved_settings.py).
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TTL_S = 15.0
FILES = ("config.yaml", ".env", "auth.json")  # what Hermes' resolution reads in a home
MAX_ENTRIES = 256  # distinct questions kept (provider × model × profile: a handful in practice)

Stamp = tuple[tuple[int, int] | None, ...]


def files_stamp(home: Path, names: Sequence[str] = FILES) -> Stamp:
    """Size and mtime of each file of `home` (None for a missing one)."""
    stamp: list[tuple[int, int] | None] = []
    for name in names:
        try:
            st = os.stat(home / name)
        except OSError:
            stamp.append(None)
            continue
        stamp.append((st.st_size, st.st_mtime_ns))
    return tuple(stamp)


@dataclass(frozen=True)
class _Entry:
    stamp: Stamp
    at: float
    value: dict[str, Any]


class ResolvedSettings:
    """`get(key, home, resolve)`: `resolve()`'s answer, or a copy of the one remembered for `key`."""

    def __init__(
        self,
        ttl_s: float = TTL_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        stamp: Callable[[Path], Stamp] = files_stamp,
    ) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._stamp = stamp
        self._lock = threading.Lock()
        self._entries: dict[Hashable, _Entry] = {}
        self.hits = 0
        self.misses = 0

    def get(
        self,
        key: Hashable,
        home: Path,
        resolve: Callable[[], dict[str, Any]],
        keep: Callable[[dict[str, Any]], bool] = lambda value: True,
    ) -> dict[str, Any]:
        now, stamp = self._clock(), self._stamp(home)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.stamp == stamp and now - entry.at < self.ttl_s:
                self.hits += 1
                return copy.deepcopy(entry.value)
            self.misses += 1
        value = resolve()  # outside the lock: seconds on a cold hermes-agent, and other keys need not wait
        if self.ttl_s > 0 and keep(value):
            kept = copy.deepcopy(value)
            with self._lock:
                if len(self._entries) >= MAX_ENTRIES and key not in self._entries:
                    self._entries.clear()
                self._entries[key] = _Entry(stamp, now, kept)
        return value
