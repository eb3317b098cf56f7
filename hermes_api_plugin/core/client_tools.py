"""The tools a client lends the agent for one turn (WIRE.md §15.2, §15.3): its declared function tools and its
`tool_choice`, as both dialects parse them. The agent may call them beside its own tools; a call suspends the turn
until the client returns the output (turns/suspension.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

AUTO = "auto"  # the agent decides
NONE = "none"  # the declared tools are not offered this turn
REQUIRED = "required"  # the agent must call one of them
FUNCTION = "function"  # the agent must call the one named


@dataclass(frozen=True)
class ClientTool:
    """One declared function tool: its name, description and JSON Schema of its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    strict: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """The Chat Completions form of the declaration (the agent's tool schema)."""
        function: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
        }
        if self.strict is not None:
            function["strict"] = self.strict
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class ToolChoice:
    """`tool_choice`: `mode` is AUTO, NONE, REQUIRED or FUNCTION (then `name` is the function)."""

    mode: str = AUTO
    name: str | None = None

    def offered(self, tools: tuple[ClientTool, ...]) -> tuple[ClientTool, ...]:
        """The declared tools the agent may call this turn."""
        if self.mode == NONE:
            return ()
        if self.mode == FUNCTION:
            return tuple(t for t in tools if t.name == self.name)
        return tools


CHOOSE_AUTO = ToolChoice()
