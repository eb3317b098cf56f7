"""Deterministic arguments valid for a JSON Schema: what the scripted runtime passes when it calls a tool its client
declared (WIRE.md §15.5), so that a client validating the arguments against its own schema accepts them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MAX_DEPTH = 8  # a recursive schema ($ref loops are not followed; nesting is bounded)


def example_value(schema: Any, depth: int = 0) -> Any:
    """One value the schema accepts: its `const`, `default` or first `enum` value, else the simplest of its type."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return None
    for keyword in ("const", "default"):
        if keyword in schema:
            return schema[keyword]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for keyword in ("anyOf", "oneOf", "allOf"):
        options = schema.get(keyword)
        if isinstance(options, list) and options:
            return example_value(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        return example_arguments(schema, depth + 1)
    if kind == "array":
        count = schema.get("minItems", 0)
        items = schema.get("items", {})
        return [example_value(items, depth + 1) for _ in range(count if isinstance(count, int) else 0)]
    if kind == "string":
        return _example_string(schema)
    if kind in ("integer", "number"):
        return _example_number(schema)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "example"


def example_arguments(schema: Any, depth: int = 0) -> dict[str, Any]:
    """An object for an object schema: every property it declares (strict schemas require them all), in order."""
    if not isinstance(schema, Mapping):
        return {}
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    return {str(name): example_value(sub, depth + 1) for name, sub in properties.items()}


def _example_string(schema: Mapping[str, Any]) -> str:
    text = "example"
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (low - len(text))
    if isinstance(high, int) and len(text) > high:
        text = text[: max(high, 0)]
    return text


def _example_number(schema: Mapping[str, Any]) -> int | float:
    """1 when the bounds allow it, else the nearest bound (one inside an exclusive bound)."""
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    value: int | float = 1
    if isinstance(low, (int, float)) and not isinstance(low, bool) and value <= low:
        value = low + 1 if "exclusiveMinimum" in schema and "minimum" not in schema else low
    if isinstance(high, (int, float)) and not isinstance(high, bool) and value >= high:
        value = high - 1 if "exclusiveMaximum" in schema and "maximum" not in schema else high
    if schema.get("type") == "integer":
        value = int(value)
    return value
