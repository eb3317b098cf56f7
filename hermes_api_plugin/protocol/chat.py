"""POST /v1/chat/completions: the request after the WIRE.md §3.1 normalisation, and its §5.2 identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..content import Message, TextPart, parse_content
from ..errors import invalid_parameter, invalid_request, missing_parameter
from .common import ModelSelection, body_bool, identity_hash, parse_model_selection

_CONVERSATION_ROLES = frozenset({"user", "assistant"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
_KNOWN_ROLES = _CONVERSATION_ROLES | _SYSTEM_ROLES | {"tool", "function"}


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


def parse_chat_request(body: dict[str, Any], providers: frozenset[str]) -> ChatRequest:
    messages = body.get("messages")
    if messages is None:
        raise missing_parameter("messages")
    if not isinstance(messages, list):
        raise invalid_parameter("'messages' must be an array", "messages")
    if not messages:
        raise invalid_request("missing_required_parameter", "'messages' must not be empty", "messages")
    system: list[str] = []
    conversation: list[Message] = []
    first_user_content: Any = None
    for i, raw in enumerate(messages):
        param = f"messages[{i}]"
        if not isinstance(raw, dict):
            raise invalid_parameter(f"'{param}' must be an object", param)
        role = raw.get("role")
        if not isinstance(role, str) or role not in _KNOWN_ROLES:
            raise invalid_parameter(
                f"'{param}.role' must be one of system, developer, user, assistant, tool", f"{param}.role"
            )
        parts = parse_content(raw.get("content"), f"{param}.content")
        if role in _SYSTEM_ROLES:
            system.append("".join(p.text for p in parts if isinstance(p, TextPart)))
        elif role in _CONVERSATION_ROLES:
            message = Message(role, parts)
            if role == "assistant" and not message.visible:
                continue  # an assistant turn that only carried tool_calls: dropped with them
            if role == "user" and first_user_content is None:
                first_user_content = raw.get("content")
            conversation.append(message)
        # tool / function messages: client-side tools are not supported; dropped.
    if not conversation or conversation[-1].role != "user" or not conversation[-1].visible:
        raise invalid_request(
            "missing_user_message", "The last message must be a user message with text or an image", "messages"
        )
    selection = parse_model_selection(body, providers, alias_effort=body.get("reasoning_effort"))
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise invalid_parameter("'metadata' must be an object", "metadata")
    return ChatRequest(
        input=conversation[-1],
        history=tuple(conversation[:-1]),
        system_prompt="\n".join(system) if system else None,
        first_user_content=first_user_content,
        selection=selection,
        stream=body_bool(body, "stream", False),
        metadata=metadata or {},
    )
