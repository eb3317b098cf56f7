"""The sessions surface (WIRE.md §7): session chat requests with their §5.2 identity, creation and updates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..core.content import Message
from ..core.errors import invalid_request
from .common import (
    CONTENT,
    MODEL_SELECTION,
    SESSION_ID,
    ModelSelection,
    identity_hash,
    parse_model_selection,
)
from .limits import END_REASON_MAX, NAME_MAX, TITLE_MAX, short
from .params import IntText, Param
from .schema import Bool, Obj, Prop, Str

OFFSET_MAX = 1_000_000_000  # far past any store; keeps the value a machine integer for SQL
_TITLE = short(TITLE_MAX)
SESSION_PATH = (Param("session_id", SESSION_ID, "path"),)
LIST_QUERY = (
    Param("limit", IntText(1, 200), default=50),
    Param("offset", IntText(0, OFFSET_MAX), default=0),
    Param("source", short(NAME_MAX), description="Only sessions of this source"),
    Param(
        "include_children",
        Bool(),
        default=False,
        description="Also the sessions Hermes hides from its list: sub-agent runs and compression continuations",
    ),
)
MESSAGES_QUERY = (
    Param("limit", IntText(1, 500), default=500),
    Param("offset", IntText(0, OFFSET_MAX), default=0),
    Param("order", Str(enum=("latest", "oldest")), default="latest"),
    Param("include_compacted", Bool(), default=False, description="Also the messages a compaction replaced"),
    Param("inline_images", Bool(), default=True, description="Images as data URLs (else a placeholder)"),
)


@dataclass(frozen=True)
class SessionChatRequest:
    """POST /api/sessions/{id}/chat[/stream]."""

    message: Message
    instructions: str | None
    selection: ModelSelection
    identity: Callable[[], str]  # the §5.2 identity hash, computed when a key asks for it


SESSION_CHAT_BODY = Obj(
    name="SessionChatRequest",
    props=(
        Prop("message", CONTENT, description="The user's turn (`input` is accepted as an alias)"),
        Prop("input", CONTENT),
        Prop("instructions", Str(), description="System prompt for this turn (`system_message` is an alias)"),
        Prop("system_message", Str()),
        *MODEL_SELECTION,
    ),
    any_of=("message", "input"),
)
SESSION_CREATE_BODY = Obj(
    name="SessionCreateRequest",
    props=(
        Prop("id", SESSION_ID, description="The new session's id; generated when absent"),
        Prop("title", _TITLE),
    ),
)
SESSION_FORK_BODY = Obj(
    name="SessionForkRequest",
    props=(
        Prop("id", SESSION_ID, description="The fork's id; generated when absent"),
        Prop("title", _TITLE, description="The fork's title; derived from the original's if absent"),
    ),
)
SESSION_UPDATE_BODY = Obj(
    name="SessionUpdateRequest",
    props=(
        Prop("title", _TITLE),
        Prop("pinned", Bool()),
        Prop("archived", Bool()),
        Prop("end_reason", short(END_REASON_MAX), description="Ends the session, for this reason"),
    ),
    closed=True,
    description="Send any of title (null clears it), pinned, archived, end_reason",
)


def parse_session_chat(raw: dict[str, Any], providers: frozenset[str]) -> SessionChatRequest:
    body = SESSION_CHAT_BODY.check(raw, "")
    parts = body.get("message", body.get("input"))
    message = Message("user", parts)
    if not message.visible:
        raise invalid_request("missing_user_message", "'message' must contain text or an image", "message")
    instructions = body.get("instructions", body.get("system_message"))
    selection = parse_model_selection(body, providers)
    identity = partial(
        identity_hash,
        {
            "message": raw.get("message", raw.get("input")),
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


def parse_session_create(raw: dict[str, Any]) -> SessionCreate:
    body = SESSION_CREATE_BODY.check(raw, "")
    return SessionCreate(body.get("id"), body.get("title"))  # `id`: the SESSION_ID rule, checked with the body


def parse_session_update(raw: dict[str, Any]) -> dict[str, Any]:
    """The fields a PATCH changes (title, pinned, archived, end_reason); anything else is 400. `title: null` clears
    it; an empty `end_reason` changes nothing (as upstream)."""
    fields = SESSION_UPDATE_BODY.check(raw, "")
    if "title" in raw:
        fields["title"] = raw["title"] if raw["title"] is None else fields["title"]
    if not fields.get("end_reason", True):
        del fields["end_reason"]
    return fields


@dataclass(frozen=True)
class SessionFork:
    id: str | None
    title: str | None


def parse_session_fork(raw: dict[str, Any]) -> SessionFork:
    """POST /api/sessions/{id}/fork: an optional id (rules of X-Hermes-Session-Id) and title."""
    body = SESSION_FORK_BODY.check(raw, "")
    return SessionFork(body.get("id"), body.get("title"))  # `id`: the SESSION_ID rule, checked with the body
