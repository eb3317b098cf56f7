"""Query, path and header parameters: each is a schema node (protocol/schema.py) with its place and default, so
the routes parse them with what /openapi.json documents."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.digits import ascii_int
from .schema import Defs, Node


@dataclass(frozen=True)
class IntText(Node):
    """An integer query parameter (sent as text), within bounds."""

    minimum: int = 0
    maximum: int | None = None
    description: str = ""
    types = ("string", "integer")

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.maximum is None:
            return f"an integer of at least {self.minimum}"
        return f"an integer from {self.minimum} to {self.maximum}"

    def check(self, value: Any, param: str) -> Any:
        text = value if isinstance(value, str) else str(value) if isinstance(value, int) else ""
        negative = text.startswith("-")
        magnitude = ascii_int(text[1:] if negative else text)
        if magnitude is None:
            raise self.fail(param)
        number = -magnitude if negative else magnitude
        if number < self.minimum or (self.maximum is not None and number > self.maximum):
            raise self.fail(param)
        return number

    def render(self, defs: Defs) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "integer", "minimum": self.minimum}
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return self._described(schema)


@dataclass(frozen=True)
class Keyword(Node):
    """A header word (any case) with known values; any other value means `default` (WIRE.md §1.6: such headers are
    lenient, never a 400). Documented as an open enum: the known values, or any string."""

    values: tuple[str, ...] = ()
    default: str = ""
    max_length: int | None = None
    description: str = ""
    types = ("string",)

    def check(self, value: Any, param: str) -> Any:
        word = value.strip().lower() if isinstance(value, str) else ""
        return word if word in self.values else self.default

    def render(self, defs: Defs) -> dict[str, Any]:
        other: dict[str, Any] = {"type": "string", "description": f"any other value: {self.default}"}
        if self.max_length is not None:
            other["maxLength"] = self.max_length
        return self._described({"anyOf": [{"type": "string", "enum": list(self.values)}, other]})


@dataclass(frozen=True)
class Param:
    """A query or path parameter: where it is, its node, its default when absent."""

    name: str
    node: Node
    where: str = "query"
    default: Any = None
    description: str = ""

    def render(self, defs: Defs) -> dict[str, Any]:
        schema = self.node.render(defs)
        if self.default is not None:
            schema = {**schema, "default": self.default}
        out: dict[str, Any] = {"name": self.name, "in": self.where, "required": self.where == "path", "schema": schema}
        if self.description:
            out["description"] = self.description
        return out


def parse_params(values: Mapping[str, str], params: tuple[Param, ...]) -> dict[str, Any]:
    """Query parameters (or path ids) checked by their nodes, defaults filled in; unknown ones ignored."""
    out: dict[str, Any] = {}
    for param in params:
        raw = values.get(param.name)
        out[param.name] = param.default if raw is None else param.node.check(raw, param.name)
    return out
