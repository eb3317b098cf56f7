"""Declared function tools and `tool_choice` as a request sends them (WIRE.md §15.2, §15.3, §15.4), parsed into the
`ClientTool`s and `ToolChoice` a turn lends its agent (core/client_tools.py).

Two shapes: Chat Completions nests a function (`{"type":"function","function":{"name",…}}`), Responses flattens it
(`{"type":"function","name",…}`); runs take either. Tools of other types (the Responses built-ins, `custom`) are
echoed where the dialect echoes tools, never offered: the agent's own tools do that work. A `tool_choice` naming a
function the request did not declare is 400, as OpenAI answers it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.client_tools import AUTO, CHOOSE_AUTO, FUNCTION, NONE, REQUIRED, ClientTool, ToolChoice
from ..core.errors import invalid_parameter
from .limits import NAME_MAX, short
from .schema import AnyJson, Bool, Obj, Prop, Str

# OpenAI's rule for function names: what a provider accepts as a tool name.
FUNCTION_NAME = Str(
    min_length=1,
    max_length=64,
    pattern=r"^[A-Za-z0-9_-]+$",
    message="'{param}' must be 1-64 letters, digits, underscores or dashes",
)
_PARAMETERS = Obj((), description="The JSON Schema of the function's arguments")
_FUNCTION_FIELDS = (
    Prop("name", FUNCTION_NAME, True),
    Prop("description", Str()),
    Prop("parameters", _PARAMETERS),
    Prop("strict", Bool()),
)
CHAT_FUNCTION = Obj(_FUNCTION_FIELDS, name="FunctionDefinition")
CHAT_TOOL = Obj(
    (Prop("type", short(NAME_MAX), True), Prop("function", CHAT_FUNCTION)),
    name="ChatTool",
    description="A function tool the client lends the agent for this turn (§15.2); other types are ignored",
)
RESPONSES_TOOL = Obj(
    (Prop("type", short(NAME_MAX), True), *[Prop(p.name, p.node, False, p.description) for p in _FUNCTION_FIELDS]),
    name="ResponsesFunctionTool",
    description="A function tool the client lends the agent for this turn (§15.3), echoed as sent; other types are "
    "echoed and not offered",
)
TOOL_CHOICE = AnyJson(
    description='"auto", "none", "required", or the one function the agent must call: {"type":"function",'
    '"function":{"name"}} (chat) or {"type":"function","name"} (Responses)'
)


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The function fields of a checked tool in either shape; None for a tool of another type."""
    if tool.get("type") != "function":
        return None
    nested = tool.get("function")
    return nested if isinstance(nested, Mapping) else tool


def parse_client_tools(tools: Sequence[Mapping[str, Any]] | None, param: str = "tools") -> tuple[ClientTool, ...]:
    """The function tools of a checked `tools` array (either shape); a function without its name is 400, a name
    declared twice is 400."""
    declared: list[ClientTool] = []
    seen: set[str] = set()
    for i, tool in enumerate(tools or ()):
        function = _function(tool)
        if function is None:
            continue
        name = function.get("name")
        where = f"{param}[{i}].function.name" if "function" in tool else f"{param}[{i}].name"
        if not isinstance(name, str):
            raise invalid_parameter(f"'{where}' is required for a function tool", where)
        FUNCTION_NAME.check(name, where)
        if name in seen:
            raise invalid_parameter(f"The function {name!r} is declared twice", where)
        seen.add(name)
        parameters = function.get("parameters")
        declared.append(
            ClientTool(
                name=name,
                description=str(function.get("description") or ""),
                parameters=parameters if isinstance(parameters, Mapping) else {},
                strict=function.get("strict"),
            )
        )
    return tuple(declared)


def parse_tool_choice(value: Any, tools: tuple[ClientTool, ...], param: str = "tool_choice") -> ToolChoice:
    """A `tool_choice` (either shape): auto when absent; `allowed_tools` and the built-in tool types leave the choice
    to the agent; a named function must be one the request declared."""
    if value is None:
        return CHOOSE_AUTO
    if isinstance(value, str):
        if value not in (AUTO, NONE, REQUIRED):
            raise invalid_parameter(f"'{param}' must be one of auto, none, required, or a function", param)
        if value == REQUIRED and not tools:
            raise invalid_parameter(f"'{param}' is required but the request declares no function tools", param)
        return ToolChoice(value)
    if not isinstance(value, Mapping):
        raise invalid_parameter(f"'{param}' must be a string or an object", param)
    if value.get("type") != "function":
        return CHOOSE_AUTO
    nested = value.get("function")
    name = nested.get("name") if isinstance(nested, Mapping) else value.get("name")
    if not isinstance(name, str) or name not in {tool.name for tool in tools}:
        raise invalid_parameter(f"'{param}' names a function the request does not declare in 'tools'", param)
    return ToolChoice(FUNCTION, name)
