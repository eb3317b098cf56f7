"""POST /v1/responses: the request (WIRE.md §4.1), its §5.2 identity, and its input items resolved into
messages (item references looked up, stored tool outputs substituted, §4.7)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from ..content import Message, TextPart, ToolCall, parse_content, text_message
from ..errors import invalid_parameter, invalid_request, missing_parameter
from .common import (
    ModelSelection,
    body_bool,
    identity_hash,
    optional_string,
    parse_conversation_history,
    parse_model_selection,
)


class ItemLookup(Protocol):
    """What input resolution reads from the store."""

    async def find_item(self, scope: str, item_id: str) -> dict[str, Any] | None: ...

    async def find_tool_output(self, scope: str, call_id: str) -> str | None: ...


def _input_item_id(response_id: str, index: int) -> str:
    return "msg_" + hashlib.sha256(f"{response_id}:input:{index}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class ResponsesRequest:
    """A validated POST /v1/responses body (input items not yet resolved)."""

    input: list[Any]
    instructions: str | None
    previous_response_id: str | None
    conversation: str | None
    conversation_history: list[Message] | None
    store: bool
    stream: bool
    background: bool
    truncation: str
    selection: ModelSelection
    tools: list[Any]
    tool_choice: Any
    parallel_tool_calls: bool
    metadata: dict[str, Any]
    identity: Callable[[], str]  # the §5.2 identity hash, computed when a key asks for it


def parse_responses_request(body: dict[str, Any], providers: frozenset[str]) -> ResponsesRequest:
    raw_input = body.get("input")
    if raw_input is None:
        raise missing_parameter("input")
    if isinstance(raw_input, str):
        if not raw_input.strip():
            raise invalid_request("missing_user_message", "'input' must contain a user message", "input")
        items: list[Any] = [raw_input]
    elif isinstance(raw_input, list):
        if not raw_input:
            raise invalid_request("missing_user_message", "'input' must contain a user message", "input")
        items = raw_input
    else:
        raise invalid_parameter("'input' must be a string or an array of items", "input")
    previous = optional_string(body, "previous_response_id")
    conversation = body.get("conversation")
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
        if not isinstance(conversation, str):
            raise invalid_parameter("'conversation.id' must be a string", "conversation")
    if conversation is not None and (not isinstance(conversation, str) or not conversation.strip()):
        raise invalid_parameter("'conversation' must be a non-empty string or {\"id\": string}", "conversation")
    if previous is not None and conversation is not None:
        raise invalid_request(
            "conflicting_parameters", "Send either 'previous_response_id' or 'conversation', not both", "conversation"
        )
    explicit = parse_conversation_history(body)
    store = body_bool(body, "store", True)
    background = body_bool(body, "background", False)
    if background and not store:
        raise invalid_parameter("'background' requires 'store': true", "background")
    truncation = body.get("truncation", "disabled")
    if truncation not in ("auto", "disabled"):
        raise invalid_parameter("'truncation' must be 'auto' or 'disabled'", "truncation")
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise invalid_parameter("'instructions' must be a string", "instructions")
    reasoning = body.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, dict):
        raise invalid_parameter("'reasoning' must be an object", "reasoning")
    selection = parse_model_selection(
        body, providers, alias_effort=(reasoning or {}).get("effort"), alias_param="reasoning.effort"
    )
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise invalid_parameter("'metadata' must be an object", "metadata")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise invalid_parameter("'tools' must be an array", "tools")
    parallel = body_bool(body, "parallel_tool_calls", True)
    return ResponsesRequest(
        input=items,
        instructions=instructions,
        previous_response_id=previous,
        conversation=conversation,
        conversation_history=explicit,
        store=store,
        stream=body_bool(body, "stream", False),
        background=background,
        truncation=truncation,
        selection=selection,
        tools=tools or [],
        tool_choice=body.get("tool_choice", "auto"),
        parallel_tool_calls=parallel,
        metadata=metadata or {},
        identity=partial(_identity, body, previous, conversation, instructions, selection),
    )


@dataclass(frozen=True)
class ResolvedInput:
    messages: list[Message]  # history items first, the turn input last
    system: list[str]
    stored_items: list[dict[str, Any]]


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(p.get("text", "") for p in output if isinstance(p, dict))
    return "" if output is None else str(output)


async def resolve_input(items: Sequence[Any], store: ItemLookup, scope: str, response_id: str) -> ResolvedInput:
    """Input items → messages (item references resolved, stored tool outputs substituted)."""
    messages: list[Message] = []
    system: list[str] = []
    stored: list[dict[str, Any]] = []
    for i, raw in enumerate(items):
        param = f"input[{i}]"
        item = raw
        if isinstance(item, dict) and item.get("type") == "item_reference":
            ref = item.get("id")
            found = await store.find_item(scope, ref) if isinstance(ref, str) else None
            if found is None:
                raise invalid_request("item_reference_not_found", f"No stored item with id {ref!r}", param)
            item = found
        own_id = _input_item_id(response_id, i)
        if isinstance(item, str):
            item = {"type": "message", "role": "user", "content": item}
        if not isinstance(item, dict):
            raise invalid_parameter(f"'{param}' must be a string or an object", param)
        kind = item.get("type", "message")
        if kind == "reasoning":
            continue
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise invalid_parameter(f"'{param}.role' must be user, assistant, system or developer", param)
            parts = parse_content(item.get("content"), f"{param}.content")
            if role in ("system", "developer"):
                system.append("".join(p.text for p in parts if isinstance(p, TextPart)))
            else:
                messages.append(Message(role, parts))
            content = item.get("content")
            if isinstance(content, str):
                content = [{"type": "input_text" if role != "assistant" else "output_text", "text": content}]
            stored.append({"id": own_id, "type": "message", "role": role, "status": "completed", "content": content})
        elif kind == "function_call":
            call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments", "{}")
            if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(arguments, str):
                raise invalid_parameter(f"'{param}' needs string 'call_id', 'name' and 'arguments'", param)
            messages.append(Message("assistant", (), tool_calls=(ToolCall(call_id, name, arguments),)))
            stored.append({**item, "id": own_id.replace("msg_", "fc_", 1)})
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise invalid_parameter(f"'{param}' needs a string 'call_id'", param)
            output = await store.find_tool_output(scope, call_id)  # a tool this server ran: its real output
            text = output if output is not None else _output_text(item.get("output"))
            messages.append(text_message("tool", text, tool_call_id=call_id))
            stored.append({**item, "id": own_id.replace("msg_", "fco_", 1)})
        else:
            raise invalid_parameter(f"'{param}' has an unsupported type {kind!r}", param)
    if not messages or messages[-1].role != "user" or not messages[-1].visible:
        raise invalid_request(
            "missing_user_message", "The last input item must be a user message with text or an image", "input"
        )
    return ResolvedInput(messages, system, stored)


def _identity(
    raw: dict[str, Any],
    previous: str | None,
    conversation: str | None,
    instructions: str | None,
    selection: ModelSelection,
) -> str:
    """WIRE.md §5.2: the identity fields as sent, string input and effort spellings folded."""
    value = raw.get("input")
    fields: dict[str, Any] = {
        "input": [{"role": "user", "content": value}] if isinstance(value, str) else value,
        "instructions": instructions,
        "previous_response_id": previous,
        "conversation": conversation,
        "conversation_history": raw.get("conversation_history"),
        "model": selection.model,
        "provider": selection.provider,
        "model_options": selection.identity_options(),
        "tools": raw.get("tools"),
    }
    if "truncation" in raw:
        fields["truncation"] = raw["truncation"]
    return identity_hash(fields)
