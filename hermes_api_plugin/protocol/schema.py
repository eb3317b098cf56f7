"""Request schemas: each field is defined once, and that one definition both checks a parsed JSON body and renders
as the JSON Schema that `/openapi.json` publishes (WIRE.md §8.4), so the document cannot drift from the parsers.

Plain frozen dataclasses, no dependency: the plugin runs inside hermes-agent's environment, whose pins are not ours
to add to, and the checks must raise this project's own errors (`invalid_parameter` with the request path in
`param`, `missing_required_parameter`, or a node's own code such as `invalid_content_part`), which a generic
validator's messages would not give.

Conventions (WIRE.md §1.10): unknown fields are ignored (objects are open unless `closed`); an optional field that
is `null` is absent; a required field that is absent or `null` is `missing_required_parameter`. `check` returns the
value with booleans folded (`"yes"` → True) and absent optional fields left out, so a parser reads one normal form.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config.settings import parse_bool
from ..core.errors import ApiError, invalid_parameter, invalid_request, missing_parameter

Defs = dict[str, dict[str, Any]]  # the components/schemas being collected while rendering

BOOL_STRINGS = ("true", "false", "1", "0", "yes", "no")


def _path(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str]:
    """A JSON Schema `pattern` with its ECMA meaning: a final `$` is the end of the text (Python's `$` would also
    match before a final newline, letting an id that ends in a newline through)."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


class Node:
    """A schema node: `check(value, param)` validates and normalises; `render(defs)` is its JSON Schema."""

    types: tuple[str, ...] = ()  # the JSON types the node accepts, for `Either` to dispatch on
    expected: str = "a value"
    code: str = "invalid_parameter"
    description: str = ""

    def check(self, value: Any, param: str) -> Any:
        raise NotImplementedError

    def render(self, defs: Defs) -> dict[str, Any]:
        raise NotImplementedError

    def fail(self, param: str, message: str | None = None) -> ApiError:
        text = message.replace("{param}", param) if message else f"'{param}' must be {self.expected}"
        if self.code == "invalid_parameter":
            return invalid_parameter(text, param)
        return invalid_request(self.code, text, param)

    def _described(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.description:
            schema["description"] = self.description
        return schema


@dataclass(frozen=True)
class Str(Node):
    enum: tuple[str, ...] = ()
    min_length: int = 0
    max_length: int | None = None
    description: str = ""
    code: str = "invalid_parameter"
    message: str | None = None  # a clearer error than "must be a string" where one helps; `{param}`: the path
    pattern: str | None = None
    types = ("string",)

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.enum:
            return "one of " + ", ".join(self.enum)
        if self.max_length is not None:
            return f"a string of {self.min_length}-{self.max_length} characters"
        return "a non-empty string" if self.min_length else "a string"

    def check(self, value: Any, param: str) -> Any:
        if (
            not isinstance(value, str)
            or (self.enum and value not in self.enum)
            or len(value) < self.min_length
            or (self.max_length is not None and len(value) > self.max_length)
            or (self.pattern is not None and not _pattern(self.pattern).search(value))
        ):
            raise self.fail(param, self.message)
        return value

    def render(self, defs: Defs) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        if self.enum:
            schema["enum"] = list(self.enum)
        if self.min_length:
            schema["minLength"] = self.min_length
        if self.max_length is not None:
            schema["maxLength"] = self.max_length
        if self.pattern is not None:
            schema["pattern"] = self.pattern
        return self._described(schema)


@dataclass(frozen=True)
class Bool(Node):
    """A JSON boolean, or for compatibility one of the strings of WIRE.md §1.10 (folded to a bool)."""

    description: str = ""
    types = ("boolean", "string")
    expected = "a boolean"

    def check(self, value: Any, param: str) -> Any:
        parsed = parse_bool(value)
        if parsed is None:
            raise self.fail(param)
        return parsed

    def render(self, defs: Defs) -> dict[str, Any]:
        return self._described({"anyOf": [{"type": "boolean"}, {"type": "string", "enum": list(BOOL_STRINGS)}]})


@dataclass(frozen=True)
class Num(Node):
    """A JSON number (an integer when `integer`; never a boolean) within [minimum, maximum] when they are set."""

    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False
    description: str = ""

    @property
    def types(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("integer",) if self.integer else ("integer", "number")

    @property
    def expected(self) -> str:  # type: ignore[override]
        kind = "an integer" if self.integer else "a number"
        if self.minimum is not None and self.maximum is not None:
            return f"{kind} from {_bound(self.minimum)} to {_bound(self.maximum)}"
        if self.minimum is not None:
            return f"{kind} of at least {_bound(self.minimum)}"
        return kind

    def check(self, value: Any, param: str) -> Any:
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # NaN: never
        if number and self.integer and isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON Schema's integer: 9.0 is 9
        if (
            not number
            or (self.integer and not isinstance(value, int))
            or (self.minimum is not None and value < self.minimum)
            or (self.maximum is not None and value > self.maximum)
        ):
            raise self.fail(param)
        return value

    def render(self, defs: Defs) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "integer" if self.integer else "number"}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return self._described(schema)


def _bound(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclass(frozen=True)
class AnyJson(Node):
    """Any JSON value, kept as sent (sampling fields, `tool_choice`, …)."""

    description: str = ""
    types = ("null", "boolean", "integer", "number", "string", "array", "object")

    def check(self, value: Any, param: str) -> Any:
        return value

    def render(self, defs: Defs) -> dict[str, Any]:
        return self._described({})


@dataclass(frozen=True)
class Arr(Node):
    items: Node
    max_items: int | None = None
    min_items: int = 0
    description: str = ""
    code: str = "invalid_parameter"
    types = ("array",)
    expected = "an array"

    def check(self, value: Any, param: str) -> Any:
        if not isinstance(value, list):
            raise self.fail(param)
        if len(value) < self.min_items:  # an empty list where items are needed is missing (WIRE.md §1.7)
            raise invalid_request("missing_required_parameter", f"'{param}' must not be empty", param)
        if self.max_items is not None and len(value) > self.max_items:
            raise self.fail(param, f"'{param}' holds at most {self.max_items} items")
        return [self.items.check(item, f"{param}[{i}]") for i, item in enumerate(value)]

    def render(self, defs: Defs) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array", "items": self.items.render(defs)}
        if self.min_items:
            schema["minItems"] = self.min_items
        if self.max_items is not None:
            schema["maxItems"] = self.max_items
        return self._described(schema)


@dataclass(frozen=True)
class StrMap(Node):
    """An object of free keys (OpenAI's `metadata`): at most `max_pairs` of them, each key checked by `keys` (a bad key
    is reported at the object's path with `key_message`: the key itself may be what is too long) and each value by
    `values` (at `param.key`)."""

    keys: Str
    values: Node
    max_pairs: int
    key_message: str = "Each key of '{param}' must be a string"
    description: str = ""
    code: str = "invalid_parameter"
    types = ("object",)
    expected = "an object"

    def check(self, value: Any, param: str) -> Any:
        if not isinstance(value, dict):
            raise self.fail(param)
        if len(value) > self.max_pairs:
            raise self.fail(param, f"'{param}' holds at most {self.max_pairs} pairs")
        for key in value:
            try:
                self.keys.check(key, param)
            except ApiError:
                raise self.fail(param, self.key_message) from None
        return {key: self.values.check(item, _path(param, key)) for key, item in value.items()}

    def render(self, defs: Defs) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "maxProperties": self.max_pairs}
        schema["propertyNames"] = self.keys.render(defs)
        schema["additionalProperties"] = self.values.render(defs)
        return self._described(schema)


@dataclass(frozen=True)
class Prop:
    """One field of an object: its name, its node, whether it is required."""

    name: str
    node: Node
    required: bool = False
    description: str = ""
    nullable: bool = False  # replies: always present, may be null


@dataclass(frozen=True)
class Obj(Node):
    """A JSON object. `name` renders it once under components/schemas and refers to it by `$ref`."""

    props: tuple[Prop, ...]
    name: str | None = None
    closed: bool = False  # unknown fields are 400 instead of ignored (PATCH bodies)
    whole: bool = False  # a missing required field is reported at the object's path (WIRE.md §4.1 history items)
    any_of: tuple[str, ...] = ()  # at least one of these fields is sent (a field and its alias)
    description: str = ""
    code: str = "invalid_parameter"
    types = ("object",)
    expected = "an object"

    def check(self, value: Any, param: str) -> Any:
        if not isinstance(value, dict):
            raise self.fail(param)
        known = {p.name: p for p in self.props}
        if self.closed:
            for name in value:
                if name not in known:
                    allowed = ", ".join(known)
                    raise self.fail(_path(param, name), f"'{name}' cannot be sent here; send {allowed}")
        if self.any_of and all(value.get(name) is None for name in self.any_of):
            raise self._missing(param, self.any_of[0])
        out = dict(value) if not self.closed else {}
        for prop in self.props:
            raw = value.get(prop.name)
            if raw is None:
                if prop.required:
                    raise self._missing(param, prop.name)
                out.pop(prop.name, None)
                continue
            out[prop.name] = prop.node.check(raw, _path(param, prop.name))
        return out

    def _missing(self, param: str, name: str) -> ApiError:
        """A body's own field: missing_required_parameter (§1.7); inside an item: that item's invalid value."""
        if not param:
            return missing_parameter(name)
        if self.whole:
            needed = " and ".join(f"'{p.name}'" for p in self.props if p.required)
            return self.fail(param, f"'{param}' needs {needed}")
        return self.fail(_path(param, name), f"'{_path(param, name)}' is required")

    def render(self, defs: Defs) -> dict[str, Any]:
        if self.name is not None:
            if self.name not in defs:
                defs[self.name] = {}  # reserved first: a recursive reference renders as a $ref
                defs[self.name] = self._inline(defs)
            return {"$ref": f"#/components/schemas/{self.name}"}
        return self._inline(defs)

    def _inline(self, defs: Defs) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        for prop in self.props:
            schema = prop.node.render(defs)
            if not prop.required or prop.nullable:
                schema = {"anyOf": [schema, {"type": "null"}]} if "$ref" in schema else _nullable(schema)
            if prop.description:
                schema = {**schema, "description": prop.description}
            properties[prop.name] = schema
        out: dict[str, Any] = {"type": "object", "properties": properties}
        required = [p.name for p in self.props if p.required]
        if required:
            out["required"] = required
        if self.closed:
            out["additionalProperties"] = False
        if self.any_of:
            present = {"not": {"type": "null"}}
            out["anyOf"] = [{"required": [name], "properties": {name: present}} for name in self.any_of]
        return self._described(out)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional field may be sent as `null` (it is then absent)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        out = {**schema, "type": [kind, "null"]}
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    return {"anyOf": [schema, {"type": "null"}]} if schema else schema


@dataclass(frozen=True)
class Either(Node):
    """One of several nodes, chosen by the value's JSON type (`input`: a string or an array of items)."""

    options: tuple[Node, ...]
    expected: str = "a value of another type"
    code: str = "invalid_parameter"
    description: str = ""

    @property
    def types(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(t for option in self.options for t in option.types)

    def check(self, value: Any, param: str) -> Any:
        kind = _json_type(value)
        for option in self.options:
            if kind in option.types or (kind == "integer" and "number" in option.types):
                return option.check(value, param)
        raise self.fail(param)

    def render(self, defs: Defs) -> dict[str, Any]:
        return self._described({"anyOf": [option.render(defs) for option in self.options]})


@dataclass(frozen=True)
class Tagged(Node):
    """Objects told apart by a string tag field (`type`), `default` when it is absent."""

    tag: str
    variants: Mapping[str, Obj]
    default: str | None = None
    expected: str = "an object"
    code: str = "invalid_parameter"
    description: str = ""
    types = ("object",)

    def check(self, value: Any, param: str) -> Any:
        if not isinstance(value, dict):
            raise self.fail(param)
        kind = value.get(self.tag)
        if kind is None:  # absent or null: an optional field sent as null is absent
            kind = self.default
        variant = self.variants.get(kind) if isinstance(kind, str) else None
        if variant is None:  # reported at the item's path (WIRE.md §4.1: "anything else")
            raise self.fail(param, f"'{param}' has an unsupported {self.tag} {kind!r}")
        return variant.check(value, param)

    def render(self, defs: Defs) -> dict[str, Any]:
        unique = {id(v): v for v in self.variants.values()}  # several tags may share one variant
        return self._described({"oneOf": [variant.render(defs) for variant in unique.values()]})


@dataclass(frozen=True)
class Checked(Node):
    """A node whose check is a parser of its own (content parts, §9: their own error codes), rendered by `shape`."""

    shape: Node
    parse: Callable[[Any, str], Any] = field(compare=False)
    description: str = ""

    @property
    def types(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.shape.types

    def check(self, value: Any, param: str) -> Any:
        return self.parse(value, param)

    def render(self, defs: Defs) -> dict[str, Any]:
        return self.shape.render(defs)


def const(value: str, description: str = "") -> Str:
    return Str(enum=(value,), description=description)
