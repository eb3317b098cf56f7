"""Conversation continuity for stateless chat (issue 14, `api_server.chat_continuity`).

Open WebUI, LobeChat, LibreChat and the SDKs resend the whole visible history with every message. The gateway
already runs such a chat in a session derived from its system prompt and first user message (WIRE.md §3.1), and
the session's stored transcript holds what the client never saw: the agent's tool calls and results. When the
messages a client sends before its new one are exactly the visible part of that transcript, the turn continues the
conversation with the server-side history — the agent remembers its tools, and the provider sees the prefix it saw
last turn. Anything else (an edited or regenerated message, a message the gateway never answered) is another
conversation: it gets a session of its own, derived from the whole history the client sent, so that the original
conversation's transcript stays as it was and its next continuation still matches.

"Visible" here is what a chat client holds: per exchange, the user's message, and the assistant's text — every text
the agent streamed in that exchange, concatenated, as the chat completion's content carried it. Whitespace is not
compared (clients and Hermes trim differently); tool calls, tool results and reasoning are not part of it.

A conversation in which the client answered a suspended turn in its own dialect (WIRE.md §15.2: the approval question
the delivery ended with, the `/approve` that answered it) holds messages its session's transcript does not: the turn's
end records the conversation as the client holds it as *answered*, and that exact key alone finds its session.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..cluster.placement import Placement
from ..core.content import Message
from ..core.ids import random_hex
from ..core.json_text import canonical
from ..core.offload import LARGE_MESSAGES, off_loop
from ..protocol.common import derived_session_id
from ..store.roles import SessionStore


@dataclass(frozen=True)
class Exchange:
    """One visible step of a conversation: who spoke, their text without whitespace, their images."""

    role: str  # user | assistant
    text: str
    images: tuple[str, ...] = ()


def _squeezed(text: str) -> str:
    return "".join(text.split())


def visible(messages: Sequence[Message]) -> list[Exchange] | None:
    """The visible transcript: user messages and, between them, the assistant's texts joined into one; None when the
    messages hold something a chat client's history does not (another role, a tool result)."""
    exchanges: list[Exchange] = []
    for message in messages:
        if message.role == "user":
            exchanges.append(Exchange("user", _squeezed(message.text), tuple(image.url for image in message.images)))
        elif message.role == "assistant":
            text = _squeezed(message.text)
            if exchanges and exchanges[-1].role == "assistant":
                exchanges[-1] = Exchange("assistant", exchanges[-1].text + text)
            else:
                exchanges.append(Exchange("assistant", text))
        elif message.role != "tool":
            return None
    # an assistant step that said nothing (only tool calls) is invisible to the client
    return [e for e in exchanges if e.role == "user" or e.text]


def continues(sent: Sequence[Message], stored: Sequence[Message]) -> bool:
    """Whether the history a client sent is the visible transcript the gateway stored for its conversation (and
    the conversation has one: a first message continues nothing)."""
    if not sent or not stored or any(m.role not in ("user", "assistant") for m in sent):
        return False
    ours, theirs = visible(stored), visible(sent)
    return ours is not None and ours == theirs


def index_key(scope: str, system_prompt: str | None, messages: Sequence[Message]) -> str | None:
    """The hash a conversation's visible transcript is found by (None: not a visible transcript)."""
    exchanges = visible(messages)
    if exchanges is None:
        return None
    seed = canonical([scope, system_prompt or "", [[e.role, e.text, list(e.images)] for e in exchanges]])
    return hashlib.sha256(seed.encode()).hexdigest()


async def _continues(sent: Sequence[Message], stored: Sequence[Message]) -> bool:
    return await off_loop(lambda: continues(sent, stored), max(len(sent), len(stored)) > LARGE_MESSAGES)


class ConversationIndex:
    """What this gateway knows of the conversations it answered: where each now ends — its `index_key` (the hash of
    its visible transcript) → its session — and which openings' sessions are taken.

    Tips are needed for a branched conversation only (its session is not the one its first message derives). An
    opening is taken once one of this gateway's turns ran in the session it derives, or a lookup found that session
    holding a conversation: a new chat with that opening then starts a session of its own without asking the store,
    and two opened at once never share one (both looked before either had written). Kept in memory, bounded, least
    recently used out first. After a restart a branch's next message starts one more branch, with the client's
    history, and an opening is looked up again: colder, never wrong."""

    def __init__(self, capacity: int = 10_000) -> None:
        self.capacity = capacity
        self._tips: OrderedDict[str, tuple[str, bool]] = OrderedDict()  # key → (session, answered)
        self._openings: OrderedDict[str, None] = OrderedDict()  # derived sessions known taken

    def get(self, key: str | None) -> str | None:
        found = self.find(key)
        return found[0] if found is not None else None

    def find(self, key: str | None) -> tuple[str, bool] | None:
        """The session a conversation ends at, and whether it was recorded `answered` (found by its key alone)."""
        if key is None or key not in self._tips:
            return None
        self._tips.move_to_end(key)
        return self._tips[key]

    def record(self, key: str | None, session_id: str, *, answered: bool = False) -> None:
        """Where a conversation ends now; `answered`: its visible history holds answers to a suspended turn that its
        session's transcript does not, so its key alone finds it."""
        if key is None:
            return
        self._tips[key] = (session_id, answered)
        _bounded(self._tips, key, self.capacity)

    def opening_taken(self, session_id: str) -> bool:
        """Whether the session an opening derives is known taken (`take_opening`)."""
        return session_id in self._openings

    def take_opening(self, session_id: str) -> None:
        """The session an opening derives is taken: a turn of this gateway runs in it, or it holds a conversation."""
        self._openings[session_id] = None
        _bounded(self._openings, session_id, self.capacity)


def _bounded(entries: OrderedDict[str, Any], key: str, capacity: int) -> None:
    """`key` most recently used; the least recently used out past `capacity`."""
    entries.move_to_end(key)
    while len(entries) > capacity:
        entries.popitem(last=False)


@dataclass(frozen=True)
class Resolution:
    """Where a stateless chat turn runs and with what history."""

    session_id: str
    continued: bool  # the server-side history of `session_id` (else the history the client sent)
    seed: bool = False  # a new branch: its session starts as the client's history
    stored: tuple[Message, ...] = ()  # when continued: that history, as just read (not read twice)


async def resolve(
    index: ConversationIndex,
    sessions: SessionStore,
    placement: Placement,
    scope: str,
    system_prompt: str | None,
    sent: Sequence[Message],
    derived: str,
) -> Resolution:
    """The conversation a stateless chat continues: the one its first message derives, or the branch its history
    ends at, when the stored transcript matches what the client sent; else a new branch of its own. A first message
    whose derived session already holds a conversation — here, or on another gateway host (`placement`) — starts one
    of its own. A history that is not a chat transcript (tool messages a client manages itself) keeps the derived
    session and its own history."""
    if not sent:
        # A new conversation. Its opening may be another conversation's (Open WebUI users open many chats with "hi"):
        # that one's transcript is not this one's to append to, so a taken opening starts a session of its own. Taken
        # on another host counts too: one id naming two hosts' conversations would hand a client the wrong one.
        fresh = not index.opening_taken(derived)
        if fresh:
            taken = await sessions.get_session(derived)
            fresh = taken["message_count"] == 0 if taken is not None else await placement.other_host(derived) is None
            # A twin opened at once may have taken it while this one looked (neither had written yet).
            fresh = fresh and not index.opening_taken(derived)
            index.take_opening(derived)
        return Resolution(derived if fresh else "api-" + random_hex(8), continued=False)
    # A long history is hashed and compared off the loop (issue 20, defect 3).
    key = await off_loop(lambda: index_key(scope, system_prompt, sent), len(sent) > LARGE_MESSAGES)
    if key is None or any(m.role not in ("user", "assistant") for m in sent):
        return Resolution(derived, continued=False)
    found = index.find(key)
    if found is not None and found[1]:
        stored = await sessions.load_session_messages(found[0])
        if stored:
            return Resolution(found[0], continued=True, stored=tuple(stored))
    for candidate in dict.fromkeys(c for c in (index.get(key), derived) if c is not None):
        stored = await sessions.load_session_messages(candidate)
        if await _continues(sent, stored):
            return Resolution(candidate, continued=True, stored=tuple(stored))
    branch = derived_session_id(scope, system_prompt or "", {"branch": key})
    if await sessions.get_session(branch) is not None:
        stored = await sessions.load_session_messages(branch)
        if await _continues(sent, stored):  # a concurrent twin seeded it
            return Resolution(branch, continued=True, stored=tuple(stored))
        branch = "api-" + random_hex(8)  # this branching happened before and went on: branch afresh
    elif await placement.other_host(branch) is not None:
        branch = "api-" + random_hex(8)  # another host branched this history: its branch is not ours to seed
    return Resolution(branch, continued=False, seed=True)
