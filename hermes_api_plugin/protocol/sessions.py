"""The sessions surface (WIRE.md §7): session chat requests with their §5.2 identity, creation and updates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..content import Message, parse_content
from ..errors import invalid_parameter, invalid_request, missing_parameter
from .common import ModelSelection, body_bool, check_session_id, identity_hash, optional_string, parse_model_selection

PATCHABLE = frozenset({"title", "pinned", "archived"})
TITLE_MAX = 200


@dataclass(frozen=True)
class SessionChatRequest:
    """POST /api/sessions/{id}/chat[/stream]."""

    message: Message
    instructions: str | None
    selection: ModelSelection
    identity: Callable[[], str]  # the §5.2 identity hash, computed when a key asks for it


def parse_session_chat(body: dict[str, Any], providers: frozenset[str]) -> SessionChatRequest:
    raw = body.get("message", body.get("input"))
    if raw is None:
        raise missing_parameter("message")
    message = Message("user", parse_content(raw, "message"))
    if not message.visible:
        raise invalid_request("missing_user_message", "'message' must contain text or an image", "message")
    instructions = body.get("instructions", body.get("system_message"))
    if instructions is not None and not isinstance(instructions, str):
        raise invalid_parameter("'instructions' must be a string", "instructions")
    selection = parse_model_selection(body, providers)
    identity = partial(
        identity_hash,
        {
            "message": raw,
            "instructions": instructions,
            "model": selection.model,
            "provider": selection.provider,
            "model_options": selection.identity_options(),
        },
    )
    return SessionChatRequest(message, instructions, selection, identity)


@dataclass(frozen=True)
class SessionCreate:
    id: str | None
    title: str | None


def parse_session_create(body: dict[str, Any]) -> SessionCreate:
    session_id = optional_string(body, "id")
    if session_id is not None:
        check_session_id(session_id, "id")
    title = optional_string(body, "title")
    if title is not None and len(title) > TITLE_MAX:
        raise invalid_parameter(f"'title' is at most {TITLE_MAX} characters", "title")
    return SessionCreate(session_id, title)


def parse_session_update(body: dict[str, Any]) -> dict[str, Any]:
    """The fields a PATCH changes (title, pinned, archived); anything else is 400."""
    for name in body:
        if name not in PATCHABLE:
            raise invalid_parameter(f"'{name}' cannot be changed; send title, pinned or archived", name)
    fields: dict[str, Any] = {}
    if "title" in body:
        title = body["title"]
        if title is not None and (not isinstance(title, str) or len(title) > TITLE_MAX):
            raise invalid_parameter(f"'title' must be a string of at most {TITLE_MAX} characters", "title")
        fields["title"] = title
    for flag in ("pinned", "archived"):
        if flag in body:
            fields[flag] = body_bool(body, flag, False)
    return fields
