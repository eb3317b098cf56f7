"""SessionStore contract: what every session backend does, written against the protocol only.

Runs once per backend of the `open_backend` fixture (tests/store/conftest.py).
"""

from __future__ import annotations

import asyncio

from hermes_api_plugin.core.content import ImagePart, Message, TextPart, ToolCall
from hermes_api_plugin.store import SessionStore

from .conftest import Backend


def user(text: str) -> Message:
    return Message("user", (TextPart(text),))


def assistant(text: str) -> Message:
    return Message("assistant", (TextPart(text),))


TOOL_TURN = [
    user("list files"),
    Message("assistant", (), reasoning="need ls", tool_calls=(ToolCall("call_1", "terminal", '{"cmd":"ls"}'),)),
    Message("tool", (TextPart("a.txt"),), tool_call_id="call_1"),
    assistant("one file"),
]


async def tick() -> None:
    """Let the clock move, so 'most recently active' is never a tie."""
    await asyncio.sleep(0.002)


async def test_create_get_and_duplicate(backend: Backend) -> None:
    sessions = backend.sessions
    assert await sessions.get_session("s1") is None
    assert await sessions.create_session("s1", "First") is True
    assert await sessions.create_session("s1", "Again") is False
    info = await sessions.get_session("s1")
    assert info is not None
    assert (info["id"], info["title"], info["source"], info["model"]) == ("s1", "First", "api_server", None)
    assert (info["message_count"], info["tool_call_count"], info["input_tokens"], info["output_tokens"]) == (0, 0, 0, 0)
    assert (info["pinned"], info["archived"], info["preview"], info["parent_session_id"]) == (False, False, None, None)
    assert info["ended_at"] is None
    assert info["started_at"] <= info["last_active"]


async def test_messages_round_trip_in_order(backend: Backend) -> None:
    sessions = backend.sessions
    first = [Message("user", (TextPart("look"), ImagePart("https://x/cat.png", "high"))), assistant("a cat")]
    await sessions.append_session_messages("s", first)
    await sessions.append_session_messages("s", TOOL_TURN)
    await sessions.append_session_messages("other", [user("elsewhere")])
    assert await sessions.load_session_messages("s") == [*first, *TOOL_TURN]
    assert await sessions.load_session_messages("unknown") == []


async def test_append_creates_the_session_and_counts_usage_model_and_messages(backend: Backend) -> None:
    sessions = backend.sessions
    await sessions.append_session_messages("s", [user("hi"), assistant("hello")], model="m1", usage=(10, 3))
    await sessions.append_session_messages("s", TOOL_TURN, usage=(5, 2))  # no model: the last one stays
    info = await sessions.get_session("s")
    assert info is not None
    assert (info["model"], info["input_tokens"], info["output_tokens"]) == ("m1", 15, 5)
    assert (info["message_count"], info["tool_call_count"], info["preview"]) == (6, 1, "hi")
    await sessions.append_session_messages("s", [user("x")], model="m2")
    info = await sessions.get_session("s")
    assert info is not None and info["model"] == "m2"


async def test_list_pages_most_recently_active_first(backend: Backend) -> None:
    sessions = backend.sessions
    for sid in ("a", "b", "c"):
        assert await sessions.create_session(sid, None)
        await tick()
    await sessions.append_session_messages("a", [user("bump")])  # a becomes the most recent
    page, more = await sessions.list_sessions(2, 0, None)
    assert [s["id"] for s in page] == ["a", "c"] and more is True
    page, more = await sessions.list_sessions(2, 2, None)
    assert [s["id"] for s in page] == ["b"] and more is False
    page, more = await sessions.list_sessions(3, 0, None)
    assert len(page) == 3 and more is False
    assert await sessions.list_sessions(5, 10, None) == ([], False)


async def test_list_filters_by_source(backend: Backend) -> None:
    sessions = backend.sessions
    await sessions.create_session("a", None)
    page, _ = await sessions.list_sessions(10, 0, "api_server")
    assert [s["id"] for s in page] == ["a"]
    assert await sessions.list_sessions(10, 0, "telegram") == ([], False)


async def test_update_sets_title_and_flags_only(backend: Backend) -> None:
    sessions = backend.sessions
    assert await sessions.update_session("nope", {"title": "x"}) is False
    assert await sessions.update_session("nope", {}) is False
    await sessions.create_session("s", "old")
    assert await sessions.update_session("s", {"title": "new", "pinned": True, "model": "ignored"}) is True
    info = await sessions.get_session("s")
    assert info is not None and (info["title"], info["pinned"], info["archived"], info["model"]) == (
        "new",
        True,
        False,
        None,
    )
    assert await sessions.update_session("s", {"archived": True, "pinned": False, "title": None}) is True
    info = await sessions.get_session("s")
    assert info is not None and (info["title"], info["pinned"], info["archived"]) == (None, False, True)
    assert await sessions.update_session("s", {}) is True  # nothing to change, but the session exists


async def test_concurrent_creates_of_one_id_succeed_once(backend: Backend) -> None:
    """Two clients creating the same session id at once: one 201, the others 409 — never two 201s."""
    for session_id in (f"same-{n}" for n in range(20)):  # a race shows in some rounds, not in each
        created = await asyncio.gather(
            *(backend.sessions.create_session(session_id, f"{session_id} t{n}") for n in range(16))
        )
        assert created.count(True) == 1, session_id


async def test_a_session_that_never_split_goes_on_under_its_own_id(backend: Backend) -> None:
    await backend.sessions.append_session_messages("s", [user("hi")])
    assert await backend.sessions.live_session_id("s") == "s"


async def test_a_seeded_session_starts_with_the_given_transcript_once(backend: Backend) -> None:
    sessions = backend.sessions
    history = [user("hi"), assistant("hello")]
    assert await sessions.seed_session("branch", history) is True
    assert await sessions.seed_session("branch", [user("other")]) is False
    assert [(m.role, m.text) for m in await sessions.load_session_messages("branch")] == [
        ("user", "hi"),
        ("assistant", "hello"),
    ]
    info = await sessions.get_session("branch")
    assert info is not None and info["source"] == "api_server" and info["message_count"] == 2


async def test_end_reason_ends_the_session_once(backend: Backend) -> None:
    """PATCH `end_reason` (upstream's field): the session gets `ended_at`; a later end keeps the first."""
    sessions = backend.sessions
    assert await sessions.update_session("nope", {"end_reason": "user_exit"}) is False
    await sessions.create_session("s", None)
    info = await sessions.get_session("s")
    assert info is not None and info["ended_at"] is None
    assert await sessions.update_session("s", {"end_reason": "user_exit"}) is True
    info = await sessions.get_session("s")
    assert info is not None and isinstance(info["ended_at"], float)
    first = info["ended_at"]
    assert await sessions.update_session("s", {"end_reason": "again", "title": "kept going"}) is True
    info = await sessions.get_session("s")
    assert info is not None and (info["ended_at"], info["title"]) == (first, "kept going")


async def test_delete_removes_the_session_and_its_messages(backend: Backend) -> None:
    sessions = backend.sessions
    await sessions.append_session_messages("s", [user("hi")])
    await sessions.append_session_messages("keep", [user("stay")])
    assert await sessions.delete_session("s") is True
    assert await sessions.get_session("s") is None
    assert await sessions.load_session_messages("s") == []
    assert (
        await sessions.session_message_rows("s", limit=10, offset=0, newest_first=False, include_compacted=True) == []
    )
    assert await sessions.delete_session("s") is False
    assert [m.text for m in await sessions.load_session_messages("keep")] == ["stay"]
    await sessions.append_session_messages("s", [user("fresh")])  # the id can be used again
    assert [m.text for m in await sessions.load_session_messages("s")] == ["fresh"]


async def test_compaction_archives_the_live_transcript_behind_its_summary(backend: Backend) -> None:
    sessions = backend.sessions
    await sessions.append_session_messages("s", [user("first question"), assistant("first answer")])
    await sessions.append_session_messages("s", [user("second"), assistant("after")], compaction="SUMMARY")
    live = await sessions.load_session_messages("s")
    assert [(m.role, m.text) for m in live] == [("user", "SUMMARY"), ("user", "second"), ("assistant", "after")]
    info = await sessions.get_session("s")
    assert info is not None
    assert info["message_count"] == 3  # the archive is not counted
    assert info["preview"] == "first question"  # the summary is never the preview

    rows = await sessions.session_message_rows("s", limit=10, offset=0, newest_first=False, include_compacted=True)
    assert [(r["role"], r["content"][0]["text"], r["compacted"]) for r in rows] == [
        ("user", "first question", True),
        ("assistant", "first answer", True),
        ("user", "SUMMARY", False),
        ("user", "second", False),
        ("assistant", "after", False),
    ]
    assert rows[2]["extra"] == {"summary": True}
    live_rows = await sessions.session_message_rows("s", limit=10, offset=0, newest_first=True, include_compacted=False)
    assert [r["content"][0]["text"] for r in live_rows] == ["SUMMARY", "second", "after"]


async def test_message_rows_page_from_either_end_in_chronological_order(backend: Backend) -> None:
    sessions = backend.sessions
    await sessions.append_session_messages("s", [user(str(n)) for n in range(5)])

    async def texts(*, limit: int, offset: int, newest_first: bool) -> list[str]:
        rows = await sessions.session_message_rows(
            "s", limit=limit, offset=offset, newest_first=newest_first, include_compacted=False
        )
        return [r["content"][0]["text"] for r in rows]

    assert await texts(limit=2, offset=0, newest_first=True) == ["3", "4"]
    assert await texts(limit=2, offset=2, newest_first=True) == ["1", "2"]
    assert await texts(limit=2, offset=0, newest_first=False) == ["0", "1"]
    assert await texts(limit=10, offset=4, newest_first=False) == ["4"]
    rows = await sessions.session_message_rows("s", limit=10, offset=0, newest_first=False, include_compacted=False)
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == 5 and all(i.startswith("m_") for i in ids)
    assert [r["timestamp"] for r in rows] == sorted(r["timestamp"] for r in rows)


async def test_message_rows_carry_tool_calls_and_reasoning(backend: Backend) -> None:
    sessions = backend.sessions
    await sessions.append_session_messages("s", TOOL_TURN)
    rows = await sessions.session_message_rows("s", limit=10, offset=0, newest_first=False, include_compacted=False)
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[1]["reasoning"] == "need ls"
    assert rows[1]["extra"]["tool_calls"][0]["id"] == "call_1"
    assert rows[2]["extra"] == {"tool_call_id": "call_1"}
    assert rows[0]["extra"] == {} and rows[0]["compacted"] is False


async def test_tool_names_map_call_ids_of_the_session_only(backend: Backend) -> None:
    sessions = backend.sessions
    await sessions.append_session_messages("s", TOOL_TURN)
    await sessions.append_session_messages(
        "s",
        [
            Message(
                "assistant", (), tool_calls=(ToolCall("call_2", "read_file", "{}"), ToolCall("call_3", "web", "{}"))
            ),
        ],
    )
    await sessions.append_session_messages(
        "other",
        [
            Message("assistant", (), tool_calls=(ToolCall("call_9", "elsewhere", "{}"),)),
        ],
    )
    assert await sessions.session_tool_names("s") == {"call_1": "terminal", "call_2": "read_file", "call_3": "web"}
    assert await sessions.session_tool_names("unknown") == {}


async def test_fork_copies_the_messages_under_a_new_child_session(backend: Backend) -> None:
    """WIRE §14.1: a fork is a new session, the original its parent, every message copied (W-14.2)."""
    sessions = backend.sessions
    await sessions.append_session_messages("s", TOOL_TURN, model="m1")
    assert await sessions.update_session("s", {"title": "Build"}) is True
    assert await sessions.fork_session("s", "f", None) == "forked"
    fork = await sessions.get_session("f")
    assert fork is not None
    assert (fork["parent_session_id"], fork["model"], fork["message_count"]) == ("s", "m1", 4)
    assert fork["title"] and fork["title"] != "Build"  # titles are unique in Hermes' SessionDB
    assert await sessions.load_session_messages("f") == TOOL_TURN
    await sessions.append_session_messages("f", [user("only in the fork")])
    assert await sessions.load_session_messages("s") == TOOL_TURN  # the branches are independent
    assert await sessions.fork_session("s", "f2", "Named") == "forked"
    named = await sessions.get_session("f2")
    assert named is not None and named["title"] == "Named"
    assert await sessions.fork_session("s", "f", None) == "exists"
    assert await sessions.fork_session("nope", "f3", None) == "no_source"
    assert await sessions.get_session("f3") is None


def test_session_store_protocol_lists_only_session_methods() -> None:
    """The session protocol stays small enough for Hermes' SessionDB to implement."""
    methods = {name for name in vars(SessionStore) if not name.startswith("_")}
    assert methods == {
        "load_session_messages",
        "append_session_messages",
        "list_sessions",
        "get_session",
        "live_session_id",
        "seed_session",
        "create_session",
        "update_session",
        "delete_session",
        "session_message_rows",
        "session_tool_names",
        "fork_session",
    }
