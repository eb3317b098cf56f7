"""POST /v1/chat/completions: the request after the WIRE.md §3.1 normalisation, and its §5.2 identity.

A request may lend the agent function tools (`tools`, `tool_choice`, §15.2) and may end with `role: "tool"` messages:
the outputs of the client tool calls a suspended turn waits for (`tool_results`). Such a request has no user message
of its own; its `input` then says what the results are, for the turn that runs when no suspended turn waits for them
(the agent continues with them, as a model continues after tool results).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.client_tools import CHOOSE_AUTO, ClientTool, ToolChoice
from ..core.content import Message, TextPart
from ..core.errors import invalid_request
from .client_tools import CHAT_TOOL, TOOL_CHOICE, parse_client_tools, parse_tool_choice
from .common import CONTENT, EFFORT, MODEL_SELECTION, ModelSelection, identity_hash, parse_model_selection
from .counts import MAX_MESSAGES
from .limits import ID_MAX, METADATA, short
from .schema import AnyJson, Arr, Bool, Obj, Prop, Str

_CONVERSATION_ROLES = frozenset({"user", "assistant"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
MAX_TOOLS = 128  # OpenAI's limit on declared tools


@dataclass(frozen=True)
class ToolResult:
    """The output of a client tool call, as a trailing `role: "tool"` message returns it (§15.2)."""

    call_id: str
    output: str


def results_input(results: tuple[ToolResult, ...]) -> Message:
    """The turn input of a request that brought tool results no suspended turn waits for."""
    lines = [f"[Result of the client's tool call {r.call_id}]\n{r.output}" for r in results]
    return Message("user", (TextPart("\n\n".join(lines)),))


@dataclass(frozen=True)
class ChatRequest:
    """A validated chat request after the §3.1 normalisation."""

    input: Message
    history: tuple[Message, ...]
    system_prompt: str | None
    first_user_content: Any
    selection: ModelSelection
    stream: bool
    metadata: dict[str, Any]
    client_tools: tuple[ClientTool, ...] = ()
    tool_choice: ToolChoice = CHOOSE_AUTO
    tool_results: tuple[ToolResult, ...] = ()  # trailing role:"tool" messages: outputs for a suspended turn

    def identity(self, session_header: str | None) -> str:
        """WIRE.md §5.2: input, earlier messages (or the sent session id), system prompt, model, provider,
        options."""
        selection = self.selection
        fields: dict[str, Any] = {
            "input": self.input.to_json(),
            "system": self.system_prompt,
            "model": selection.model,
            "provider": selection.provider,
            "model_options": selection.identity_options(),
        }
        if session_header is not None:
            fields["session_id"] = session_header
        else:
            fields["history"] = [m.to_json() for m in self.history]
        return identity_hash(fields)


CHAT_MESSAGE = Obj(
    name="ChatMessage",
    props=(
        Prop("role", Str(enum=_ROLES), True),
        Prop("content", CONTENT),
        Prop("name", AnyJson()),
        Prop("tool_calls", AnyJson(description="Earlier tool calls: dropped with their assistant turn")),
        Prop("tool_call_id", short(ID_MAX), description="A tool message: the call whose output it is"),
    ),
)
CHAT_BODY = Obj(
    name="ChatCompletionRequest",
    props=(
        Prop(
            "messages",
            Arr(CHAT_MESSAGE, min_items=1, max_items=MAX_MESSAGES),
            True,
            "The conversation; the last message is the user's turn",
        ),
        *MODEL_SELECTION,
        Prop("reasoning_effort", EFFORT, description="Alias of model_options.reasoning.effort"),
        Prop("stream", Bool(), description="SSE with reasoning_content and hermes.tool.progress (§3.3)"),
        Prop("metadata", METADATA),
        Prop("tools", Arr(CHAT_TOOL, max_items=MAX_TOOLS), description="Function tools lent to the agent (§15.2)"),
        Prop("tool_choice", TOOL_CHOICE),
        Prop("parallel_tool_calls", Bool()),
    ),
    description="OpenAI sampling fields (temperature, top_p, max_tokens, …) are accepted and ignored (§1.10)",
)


def parse_chat_request(raw: dict[str, Any], providers: frozenset[str]) -> ChatRequest:
    body = CHAT_BODY.check(raw, "")
    system: list[str] = []
    conversation: list[Message] = []
    first_user_content: Any = None
    results: list[ToolResult] = []
    called = False  # the message before these tool messages was an assistant's with tool_calls
    for i, (sent, message_body) in enumerate(zip(raw["messages"], body["messages"], strict=True)):
        role = message_body["role"]
        if role != "tool":
            results.clear()  # only the tool messages that end the conversation are outputs for a suspended turn
            called = role == "assistant" and bool(sent.get("tool_calls"))
        parts = message_body.get("content", ())
        if role in _SYSTEM_ROLES:
            system.append("".join(p.text for p in parts if isinstance(p, TextPart)))
        elif role in _CONVERSATION_ROLES:
            message = Message(role, parts)
            if role == "assistant" and not message.visible:
                continue  # an assistant turn that only carried tool_calls: dropped with them
            if role == "user" and first_user_content is None:
                first_user_content = sent.get("content")
            conversation.append(message)
        elif role == "tool" and called:
            call_id = message_body.get("tool_call_id")
            if not isinstance(call_id, str):
                where = f"messages[{i}].tool_call_id"
                raise invalid_request("missing_required_parameter", "A tool message needs its 'tool_call_id'", where)
            results.append(ToolResult(call_id, "".join(p.text for p in parts if isinstance(p, TextPart))))
        # earlier tool and function messages, and tool messages answering no call: dropped (the agent's history of a
        # client's tools is its own)
    tools = parse_client_tools(body.get("tools"))
    choice = parse_tool_choice(raw.get("tool_choice"), tools)
    selection = parse_model_selection(body, providers, alias_effort=body.get("reasoning_effort"))
    if results:  # the outputs of client tool calls: the turn they answer, or a new one that continues with them
        turn_input, history = results_input(tuple(results)), tuple(conversation)
    elif conversation and conversation[-1].role == "user" and conversation[-1].visible:
        turn_input, history = conversation[-1], tuple(conversation[:-1])
    else:
        raise invalid_request(
            "missing_user_message", "The last message must be a user message with text or an image", "messages"
        )
    return ChatRequest(
        input=turn_input,
        history=history,
        system_prompt="\n".join(system) if system else None,
        first_user_content=first_user_content,
        selection=selection,
        stream=body.get("stream", False),
        metadata=body.get("metadata") or {},
        client_tools=tools,
        tool_choice=choice,
        tool_results=tuple(results),
    )
