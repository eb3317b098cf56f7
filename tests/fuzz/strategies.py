"""Hypothesis strategies for hostile requests: JSON bodies (deep nesting, huge and non-finite numbers, lone
surrogates, megabyte strings, duplicate keys, wrong types in every field of every POST body) and header bytes,
and the settings every fuzz test draws them under (`fuzz_settings`).

Bodies are built as Python values and written by `encode`, which also writes what Python's json refuses to: `Raw`
text (NaN, 1e999, 100 KB of brackets) and `Obj` objects with duplicate keys.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_from_bytes

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from hermes_api_plugin.http.json_body import MAX_DEPTH
from tests.helpers import HOSTILE_NUMBERS

from .surfaces import SURFACES, Surface, set_path


def fuzz_settings(examples: int) -> settings:
    """Reproducible (derandomized, no example database), no deadline: a request may take what the server needs."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


# -- JSON text --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """JSON text written as is."""

    text: str


@dataclass(frozen=True)
class Obj:
    """An object as key/value pairs, so a key may repeat."""

    pairs: tuple[tuple[str, Any], ...]


def encode(value: Any) -> str:
    """JSON text; strings with ensure_ascii, so lone surrogates go out as `\\udXXX` escapes."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        value = Obj(tuple(value.items()))
    if isinstance(value, Obj):
        return "{" + ",".join(f"{json.dumps(k)}:{encode(v)}" for k, v in value.pairs) + "}"
    if isinstance(value, list):
        return "[" + ",".join(encode(v) for v in value) + "]"
    return json.dumps(value)


def nesting(kind: str, depth: int, closed: bool = True) -> Raw:
    """`depth` containers inside each other: arrays, objects, or both alternating; `closed=False` never closes."""
    if kind == "arrays":
        opener, closer = "[", "]"
        return Raw(opener * depth + (closer * depth if closed else ""))
    if kind == "objects":
        return Raw('{"a":' * (depth - 1) + ("{}" + "}" * (depth - 1) if closed else ""))
    pairs = depth // 2
    return Raw('[{"a":' * pairs + ("[]" + "}]" * pairs if closed else ""))


LONE_SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
texts = st.text(alphabet=st.one_of(st.characters(), LONE_SURROGATES), max_size=24)
keys = st.one_of(st.sampled_from(["a", "type", "role", "content", "text", "input", ""]), texts)
SPECIAL_NUMBERS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "-1e999",
    "1e-999",
    "-0",
    "1.7976931348623157e308",
    "9" * 4301,
    "-" + "9" * 4300,
    "0." + "0" * 4000 + "1",
    "123456789012345678901234567890",
]
numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(SPECIAL_NUMBERS).map(Raw),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)


def _objects(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.dictionaries(keys, children, max_size=4),
        st.lists(st.tuples(st.sampled_from(["a", "type", "text"]), children), max_size=4).map(
            lambda pairs: Obj(tuple(pairs))  # repeated keys
        ),
    )


json_values = st.recursive(
    scalars, lambda children: st.one_of(st.lists(children, max_size=4), _objects(children)), max_leaves=12
)
deep = st.builds(
    nesting,
    st.sampled_from(["arrays", "objects", "mixed"]),
    st.sampled_from([MAX_DEPTH - 3, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 900, 5_000, 50_000, 300_000]),
    st.booleans(),
)


def _about_a_megabyte(char: str) -> str:
    return char * (1_000_000 // (len(json.dumps(char)) - 2))


huge_strings = st.sampled_from(["a", "é", "\U0001f600", "\ud800", "\x00", '"', "\\", "[", " "]).map(_about_a_megabyte)


@st.composite
def hostile_values(draw: st.DrawFn) -> Any:
    """Mostly small JSON values of every type; a share of specials, deep nesting, and a few 1 MB strings."""
    roll = draw(st.integers(0, 99))
    if roll < 60:
        return draw(json_values)
    if roll < 75:
        return draw(st.one_of(st.sampled_from(SPECIAL_NUMBERS).map(Raw), st.text(LONE_SURROGATES, min_size=1)))
    if roll < 90:
        return draw(
            st.sampled_from(["", " ", "true", "user", "hello", [], {}, [{}], {"type": "input_text"}, "\u3000x\u3000"])
        )
    if roll < 97:
        return draw(deep)
    return draw(huge_strings)


# -- bodies -----------------------------------------------------------------------------------------------------------


@st.composite
def field_bodies(draw: st.DrawFn, surface: Surface) -> bytes:
    """The surface's body with one field (at any depth) replaced by a hostile value, or repeated as a duplicate
    key (first or last), sometimes streaming."""
    base = dict(surface.base)
    if surface.path != "/api/sessions" and draw(st.booleans()):
        base["stream"] = True
    path = draw(st.sampled_from(surface.fields))
    value = draw(hostile_values())
    if len(path) == 1 and draw(st.integers(0, 4)) == 0:
        name = path[0]
        pairs = [(k, v) for k, v in base.items()]
        duplicate = (name, value)
        body = Obj(tuple([duplicate, *pairs] if draw(st.booleans()) else [*pairs, duplicate]))
        return encode(body).encode()
    return encode(set_path(base, path, value)).encode()


@st.composite
def hostile_documents(draw: st.DrawFn) -> bytes:
    """Whole bodies: any JSON document, deep nesting, garbage bytes, broken UTF-8, truncated or padded JSON."""
    kind = draw(st.integers(0, 6))
    base = encode(draw(st.sampled_from([s.base for s in SURFACES.values()])))
    if kind == 0:
        return encode(draw(json_values)).encode()
    if kind == 1:
        inner = draw(deep)
        inside_a_field = draw(st.booleans())
        return encode({"input": "hello", "message": "hello", "metadata": inner} if inside_a_field else inner).encode()
    if kind == 2:
        return draw(st.binary(max_size=200))
    if kind == 3:
        cut = draw(st.integers(0, len(base)))
        return base[:cut].encode()
    if kind == 4:
        junk = draw(st.sampled_from([b"\xff", b"\xed\xa0\x80", b"\xc3", b"\x00", b"\xef\xbb\xbf", b"\\ud800"]))
        at = draw(st.integers(0, len(base)))
        return base.encode()[:at] + junk + base.encode()[at:]
    if kind == 5:
        return base.encode() + draw(st.sampled_from([b" ", b"\n", b"x", b"{}", b",", b"\x00"]))
    return draw(st.sampled_from([b"", b"null", b"[]", b'""', b"0", b"NaN", b"{}", b"{" * 10, b'{"a":1,"a":2}']))


# -- hostile parameter values (issue 20) ------------------------------------------------------------------------------

# Digits of every Unicode class: decimal (Arabic-Indic, Devanagari, fullwidth, mathematical), other (superscripts,
# circled, fractions), letter-like (Roman numerals). str.isdigit() or isdecimal() accept many; int() refuses some and
# reads others as a number nobody wrote in ASCII (issue 20, defect 1).
UNICODE_DIGITS = st.characters(categories=("Nd", "No", "Nl"))
_HUGE = [19, 20, 4300, 4301, 5000, 8192]  # past int64, around Python's int-string limit, a whole 8 KB line


number_texts = st.one_of(
    st.sampled_from(HOSTILE_NUMBERS),
    st.integers().map(str),
    st.text(UNICODE_DIGITS, min_size=1, max_size=6),
    st.lists(st.one_of(UNICODE_DIGITS, st.sampled_from("0123456789")), min_size=1, max_size=8).map("".join),
    st.builds(
        lambda sign, n, digit: sign + digit * n,
        st.sampled_from(["", "-", "+", " ", "0"]),
        st.sampled_from(_HUGE),
        st.sampled_from(["9", "1", "0", "٣", "²"]),
    ),
    st.builds(
        lambda head, tail: head + tail,
        st.sampled_from(["1", "-1", "3", "0"]),
        st.sampled_from(["e3", ".0", ".5", "_0", "\x00", "\u00a0", "\u3000", "\t", " ", "x", "\ud800", "%"]),
    ),
    st.sampled_from(["0x10", "1_000", "NaN", "Infinity", "-0", "00", "٠", "\u00a03", "3\u3000", "true", "null"]),
)
_CONTROLS = st.sampled_from(["\x00", "\r", "\n", "\r\n", "\t", "\x7f", "\x0b", "\x1b"])
hostile_strings = st.one_of(
    number_texts,
    st.sampled_from(["\x00", "a\x00", "\x00" * 3, "1\x00", "%00"]),  # NUL: no PostgreSQL text can hold it
    st.builds(
        lambda a, c, b: a + c + b, st.sampled_from(["", "1", "on", "asc"]), _CONTROLS, st.sampled_from(["", "2"])
    ),
    st.text(LONE_SURROGATES, min_size=1, max_size=3),
    st.builds(lambda c, n: c * n, st.sampled_from(["x", "9", "é", "\U0001f600", "%"]), st.sampled_from([8192, 8191])),
    st.text(max_size=40),
    st.sampled_from(["", " ", "true", "off", "OFF", "on", "1", "0", "asc", "desc", "latest", "oldest", "..", "/"]),
)


def as_bytes(value: str) -> bytes:
    """A value as the bytes a client sends: UTF-8, lone surrogates written as their 3-byte forms (what a careless
    encoder emits; the server decodes them as undecodable bytes)."""
    return value.encode("utf-8", "surrogatepass")


# -- header bytes and URL parts ---------------------------------------------------------------------------------------

FUZZED_HEADERS = [
    b"X-Hermes-Session-Id",
    b"X-Hermes-Session-Key",
    b"Idempotency-Key",
    b"Last-Event-ID",
    b"Authorization",
    b"Origin",
    b"X-Hermes-Tool-Items",
    b"X-Hermes-Tool-Progress",
    b"Content-Type",
    b"Access-Control-Request-Headers",
]
header_values = st.one_of(
    st.binary(max_size=64),
    st.binary(max_size=300),
    st.sampled_from(
        [
            b"",
            b" ",
            b"\xff\xfe",
            b"\xed\xa0\x80",
            b"\xc3",
            b"\x00",
            b"a\rb",
            b"a\nb",
            b"\r\n\r\n",
            b".",
            b"..",
            b"a/b",
            b"\xc2\xa0x",
            "clé-🔑".encode(),
            b"Bearer " + b"\xff" * 20,
            b"9" * 40,
            b"-1",
            b"x" * 300,
            b"y" * 40_000,
            b"z" * 70_000,
        ]
    ),
)
header_values = st.one_of(header_values, hostile_strings.map(as_bytes))  # the parameter values' classes too
header_sets = st.lists(st.tuples(st.sampled_from(FUZZED_HEADERS), header_values), min_size=1, max_size=3)
url_bytes = st.one_of(st.binary(max_size=40), st.sampled_from([b"\xff", b"\xed\xa0\x80", b"%", b"..", b"", b"a b"]))


@st.composite
def url_parts(draw: st.DrawFn) -> bytes:
    """A path segment or query value: percent-encoded bytes (any), or, now and then, the raw bytes themselves."""
    raw = draw(url_bytes)
    return raw if draw(st.integers(0, 9)) == 0 else quote_from_bytes(raw, safe="").encode()
