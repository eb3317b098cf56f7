"""POST /v1/runs: the request (WIRE.md §6.1) and its §5.2 identity. A run may lend the agent function tools of its
client (`tools`, `tool_choice`, §15.4) in either dialect's shape: a call suspends the run until
`POST /v1/runs/{id}/tool_outputs` returns its output. They are not identity (§5.2: "everything else")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..core.client_tools import CHOOSE_AUTO, ClientTool, ToolChoice
from ..core.content import Message
from ..core.errors import invalid_request
from .client_tools import CHAT_FUNCTION, RESPONSES_TOOL, TOOL_CHOICE, parse_client_tools, parse_tool_choice
from .common import (
    CONTENT,
    CONVERSATION_HISTORY,
    EFFORT,
    HISTORY_ROLES,
    MODEL_SELECTION,
    SESSION_ID,
    ModelSelection,
    conversation_history,
    identity_hash,
    parse_model_selection,
)
from .counts import MAX_MESSAGES, MAX_TOOLS
from .limits import ID_MAX, short
from .params import Param
from .schema import Arr, Either, Obj, Prop, Str


@dataclass(frozen=True)
class RunRequest:
    messages: list[Message]  # earlier input messages, then the turn input
    system: str | None
    session_id: str | None  # body `session_id`, else X-Hermes-Session-Id
    previous_response_id: str | None
    conversation_history: list[Message] | None
    selection: ModelSelection
    identity: Callable[[], str]  # the §5.2 identity hash, computed when a key asks for it
    client_tools: tuple[ClientTool, ...] = ()  # the declared function tools (WIRE.md §15.4)
    tool_choice: ToolChoice = CHOOSE_AUTO


RUN_PATH = (Param("run_id", short(ID_MAX, min_length=1), "path"),)
RUN_MESSAGE = Obj(name="RunInputMessage", props=(Prop("role", Str(enum=HISTORY_ROLES), True), Prop("content", CONTENT)))
# Either shape (WIRE.md §15.4): Chat Completions' nested `function`, or Responses' flat fields.
RUN_TOOL = Obj(
    (
        RESPONSES_TOOL.props[0],
        Prop("function", CHAT_FUNCTION, description="The function (chat's shape)"),
        *RESPONSES_TOOL.props[1:],
    ),
    name="RunTool",
    description="A function tool the client lends the agent for this run (§15.4): chat's shape "
    '({"type":"function","function":{"name",…}}) or Responses\' flat one ({"type":"function","name",…}); '
    "other types are ignored",
)
RUN_BODY = Obj(
    name="RunCreateRequest",
    props=(
        Prop(
            "input",
            Either((Str(), Arr(RUN_MESSAGE, max_items=MAX_MESSAGES)), expected="a string or an array of messages"),
            True,
        ),
        Prop("instructions", Str(), description="System prompt for this run"),
        Prop("session_id", SESSION_ID, description="Run on this session (else X-Hermes-Session-Id, else a new one)"),
        CONVERSATION_HISTORY,
        Prop("previous_response_id", short(ID_MAX), description="Continue a stored response's chain"),
        *MODEL_SELECTION,
        Prop("reasoning_effort", EFFORT, description="Alias of model_options.reasoning.effort"),
        Prop(
            "tools",
            Arr(RUN_TOOL, max_items=MAX_TOOLS),
            description="Function tools the client runs: a call suspends the run (required_action client_tool) "
            "until POST /v1/runs/{run_id}/tool_outputs",
        ),
        Prop("tool_choice", TOOL_CHOICE),
    ),
)


def parse_run_request(raw: dict[str, Any], header_session: str | None, providers: frozenset[str]) -> RunRequest:
    body = RUN_BODY.check(raw, "")
    value = body["input"]
    messages: list[Message] = []
    system: list[str] = []
    if isinstance(value, str):
        messages.append(Message.from_json({"role": "user", "content": value}))
    else:
        for item in value:
            parts = item.get("content", ())
            if item["role"] in ("system", "developer"):
                system.append("".join(getattr(p, "text", "") for p in parts))
            else:
                messages.append(Message(item["role"], parts))
    if not messages or messages[-1].role != "user" or not messages[-1].visible:
        raise invalid_request(
            "missing_user_message", "The last input message must be a user message with text or an image", "input"
        )
    instructions = body.get("instructions")
    session_id = body.get("session_id")  # the SESSION_ID rule, checked with the body
    selection = parse_model_selection(body, providers, alias_effort=body.get("reasoning_effort"))
    previous = body.get("previous_response_id")
    client_tools = parse_client_tools(body.get("tools"))
    tool_choice = parse_tool_choice(body.get("tool_choice"), client_tools)
    prompt = "\n".join(s for s in ([instructions] if instructions else []) + system if s) or None
    # WIRE.md §5.2: the identity fields as sent, string input and the effort alias folded.
    sent = raw["input"]
    identity = partial(
        identity_hash,
        {
            "input": [{"role": "user", "content": sent}] if isinstance(sent, str) else sent,
            "instructions": raw.get("instructions"),
            "conversation_history": raw.get("conversation_history"),
            "previous_response_id": previous,
            "model": selection.model,
            "provider": selection.provider,
            "model_options": selection.identity_options(),
        },
    )
    return RunRequest(
        messages=messages,
        system=prompt,
        session_id=session_id or header_session,
        previous_response_id=previous,
        conversation_history=conversation_history(body),
        selection=selection,
        identity=identity,
        client_tools=client_tools,
        tool_choice=tool_choice,
    )
