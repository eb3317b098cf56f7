"""A request body as a JSON object (WIRE.md §1.7, §1.10): strict UTF-8, RFC 8259 numbers, bounded nesting, and
lone surrogates replaced — so that what a handler receives can be hashed, stored and echoed without surprises.

Pure: no aiohttp. Every refusal is 400 `invalid_json` with a message that says which rule the body broke. The checks
work on the bytes with C-level operations, never by walking the parsed value in Python: on a 10 MB body they cost
well under json.loads' own time, instead of seconds of a blocked event loop.
"""

from __future__ import annotations

import json
import math
import operator
import re
from itertools import accumulate, count
from typing import Any

from .errors import ApiError, invalid_request

MAX_DEPTH = 128
"""Containers (objects and arrays) nested in one body, the body itself counting as 1.

Why 128: real requests nest far less — the deepest are tools' JSON-Schema `parameters`, a few dozen levels at
most — and serde_json's default limit is the same number. Bodies that pass must be safe for every recursive consumer
further on (the C JSON encoder of the identity hash and of the store, `copy.deepcopy`, the agent's SDK), each of
which spends one to three Python frames per level against the default recursion limit of 1000, on top of the
~100 frames of the server's own stack: 128 levels leave ample room. The limit is checked here, once, iteratively;
nothing downstream needs its own guard.
"""
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


def nesting_depth(raw: bytes) -> int:
    """How many containers the (valid) JSON text `raw` nests, the outermost counting as 1.

    On bytes, with C-level operations only — no Python loop per element, no recursion: drop the strings, turn every
    opener into 2 and every closer into 0; after the i-th bracket, the running sum minus i is the depth. One
    `replace` pass first removes the innermost empty pairs (one level everywhere), so the wide, flat bodies a
    large request usually is leave almost nothing to sum.
    """
    steps = _STRING.sub(b"", raw).translate(_AS_STEPS, _NOT_A_BRACKET)
    if not steps:
        return 0
    inner = steps.replace(b"\x02\x00", b"")
    return 1 + max(map(operator.sub, accumulate(inner), count(1)), default=0)


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object, or 400 invalid_json naming what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid_request("invalid_json", "Request body must be valid UTF-8 JSON: it is not UTF-8") from None
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
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and nesting_depth(raw) > MAX_DEPTH:
        raise _too_deep()
    return body
