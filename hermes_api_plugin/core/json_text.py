"""The JSON text the plugin writes: `compact` (no spaces, raw UTF-8: every SSE record, WebSocket frame, stored row and
error body) and `canonical` (the same with its keys sorted: what identities and derived ids hash).

`json.dumps` with options builds two encoders per call, a `JSONEncoder` for the options and then the C encoder it
runs; the two here are built once: 1.5 µs for a chat chunk on the bench machine against `json.dumps`' 3.1 µs, and a
stream writes several such records besides its deltas (issue 25). The text is the same, made by the same C encoder
`json.dumps` runs. Unlike `json.dumps` they do not look for a value that contains itself (a cycle would end in
RecursionError rather than ValueError): what the plugin encodes is built from requests, events and rows, never cyclic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _text(sort_keys: bool) -> Callable[[Any], str]:
    make = getattr(_encoder, "c_make_encoder", None)  # not in typeshed: None without the accelerator
    if make is None:  # an interpreter without json's C accelerator: json.dumps itself
        return lambda value: json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
    # (markers, default, string encoder, indent, key separator, item separator, sort_keys, skipkeys, allow_nan)
    encode = make(None, _not_json, _encoder.encode_basestring, None, ":", ",", sort_keys, False, True)
    return lambda value: "".join(encode(value, 0))


compact: Callable[[Any], str] = _text(sort_keys=False)
"""`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`."""

canonical: Callable[[Any], str] = _text(sort_keys=True)
"""`json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)`."""
