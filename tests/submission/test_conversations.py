"""Continuation resolution (conversations.py): which session a new turn runs in and what history it brings (§1.6, §4.7, §6.1).

On a real in-memory SQLite store: the precedence explicit session > the continued Response's session > the
session bound to X-Hermes-Session-Key (or a new one bound to it) > a new session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from hermes_api_plugin.cluster.placement import Placement
from hermes_api_plugin.core.content import text_message
from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.store import MemoryStore
from hermes_api_plugin.store.base import StoredResponse
from hermes_api_plugin.submission.conversations import Conversations

SCOPE = "scope"


@pytest.fixture
async def conversations() -> AsyncIterator[Conversations]:
    store = MemoryStore()
    await store.open()
    yield Conversations(store, store.sessions, SCOPE, Placement(store, store.sessions, None))
    await store.close()


def fresh(prefix: str = "new") -> Callable[[], str]:
    made: list[str] = []

    def new() -> str:
        made.append(f"{prefix}-{len(made) + 1}")
        return made[-1]

    return new


async def stored(
    conversations: Conversations, response_id: str, session_id: str, conversation: str | None = None
) -> StoredResponse:
    record = StoredResponse(
        id=response_id,
        scope=SCOPE,
        turn_id="run_" + response_id,
        session_id=session_id,
        status="completed",
        snapshot={"id": response_id},
        conversation=conversation,
        messages=[text_message("user", "hi"), text_message("assistant", f"answer of {response_id}")],
    )
    await conversations.store.put_response(record, [])
    return record


async def test_session_precedence(conversations: Conversations) -> None:
    previous = await stored(conversations, "resp_1", "sess-of-resp-1")
    new = fresh()
    explicit = await conversations.resolve(explicit_session="mine", previous=previous, session_key="k", new_session=new)
    assert (explicit.session_id, explicit.bind_key) == ("mine", None)
    chained = await conversations.resolve(explicit_session=None, previous=previous, session_key="k", new_session=new)
    assert (chained.session_id, chained.bind_key) == ("sess-of-resp-1", None)
    keyed = await conversations.resolve(explicit_session=None, previous=None, session_key="k", new_session=new)
    assert (keyed.session_id, keyed.bind_key, keyed.key_session) == ("new-1", "k", True)
    await conversations.store.bind_session_key(SCOPE, "k", keyed.session_id)
    again = await conversations.resolve(explicit_session=None, previous=None, session_key="k", new_session=new)
    assert again.session_id == "new-1", "the bound session, not a new one"
    plain = await conversations.resolve(explicit_session=None, previous=None, session_key=None, new_session=new)
    assert (plain.session_id, plain.bind_key, plain.key_session) == ("new-2", None, False)


async def test_previous_by_id_or_by_conversation_name(conversations: Conversations) -> None:
    await stored(conversations, "resp_1", "s1", conversation="project")
    assert (await conversations.previous("resp_1")).id == "resp_1"  # type: ignore[union-attr]
    assert (await conversations.previous(None, "project")).id == "resp_1"  # type: ignore[union-attr]
    assert await conversations.previous(None, "a new name") is None
    assert await conversations.previous(None) is None
    with pytest.raises(ApiError) as missing:
        await conversations.previous("resp_unknown")
    assert (missing.value.status, missing.value.code, missing.value.param) == (
        404,
        "response_not_found",
        "previous_response_id",
    )


async def test_history_loaders_read_the_chain_and_the_session_when_called(conversations: Conversations) -> None:
    previous = await stored(conversations, "resp_1", "s1")
    chain = conversations.chain_history(previous)
    session = conversations.session_history("s1")
    assert [m.text for m in await chain()] == ["hi", "answer of resp_1"]
    assert list(await session()) == []
    await conversations.sessions.append_session_messages("s1", [text_message("user", "later")])
    assert [m.text for m in await session()] == ["later"], "loaded when the turn may run, not at admission"
