"""Which session a new turn continues and what history it brings (WIRE.md §1.6, §4.7, §6.1).

One place resolves `previous_response_id`, `conversation` names and `X-Hermes-Session-Key` for every
surface: the stored Response a request continues, the session id its turn runs in, whether a session key
must be bound to a new session, and the loader of the agent's history (called once the turn may run, so a
queued turn sees what the turn before it added).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..cluster.placement import Placement
from ..cluster.waits import Waits
from ..core.content import Message
from ..core.errors import ApiError, not_found
from ..protocol.common import derived_session_id
from ..store.base import StoredResponse
from ..store.roles import ResponseStore, SessionKeyStore, SessionStore
from ..turns import HistoryLoader


def response_not_found(param: str | None = None) -> ApiError:
    return not_found("No response with that id", code="response_not_found", param=param)


class ConversationStore(ResponseStore, SessionKeyStore, Protocol):
    """The roles a conversation is continued from: stored Responses and the names that point at them."""


class ResponseLookup(Protocol):
    """Where the Response a request continues, and its chain's messages, are read: the store, or a WebSocket
    connection's own Responses in front of it (WIRE.md §16: `store: false` ones it completed)."""

    async def get_response(self, scope: str, response_id: str) -> StoredResponse | None: ...

    async def chain_messages(self, scope: str, response_id: str) -> list[Message]: ...


@dataclass(frozen=True)
class Continuation:
    """Where a new turn runs: its session, the stored Response it continues, a session key to bind."""

    session_id: str
    previous: StoredResponse | None = None
    bind_key: str | None = None  # the X-Hermes-Session-Key to (re)bind to the session once admitted
    key_session: bool = False  # the session came from X-Hermes-Session-Key (its transcript is the history)


class Conversations:
    """Continuation resolution over the plugin's store (responses, conversation names, key bindings) and the
    session store (transcripts)."""

    def __init__(
        self,
        store: ConversationStore,
        sessions: SessionStore,
        scope: str,
        placement: Placement,
        waits: Waits | None = None,
        lookup: ResponseLookup | None = None,
    ) -> None:
        self.store = store
        self.lookup: ResponseLookup = lookup if lookup is not None else store  # what `previous` and chains read
        self.sessions = sessions
        self.scope = scope
        self.placement = placement  # per-host session stores: a session another host keeps is refused here
        # what a suspended turn of the conversation waits by, for an answer landing on another gateway (W-15.4)
        self.waits = waits

    def reading(self, lookup: ResponseLookup) -> Conversations:
        """The same resolution, reading continued Responses and their chains through `lookup` (a WebSocket
        connection's kept Responses, then the store)."""
        return Conversations(self.store, self.sessions, self.scope, self.placement, self.waits, lookup)

    async def previous(
        self, previous_response_id: str | None, conversation: str | None = None
    ) -> StoredResponse | None:
        """The stored Response a request continues: by id (404 when unknown), or the head of a conversation
        name (None for a new name)."""
        if previous_response_id is not None:
            previous = await self.lookup.get_response(self.scope, previous_response_id)
            if previous is None:
                raise response_not_found("previous_response_id")
            return previous
        if conversation is not None:
            head_id = await self.store.conversation_head(self.scope, conversation)
            return await self.lookup.get_response(self.scope, head_id) if head_id else None
        return None

    async def carried(self, previous: StoredResponse | None) -> list[Message]:
        """What a stored Response continuing `previous` must carry itself: the chain of a Response only a WebSocket
        connection keeps (WIRE.md §16), which no stored row holds — so that the stored chain stays whole once the
        connection is gone. Nothing when `previous` is stored."""
        if previous is None or self.lookup is self.store:
            return []
        if await self.store.get_response(self.scope, previous.id) is not None:
            return []
        return await self.lookup.chain_messages(self.scope, previous.id)

    async def resolve(
        self,
        *,
        explicit_session: str | None,
        previous: StoredResponse | None,
        session_key: str | None,
        new_session: Callable[[], str],
    ) -> Continuation:
        """Session precedence: an explicit session id, the chain's session, the session bound to the
        session key (or a new one bound to it), else a new session. An existing session another gateway host keeps
        is 409 session_on_other_host (cluster/placement.py)."""
        if explicit_session is not None:
            await self.placement.check(explicit_session)
            return Continuation(explicit_session, previous)
        if previous is not None:
            await self.placement.check(previous.session_id)
            return Continuation(previous.session_id, previous)
        if session_key is not None:
            bound = await self.store.session_for_key(self.scope, session_key)
            if bound is not None:
                await self.placement.check(bound)
            return Continuation(bound or new_session(), bind_key=session_key, key_session=True)
        return Continuation(new_session())

    def chain_history(self, previous: StoredResponse) -> HistoryLoader:
        async def load() -> Sequence[Message]:
            return await self.lookup.chain_messages(self.scope, previous.id)

        return load

    def session_history(self, session_id: str) -> HistoryLoader:
        async def load() -> Sequence[Message]:
            return await self.sessions.load_session_messages(session_id)

        return load

    def derived_chat_session(self, system_prompt: str | None, first_user_content: Any) -> str:
        """Chat without X-Hermes-Session-Id: the same opening of a conversation maps to the same session."""
        return derived_session_id(self.scope, system_prompt or "", first_user_content)


def fixed_history(messages: Sequence[Message]) -> HistoryLoader:
    async def load() -> Sequence[Message]:
        return list(messages)

    return load


def extended(base: HistoryLoader | None, extra: Sequence[Message], keep_last: int | None = None) -> HistoryLoader:
    """`base` (or nothing) followed by `extra`, optionally cut to the last `keep_last` messages."""

    async def load() -> Sequence[Message]:
        messages = list(await base()) if base is not None else []
        messages += extra
        return messages[-keep_last:] if keep_last is not None else messages

    return load
