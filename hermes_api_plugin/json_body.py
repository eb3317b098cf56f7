"""A request body as a JSON object (WIRE.md §1.7, §1.10): strict UTF-8, RFC 8259 numbers, bounded nesting, and
lone surrogates replaced — so that what a handler receives can be hashed, stored and echoed without surprises.

Pure: no aiohttp. Every refusal is 400 `invalid_json` with a message that says which rule the body broke.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import ApiError, invalid_request

MAX_DEPTH = 128
"""Containers (objects and arrays) nested in one body, the body itself counting as 1.

Why 128: real requests nest far less — the deepest are tools' JSON-Schema `parameters`, a few dozen levels at
most — and serde_json's default limit is the same number. Bodies that pass must be safe for every recursive consumer
further on (the C JSON encoder of the identity hash and of the store, `copy.deepcopy`, the agent's SDK), each of
which spends one to three Python frames per level against the default recursion limit of 1000, on top of the
~100 frames of the server's own stack: 128 levels leave ample room. The limit is checked here, once, by an
iterative walk; nothing downstream needs its own guard.
"""

# Only a JSON escape can produce a surrogate (strict UTF-8 decoding refuses encoded ones), so a body whose bytes hold
# no `\uD800`-`\uDFFF` escape needs no search for them; a false positive (`\\uD800`) only costs the walk.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_INT_DIGITS = 4300  # Python's own default for int() of a string; said here so the refusal has a clear message


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


def _too_deep() -> ApiError:
    return invalid_request("invalid_json", f"Request body nests deeper than {MAX_DEPTH} levels")


def _clean(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


def _walk(body: Any, surrogates: bool) -> None:
    """Enforce MAX_DEPTH and, when `surrogates`, replace lone surrogates in every key and string, in place.

    Iterative (an explicit stack), so a hostile body cannot turn this check into the recursion it guards against.
    Lone surrogates (`"\\ud800"`, valid JSON escapes with no UTF-8 encoding) become U+FFFD, as a browser's
    TextEncoder would encode them, instead of refusing the request: JavaScript clients emit them for text cut in the
    middle of an emoji, and a chat should not fail on a broken emoji. Replacement happens before the identity hash
    (WIRE.md §5.2), so the same body always hashes the same, and before anything reaches the store, which can then
    always encode what it is given.
    """
    stack: list[tuple[Any, int]] = [(body, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep()
        if isinstance(node, dict):
            if surrogates and any(_SURROGATE.search(k) for k in node):
                cleaned = {_clean(k): v for k, v in node.items()}  # colliding keys: the last wins, as in parsing
                node.clear()
                node.update(cleaned)
            items: Any = node.items()
        else:
            items = enumerate(node)
        for key, value in items:
            if isinstance(value, (dict, list)):
                stack.append((value, depth + 1))
            elif surrogates and isinstance(value, str) and _SURROGATE.search(value):
                node[key] = _clean(value)


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object, or 400 invalid_json naming what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid_request("invalid_json", "Request body must be valid UTF-8 JSON: it is not UTF-8") from None
    try:
        body = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except _NotJson as exc:
        raise invalid_request("invalid_json", f"Request body must be valid UTF-8 JSON: {exc}") from None
    except json.JSONDecodeError as exc:
        raise invalid_request(
            "invalid_json", f"Request body must be valid UTF-8 JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        # The C parser recurses once per level and stops at the interpreter's limit, far above MAX_DEPTH: the same
        # refusal as the walk below gives for a body that did parse.
        raise _too_deep() from None
    if not isinstance(body, dict):
        raise invalid_request("invalid_json", "Request body must be a JSON object")
    surrogates = _SURROGATE_ESCAPE.search(raw) is not None
    if surrogates or raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
        _walk(body, surrogates)
    return body
