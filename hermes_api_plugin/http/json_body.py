"""A request body as a JSON object (WIRE.md §1.7, §1.10): strict UTF-8, RFC 8259 numbers, bounded nesting, and
lone surrogates replaced — so that what a handler receives can be hashed, stored and echoed without surprises.

Pure: no aiohttp. Every refusal is 400 `invalid_json` with a message that says which rule the body broke — or 413
`body_too_large` for a body of more JSON values, object members or containers than `MAX_VALUES`, `MAX_MEMBERS`,
`MAX_CONTAINERS`. The checks work on the bytes with C-level operations, never by walking the parsed value in Python:
on a 10 MB body they cost well under json.loads' own time, instead of seconds of a blocked event loop.

Large bodies are parsed on a worker thread (core/offload.py), but the C parts of that work — json's scanner, a regex
pass, the C encoder of the identity hash — hold the interpreter lock from start to end, and so stop the event loop as
long as they run. Their time grows with the number of values, not bytes: 10 MB of `[]` takes json's scanner ~0.9 s, of
`""` the string-stripping regex ~0.6 s (issue 20, defect 3). So a large body's structure is measured before it is
parsed, in passes of `_STRINGS_PER_PASS` strings each (the lock can change hands between passes), and a body of more
values, members or containers than anyone sends is refused before any C pass over its values runs.
"""

from __future__ import annotations

import json
import math
import operator
import re
from itertools import accumulate, count
from typing import Any

from ..core.errors import ApiError, invalid_request

MAX_DEPTH = 128
"""Containers (objects and arrays) nested in one body, the body itself counting as 1.

Why 128: real requests nest far less — the deepest are tools' JSON-Schema `parameters`, a few dozen levels at
most — and serde_json's default limit is the same number. Bodies that pass must be safe for every recursive consumer
further on (the C JSON encoder of the identity hash and of the store, `copy.deepcopy`, the agent's SDK), each of
which spends one to three Python frames per level against the default recursion limit of 1000, on top of the
~100 frames of the server's own stack: 128 levels leave ample room. The limit is checked here, once, iteratively;
nothing downstream needs its own guard.
"""
MAX_CONTAINERS = 200_000
"""Objects and arrays in one body. A chat of 10 000 messages with a few content parts each has ~50 000; json's C
scanner takes ~60 ms for 200 000 empty arrays on a 2-core machine (its slowest container)."""
MAX_VALUES = 500_000
"""Array elements and object members in one body (commas plus containers: an upper bound of its values). The C encoder
of the identity hash takes ~60 ms for a million small values."""
MAX_MEMBERS = 150_000
"""Object members in one body (its colons). One object of many members is the slowest shape of all — json's scanner
and the sorting C encoder take ~70 ms each for 150 000 keys; a chat of 10 000 messages has ~30 000 members."""
_STRINGS_PER_PASS = 50_000  # ~5-10 ms of regex per pass: the longest the lock is held while the structure is measured
MAX_INT_DIGITS = 4300  # Python's own default for int() of a string; said here so the refusal has a clear message

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_HIGH, _LOW = r"\\u[dD][89abAB][0-9a-fA-F]{2}", r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LONE_ESCAPE = re.compile(f"{_HIGH}(?!{_LOW})|(?<!{_HIGH}){_LOW}")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_A_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_AS_STEPS = bytes.maketrans(b"[]{}", b"\x02\x00\x02\x00")


class _NotJson(ValueError):
    """A body json.loads would accept but RFC 8259 does not; the message is the client's."""


def _reject_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to inf, which no JSON document can carry back out
        raise _NotJson(f"the number {text[:40]} is out of range")
    return value


def _bounded_int(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        raise _NotJson(f"an integer has more than {MAX_INT_DIGITS} digits")
    return int(text)


# Built once: json.loads with hooks would build a decoder and its C scanner on every call (~10 µs a request).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_bounded_int)


def _too_deep() -> ApiError:
    return invalid_request("invalid_json", f"Request body nests deeper than {MAX_DEPTH} levels")


def replace_lone_surrogates(text: str) -> str:
    """JSON text with every lone surrogate escape (`\\ud800`) written as `\\ufffd`.

    Such escapes are valid JSON but name no character, so no UTF-8 encoder (SQLite's, the reply's) can write them.
    They become U+FFFD, as a browser's TextEncoder would encode them, instead of refusing the request: JavaScript
    clients emit them for text cut in the middle of an emoji, and a chat should not fail on a broken emoji. This
    happens before parsing, so before the identity hash (WIRE.md §5.2): the same bytes always hash the same, and
    nothing that reaches the store needs a second look. Raw bytes cannot carry a surrogate (strict UTF-8 decoding
    refuses them), so escapes are the only way in.

    Escaped backslashes are set aside first (as NUL, which valid JSON text never holds raw), so that in `\\\\ud800`
    the `u` stays text; then one C-level substitution replaces a high escape not followed by a low one and a low
    escape not preceded by a high one.
    """
    if "\x00" in text:  # not valid JSON anyway: json.loads will say where
        return text
    protected = text.replace("\\\\", "\x00")
    return _LONE_ESCAPE.sub(r"\\ufffd", protected).replace("\x00", "\\\\")


def without_strings(raw: bytes) -> bytes:
    """The JSON text `raw` with its strings dropped: its numbers, literals and punctuation. In passes of at most
    `_STRINGS_PER_PASS` strings, each resuming right after the last string matched (so outside any string)."""
    pieces: list[bytes] = []
    rest = raw
    while True:
        parts = _STRING.split(rest, maxsplit=_STRINGS_PER_PASS)
        if len(parts) <= _STRINGS_PER_PASS:
            pieces.extend(parts)
            return b"".join(pieces)
        rest = parts.pop()
        pieces.extend(parts)


def check_structure(raw: bytes) -> bytes:
    """`raw` without its strings, once its containers, members and values are within MAX_CONTAINERS, MAX_MEMBERS and
    MAX_VALUES (else 413 body_too_large, before json's scanner runs over them)."""
    bare = without_strings(raw)
    containers = bare.count(b"[") + bare.count(b"{")
    if containers > MAX_CONTAINERS:
        raise invalid_request(
            "body_too_large", f"Request body holds more than {MAX_CONTAINERS} JSON objects and arrays", status=413
        )
    if bare.count(b":") > MAX_MEMBERS:
        raise invalid_request(
            "body_too_large", f"Request body holds more than {MAX_MEMBERS} object members", status=413
        )
    if containers + bare.count(b",") > MAX_VALUES:
        raise invalid_request("body_too_large", f"Request body holds more than {MAX_VALUES} JSON values", status=413)
    return bare


def nesting_depth(raw: bytes, *, bare: bytes | None = None) -> int:
    """How many containers the (valid) JSON text `raw` nests, the outermost counting as 1 (`bare`: `raw` without its
    strings, when already at hand).

    On bytes, with C-level operations only — no Python loop per element, no recursion: drop the strings, turn every
    opener into 2 and every closer into 0; after the i-th bracket, the running sum minus i is the depth. One
    `replace` pass first removes the innermost empty pairs (one level everywhere), so the wide, flat bodies a
    large request usually is leave almost nothing to sum.
    """
    steps = (_STRING.sub(b"", raw) if bare is None else bare).translate(_AS_STEPS, _NOT_A_BRACKET)
    if not steps:
        return 0
    inner = steps.replace(b"\x02\x00", b"")
    return 1 + max(map(operator.sub, accumulate(inner), count(1)), default=0)


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object, or 400 invalid_json naming what is wrong with it (413 body_too_large past
    MAX_CONTAINERS, MAX_MEMBERS or MAX_VALUES)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid_request("invalid_json", "Request body must be valid UTF-8 JSON: it is not UTF-8") from None
    # A body this small cannot hold more containers than MAX_CONTAINERS (nor members, nor values): no pass needed.
    bare = check_structure(raw) if len(raw) > 2 * MAX_CONTAINERS else None
    if "\\u" in text:
        text = replace_lone_surrogates(text)
    try:
        body = _DECODER.decode(text)
    except _NotJson as exc:
        raise invalid_request("invalid_json", f"Request body must be valid UTF-8 JSON: {exc}") from None
    except json.JSONDecodeError as exc:
        raise invalid_request(
            "invalid_json", f"Request body must be valid UTF-8 JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        # The C parser recurses once per level and stops at the interpreter's limit, far above MAX_DEPTH: the same
        # refusal as the check below gives for a body that did parse.
        raise _too_deep() from None
    if not isinstance(body, dict):
        raise invalid_request("invalid_json", "Request body must be a JSON object")
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and nesting_depth(raw, bare=bare) > MAX_DEPTH:
        raise _too_deep()
    return body
