"""POST /v1/chat/completions: the request after the WIRE.md §3.1 normalisation, and its §5.2 identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.content import Message, TextPart
from ..core.errors import invalid_request
from .common import CONTENT, EFFORT, MODEL_SELECTION, ModelSelection, identity_hash, parse_model_selection
from .counts import MAX_MESSAGES
from .limits import METADATA
from .schema import AnyJson, Arr, Bool, Obj, Prop, Str

_CONVERSATION_ROLES = frozenset({"user", "assistant"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


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
        Prop("tool_call_id", AnyJson()),
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
    ),
    description="OpenAI sampling fields (temperature, top_p, max_tokens, …) are accepted and ignored (§1.10)",
)


def parse_chat_request(raw: dict[str, Any], providers: frozenset[str]) -> ChatRequest:
    body = CHAT_BODY.check(raw, "")
    system: list[str] = []
    conversation: list[Message] = []
    first_user_content: Any = None
    for sent, message_body in zip(raw["messages"], body["messages"], strict=True):
        role = message_body["role"]
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
        # tool / function messages: client-side tools are not supported; dropped.
    if not conversation or conversation[-1].role != "user" or not conversation[-1].visible:
        raise invalid_request(
            "missing_user_message", "The last message must be a user message with text or an image", "messages"
        )
    return ChatRequest(
        input=conversation[-1],
        history=tuple(conversation[:-1]),
        system_prompt="\n".join(system) if system else None,
        first_user_content=first_user_content,
        selection=parse_model_selection(body, providers, alias_effort=body.get("reasoning_effort")),
        stream=body.get("stream", False),
        metadata=body.get("metadata") or {},
    )
