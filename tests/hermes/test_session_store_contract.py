"""The SessionStore contract suite (tests/store/test_contract_sessions.py) on Hermes' SessionDB (WIRE §14.1).

`HermesSessionStore` over a real `hermes_state.SessionDB` file, with `agent_writes_turns=False` so the plugin's
own appends are what the suite reads back. Imported here rather than parametrised in tests/store: the main suite
never imports hermes-agent. The few contract tests that pin the plugin tables' own bookkeeping are replaced by
what Hermes does instead (below, each says why).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_api_plugin.hermes.sessions import HermesSessionStore
from hermes_api_plugin.store import MemoryStore
from tests.store import test_contract_sessions as contract
from tests.store.conftest import Backend
from tests.store.test_contract_sessions import (  # noqa: F401 - collected here, on the SessionDB backend
    test_a_seeded_session_starts_with_the_given_transcript_once,
    test_a_session_that_never_split_goes_on_under_its_own_id,
    test_concurrent_creates_of_one_id_succeed_once,
    test_create_get_and_duplicate,
    test_delete_removes_the_session_and_its_messages,
    test_end_reason_ends_the_session_once,
    test_fork_copies_the_messages_under_a_new_child_session,
    test_list_filters_by_source,
    test_list_pages_most_recently_active_first,
    test_message_rows_carry_tool_calls_and_reasoning,
    test_message_rows_page_from_either_end_in_chronological_order,
    test_messages_round_trip_in_order,
    test_tool_names_map_call_ids_of_the_session_only,
    test_update_sets_title_and_flags_only,
)

from .support import write_compression_split


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[Backend]:
    from hermes_state import SessionDB

    db = SessionDB(db_path=tmp_path / "state.db")
    store = MemoryStore()
    await store.open()
    yield Backend(store, HermesSessionStore(db, agent_writes_turns=False), durable=True)
    await store.close()
    db.close()


async def test_append_creates_the_session_and_counts_usage_model_and_messages(backend: Backend) -> None:
    """As the contract's, except `tool_call_count`: Hermes counts the tool calls an assistant message makes."""
    sessions = backend.sessions
    await sessions.append_session_messages(
        "s", [contract.user("hi"), contract.assistant("hello")], model="m1", usage=(10, 3)
    )
    await sessions.append_session_messages("s", contract.TOOL_TURN, usage=(5, 2))
    info = await sessions.get_session("s")
    assert info is not None
    assert (info["source"], info["model"], info["input_tokens"], info["output_tokens"]) == ("api_server", "m1", 15, 5)
    assert (info["message_count"], info["preview"]) == (6, "hi")
    assert info["tool_call_count"] >= 1


async def test_compaction_archives_the_live_transcript_with_hermes_in_place_compaction(backend: Backend) -> None:
    """As the contract's, on SessionDB.archive_and_compact: the live rows become compacted, the summary starts the
    live transcript; include_compacted returns the archive first. (Hermes has no summary marker: the summary row
    carries no `extra`.)"""
    sessions = backend.sessions
    await sessions.append_session_messages("s", [contract.user("first question"), contract.assistant("first answer")])
    await sessions.append_session_messages(
        "s", [contract.user("second"), contract.assistant("after")], compaction="SUMMARY"
    )
    live = await sessions.load_session_messages("s")
    assert [(m.role, m.text) for m in live] == [("user", "SUMMARY"), ("user", "second"), ("assistant", "after")]
    info = await sessions.get_session("s")
    assert info is not None and info["message_count"] == 3
    rows = await sessions.session_message_rows("s", limit=10, offset=0, newest_first=False, include_compacted=True)
    assert [(r["role"], r["content"][0]["text"], r["compacted"]) for r in rows] == [
        ("user", "first question", True),
        ("assistant", "first answer", True),
        ("user", "SUMMARY", False),
        ("user", "second", False),
        ("assistant", "after", False),
    ]
    live_rows = await sessions.session_message_rows("s", limit=10, offset=0, newest_first=True, include_compacted=False)
    assert [r["content"][0]["text"] for r in live_rows] == ["SUMMARY", "second", "after"]


async def test_appends_are_left_to_the_agent_when_it_writes_the_turns(tmp_path: Path) -> None:
    """With the hermes runtime the AIAgent writes each turn into this SessionDB itself: the plugin's transcript
    writer must not append it a second time."""
    from hermes_state import SessionDB

    db = SessionDB(db_path=tmp_path / "state.db")
    try:
        sessions = HermesSessionStore(db, agent_writes_turns=True)
        await sessions.append_session_messages("s", [contract.user("hi")], usage=(1, 1))
        assert await sessions.get_session("s") is None
    finally:
        db.close()


async def test_include_children_lists_what_hermes_hides(backend: Backend, tmp_path: Path) -> None:
    """Upstream's `include_children`: a sub-agent run (a child session started while its parent is live) is left
    out of the list unless asked for; a fork (a branch) is listed either way."""
    sessions = backend.sessions
    assert isinstance(sessions, HermesSessionStore)
    await sessions.append_session_messages("parent", [contract.user("hi")])
    sessions.db.create_session("subagent", "api_server", parent_session_id="parent")
    assert await sessions.fork_session("parent", "branch", None) == "forked"
    default = {s["id"] for s in (await sessions.list_sessions(10, 0, None))[0]}
    everything = {s["id"] for s in (await sessions.list_sessions(10, 0, None, include_children=True))[0]}
    assert "subagent" not in default and {"parent", "branch"} <= default
    assert everything == default | {"subagent"}


async def test_a_split_session_goes_on_in_its_compression_tip(backend: Backend) -> None:
    """Reads and chats of a session Hermes continued under a new id go to that live tip; a fork is not followed."""
    sessions = backend.sessions
    assert isinstance(sessions, HermesSessionStore)
    write_compression_split(sessions.db)
    assert await sessions.live_session_id("old") == "tip"
    assert await sessions.live_session_id("tip") == "tip"
    assert [m.text for m in await sessions.load_session_messages("old")] == ["after the split"]
    assert await sessions.fork_session("tip", "branch", None) == "forked"
    assert await sessions.live_session_id("tip") == "tip"
    assert await sessions.live_session_id("unknown") == "unknown"
