"""Deterministic arguments valid for a declared tool's JSON Schema (WIRE.md §15.5: the scripted runtime's call)."""

from __future__ import annotations

from hermes_api_plugin.runtimes.schema_example import example_arguments, example_value


def test_every_declared_property_gets_a_value_of_its_type() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 3},
            "ratio": {"type": "number", "exclusiveMaximum": 1},
            "units": {"enum": ["metric", "imperial"]},
            "alerts": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
            "note": {"type": ["null", "string"]},
            "kind": {"const": "fixed"},
            "level": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "code": {"type": "string", "minLength": 10, "maxLength": 12},
        },
    }
    assert example_arguments(schema) == {
        "city": "example",
        "days": 3,
        "ratio": 0,
        "units": "metric",
        "alerts": True,
        "tags": ["example", "example"],
        "where": {"lat": 1},
        "note": "example",
        "kind": "fixed",
        "level": 1,
        "code": "examplexxx",
    }


def test_no_schema_or_a_deep_one_gives_something_finite() -> None:
    assert example_arguments({}) == {} and example_arguments(None) == {}
    deep: dict = {"type": "object", "properties": {}}
    node = deep
    for _ in range(20):
        child: dict = {"type": "object", "properties": {}}
        node["properties"]["next"] = child
        node = child
    assert isinstance(example_value(deep), dict)
