"""store/session_move.py: the API sessions an earlier plugin kept in its own tables move into Hermes' state.db once
(WIRE §14.1) — with a real plugin SQLite file and a real `hermes_state.SessionDB` — and a reference gateway with the
`hermes` runtime does it at start-up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_api_plugin.core.content import text_message
from hermes_api_plugin.hermes.sessions import HermesSessionStore
from hermes_api_plugin.store import SqliteStore
from hermes_api_plugin.store.session_move import move_sessions
from tests.live import start_gateway

from .conftest import HomeFactory
from .support import http


async def fill(store: SqliteStore) -> None:
    sessions = store.sessions
    await sessions.append_session_messages("old-chat", [text_message("user", "hi"), text_message("assistant", "hello")])
    await sessions.update_session("old-chat", {"title": "Old chat", "pinned": True})
    await sessions.append_session_messages("taken-title", [text_message("user", "second")])
    await sessions.update_session("taken-title", {"title": "Already in Hermes"})
    await sessions.append_session_messages("both", [text_message("user", "plugin copy")])


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[SqliteStore, HermesSessionStore]]:
    from hermes_state import SessionDB

    plugin = SqliteStore(tmp_path / "hermes_api.sqlite3")
    await plugin.open()
    db = SessionDB(db_path=tmp_path / "state.db")
    db.create_session("cli-session", "cli")
    db.set_session_title("cli-session", "Already in Hermes")
    db.create_session("both", "cli")  # an id Hermes has: its own stays, the plugin's copy goes
    db.append_message("both", "user", content="hermes copy")
    yield plugin, HermesSessionStore(db, agent_writes_turns=True)
    await plugin.close()
    db.close()


async def test_sessions_move_into_state_db_with_their_transcript_and_flags_once(
    stores: tuple[SqliteStore, HermesSessionStore],
) -> None:
    plugin, hermes = stores
    await fill(plugin)
    assert await move_sessions(plugin.sessions, hermes) == 3
    assert await plugin.sessions.list_sessions(10, 0, None) == ([], False), "the plugin's tables keep no sessions"

    moved = await hermes.get_session("old-chat")
    assert moved is not None and (moved["source"], moved["title"], moved["pinned"]) == ("api_server", "Old chat", True)
    assert [(m.role, m.text) for m in await hermes.load_session_messages("old-chat")] == [
        ("user", "hi"),
        ("assistant", "hello"),
    ]
    untitled = await hermes.get_session("taken-title")
    assert untitled is not None and untitled["title"] is None, "Hermes keeps titles unique: moved without it"
    assert [m.text for m in await hermes.load_session_messages("both")] == ["hermes copy"]

    assert await move_sessions(plugin.sessions, hermes) == 0, "nothing left to move the second time"


def test_a_gateway_with_the_hermes_runtime_moves_them_at_start_up(hermes_home: HomeFactory) -> None:
    home = hermes_home()
    store = SqliteStore(home / "hermes_api.sqlite3")

    async def prepare() -> None:
        await store.open()
        await fill(store)
        await store.close()

    asyncio.run(prepare())
    live = start_gateway(home, timeout=60)
    try:
        listed = {s["id"] for s in http(live, "GET", "/api/sessions?source=api_server")["data"]}
        assert {"old-chat", "taken-title", "both"} <= listed
        page = http(live, "GET", "/api/sessions/old-chat/messages?order=oldest")
        assert [m["content"] for m in page["data"]] == ["hi", "hello"]
    finally:
        live.stop()
