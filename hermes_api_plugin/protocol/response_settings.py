"""The Responses request fields a Response object echoes (WIRE.md §16): sampling, output and identification settings
that the Open Responses `ResponseResource` requires on every object — checked (type and range → 400 naming the
field), kept, and echoed with the spec's defaults when absent. The agent runs its own model loop: none of them
changes what it does (`ECHOED_ONLY`). Also the function tools as a Response object lists them (`echoed_tools`).

Pure: no aiohttp. Its own module so that the create body (protocol/responses.py) only adds its props and one value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..config.settings import parse_bool
from .limits import NAME_MAX, short
from .schema import AnyJson, Num, Obj, Prop, Str, Tagged

DEFAULT_TEXT: dict[str, Any] = {"format": {"type": "text"}}
SERVICE_TIERS = ("auto", "default", "flex", "priority")
REASONING_SUMMARIES = ("auto", "concise", "detailed")
VERBOSITIES = ("low", "medium", "high")
IDENTIFIER_MAX = 256  # safety_identifier, prompt_cache_key, user: opaque client strings, echoed

# What the gateway accepts and echoes but cannot honour: the agent's model calls are its own (README should list them).
ECHOED_ONLY = (
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "top_logprobs",
    "max_output_tokens",
    "max_tool_calls",
    "service_tier",
    "text",
    "prompt_cache_key",
    "safety_identifier",
    "user",
    "reasoning.summary",
)

_FORMAT = Tagged(
    "type",
    {
        "text": Obj((Prop("type", Str(enum=("text",)), True),), name="TextResponseFormat"),
        "json_object": Obj((Prop("type", Str(enum=("json_object",)), True),), name="JsonObjectResponseFormat"),
        "json_schema": Obj(
            (
                Prop("type", Str(enum=("json_schema",)), True),
                Prop("name", short(NAME_MAX), True),
                Prop("schema", AnyJson(description="A JSON Schema")),
                Prop("description", Str()),
                Prop("strict", AnyJson()),
            ),
            name="JsonSchemaResponseFormat",
        ),
    },
    default="text",
)
_IDENTIFIER = short(IDENTIFIER_MAX)
SETTINGS_PROPS = (
    Prop("temperature", Num(0, 2), description="Echoed (the agent's model settings are its own)"),
    Prop("top_p", Num(0, 1), description="Echoed"),
    Prop("presence_penalty", Num(-2, 2), description="Echoed"),
    Prop("frequency_penalty", Num(-2, 2), description="Echoed"),
    Prop("top_logprobs", Num(0, 20, integer=True), description="Echoed; no logprobs are returned"),
    Prop("max_output_tokens", Num(1, integer=True), description="Echoed"),
    Prop("max_tool_calls", Num(1, integer=True), description="Echoed"),
    Prop("service_tier", Str(enum=SERVICE_TIERS), description="Echoed"),
    Prop(
        "text",
        Obj((Prop("format", _FORMAT), Prop("verbosity", Str(enum=VERBOSITIES))), name="TextSettings"),
        description="Echoed; the answer is plain text",
    ),
    Prop("safety_identifier", _IDENTIFIER, description="Echoed"),
    Prop("prompt_cache_key", _IDENTIFIER, description="Echoed"),
    Prop("user", _IDENTIFIER, description="Echoed"),
)


@dataclass(frozen=True, kw_only=True)
class ResponseSettings:
    """The echoed fields of one request, with the spec's defaults; its field names are the Response object's.
    Keyword-only, so that `ResponseHead` (dialects/responses.py), the Response object's head, extends it with its ids
    — one list of these fields, and a head stored before they existed loads with these defaults."""

    truncation: str = "disabled"
    text: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_TEXT))
    temperature: float = 1.0
    top_p: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    top_logprobs: int = 0
    reasoning: dict[str, Any] | None = field(default_factory=lambda: {"effort": None, "summary": None})
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    service_tier: str = "default"
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    user: str | None = None

    def echoed(self) -> dict[str, Any]:
        """The fields by name, as `ResponseHead` takes them."""
        return asdict(self)


def parse_settings(body: Mapping[str, Any], effort: str | None) -> ResponseSettings:
    """The settings of a checked create body (SETTINGS_PROPS checked it); `effort` is the reasoning effort the turn
    runs with (model_options wins over `reasoning.effort`, §10.2)."""
    text = body.get("text")
    echoed_text = dict(DEFAULT_TEXT)
    if isinstance(text, dict):
        echoed_text = {**text, "format": text.get("format") or DEFAULT_TEXT["format"]}
    reasoning = body.get("reasoning")
    summary = reasoning.get("summary") if isinstance(reasoning, dict) else None
    return ResponseSettings(
        truncation=body.get("truncation", "disabled"),
        text=echoed_text,
        temperature=body.get("temperature", 1.0),
        top_p=body.get("top_p", 1.0),
        presence_penalty=body.get("presence_penalty", 0.0),
        frequency_penalty=body.get("frequency_penalty", 0.0),
        top_logprobs=body.get("top_logprobs", 0),
        reasoning={"effort": effort, "summary": summary if summary in REASONING_SUMMARIES else None},
        max_output_tokens=body.get("max_output_tokens"),
        max_tool_calls=body.get("max_tool_calls"),
        service_tier=body.get("service_tier", "default"),
        safety_identifier=body.get("safety_identifier"),
        prompt_cache_key=body.get("prompt_cache_key"),
        user=body.get("user"),
    )


def echoed_tools(tools: list[Any]) -> list[Any]:
    """The request's tools as a Response object lists them: a function tool with every field the spec's FunctionTool
    requires (`description` and `parameters` null when not sent, `strict` true — OpenAI's default — when not sent);
    other tools as sent."""
    out: list[Any] = []
    for tool in tools:
        if isinstance(tool, dict) and tool.get("type") == "function":
            strict = parse_bool(tool.get("strict"))
            tool = {
                **tool,
                "description": tool.get("description"),
                "parameters": tool.get("parameters"),
                "strict": True if strict is None else strict,
            }
        out.append(tool)
    return out
