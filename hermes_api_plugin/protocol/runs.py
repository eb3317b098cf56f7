"""POST /v1/runs: the request (WIRE.md §6.1) and its §5.2 identity."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..content import Message, parse_content
from ..errors import invalid_parameter, invalid_request, missing_parameter
from .common import (
    ModelSelection,
    check_session_id,
    identity_hash,
    optional_string,
    parse_conversation_history,
    parse_model_selection,
)

_ROLES = frozenset({"user", "assistant", "system", "developer"})


@dataclass(frozen=True)
class RunRequest:
    messages: list[Message]  # earlier input messages, then the turn input
    system: str | None
    session_id: str | None  # body `session_id`, else X-Hermes-Session-Id
    previous_response_id: str | None
    conversation_history: list[Message] | None
    selection: ModelSelection
    identity: Callable[[], str]  # the §5.2 identity hash, computed when a key asks for it


def parse_run_request(body: dict[str, Any], header_session: str | None, providers: frozenset[str]) -> RunRequest:
    raw = body.get("input")
    if raw is None:
        raise missing_parameter("input")
    messages: list[Message] = []
    system: list[str] = []
    if isinstance(raw, str):
        messages.append(Message.from_json({"role": "user", "content": raw}))
    elif isinstance(raw, list):
        for i, item in enumerate(raw):
            param = f"input[{i}]"
            if not isinstance(item, dict) or not isinstance(item.get("role"), str) or item["role"] not in _ROLES:
                raise invalid_parameter(
                    f"'{param}' must be an object with role user, assistant, system or developer", param
                )
            parts = parse_content(item.get("content"), f"{param}.content")
            if item["role"] in ("system", "developer"):
                system.append("".join(getattr(p, "text", "") for p in parts))
            else:
                messages.append(Message(item["role"], parts))
    else:
        raise invalid_parameter("'input' must be a string or an array of messages", "input")
    if not messages or messages[-1].role != "user" or not messages[-1].visible:
        raise invalid_request(
            "missing_user_message", "The last input message must be a user message with text or an image", "input"
        )
    instructions = optional_string(body, "instructions")
    session_id = optional_string(body, "session_id")
    if session_id is not None:
        check_session_id(session_id, "session_id")
    history = parse_conversation_history(body)
    selection = parse_model_selection(body, providers, alias_effort=body.get("reasoning_effort"))
    previous = optional_string(body, "previous_response_id")
    prompt = "\n".join(s for s in ([instructions] if instructions else []) + system if s) or None
    # WIRE.md §5.2: the identity fields as sent, string input and the effort alias folded.
    identity = partial(
        identity_hash,
        {
            "input": [{"role": "user", "content": raw}] if isinstance(raw, str) else raw,
            "instructions": body.get("instructions"),
            "conversation_history": body.get("conversation_history"),
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
        conversation_history=history,
        selection=selection,
        identity=identity,
    )
