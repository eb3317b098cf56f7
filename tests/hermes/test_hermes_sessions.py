"""Sessions are Hermes' sessions inside the real `hermes gateway run` (WIRE §14.1, W-14.2).

A session written into `$HERMES_HOME/state.db` through `hermes_state.SessionDB` as the Hermes CLI writes one
(source `cli`, a user and an assistant message) is listed by `GET /api/sessions` (and by `?source=cli`), its
messages are readable, session chat continues it with its history (the scripted provider records what the real
AIAgent sent) and appends the turn to it in state.db, and a fork copies its messages under a child session. A
session created through the API is a Hermes session with source `api_server`.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.live import TEST_KEY

from .conftest import HomeFactory
from .provider import MODEL, ScriptedProvider
from .support import PLUGINS, HermesGateway, listening, write_compression_split

CLI_ID = "20260101_120000_cli0001"
CLI_QUESTION = "Remember the code word PAPAYA for later."
CLI_ANSWER = "Noted: PAPAYA."


def call(gateway: HermesGateway, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {TEST_KEY}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=90) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def write_cli_session(home: Path) -> None:
    """What the Hermes CLI leaves in state.db after one exchange."""
    from hermes_state import SessionDB

    db = SessionDB(db_path=home / "state.db")
    try:
        db.create_session(CLI_ID, "cli", model=MODEL)
        db.append_message(CLI_ID, "user", content=CLI_QUESTION)
        db.append_message(CLI_ID, "assistant", content=CLI_ANSWER)
        db.set_session_title(CLI_ID, "Code word")
    finally:
        db.close()


def write_split_session(home: Path) -> None:
    """A TUI session an earlier Hermes compacted by splitting it: `old` ended, the conversation goes on in `tip`."""
    from hermes_state import SessionDB

    db = SessionDB(db_path=home / "state.db")
    try:
        write_compression_split(db, source="tui")
    finally:
        db.close()


def read_state(home: Path, session_id: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    from hermes_state import SessionDB

    db = SessionDB(db_path=home / "state.db")
    try:
        return db.get_session(session_id), db.get_messages(session_id)
    finally:
        db.close()


def test_a_cli_session_is_listed_read_continued_and_forked_and_api_sessions_are_hermes_sessions(
    hermes_home: HomeFactory,
    run_hermes: Callable[[Path], HermesGateway],
    provider: ScriptedProvider,
) -> None:
    """W-14.2 end to end on the real `hermes gateway run` with the plugin enabled and a real state.db."""
    home = hermes_home(env={"API_SERVER_PORT": "0"}, plugins=PLUGINS)
    write_cli_session(home)
    write_split_session(home)
    gateway = run_hermes(home)
    listening(gateway)

    # Listed, also under ?source=cli; not under another source.
    status, listed = call(gateway, "GET", "/api/sessions")
    assert status == 200, listed
    assert CLI_ID in [s["id"] for s in listed["data"]]
    status, cli_only = call(gateway, "GET", "/api/sessions?source=cli")
    assert [s["id"] for s in cli_only["data"]] == [CLI_ID]
    cli = cli_only["data"][0]
    assert (cli["source"], cli["title"], cli["message_count"], cli["preview"]) == (
        "cli",
        "Code word",
        2,
        CLI_QUESTION,
    )
    assert call(gateway, "GET", "/api/sessions?source=telegram")[1]["data"] == []

    # Its messages, in the §7.2 shape.
    status, page = call(gateway, "GET", f"/api/sessions/{CLI_ID}/messages")
    assert status == 200, page
    assert [(m["role"], m["content"], m["compacted"]) for m in page["data"]] == [
        ("user", CLI_QUESTION, False),
        ("assistant", CLI_ANSWER, False),
    ]

    # Continued through session chat: the agent receives the CLI history; the turn lands in the CLI session.
    status, reply = call(gateway, "POST", f"/api/sessions/{CLI_ID}/chat", {"message": "Which code word?"})
    assert status == 200, reply
    assert reply["status"] == "completed", reply
    assert "tool-ok" in reply["message"]["content"]
    sent = [r for r in provider.requests if any("Which code word?" in str(m.get("content")) for m in r.messages)]
    assert sent, "the agent never called the provider with the new message"
    history = [(m["role"], m.get("content")) for m in sent[0].messages if m.get("role") in ("user", "assistant")]
    assert history[:3] == [("user", CLI_QUESTION), ("assistant", CLI_ANSWER), ("user", "Which code word?")]
    row, stored = read_state(home, CLI_ID)
    assert row is not None and row["source"] == "cli"
    roles = [m["role"] for m in stored]
    assert roles[:3] == ["user", "assistant", "user"] and roles[-1] == "assistant" and "tool" in roles
    assert len(stored) == len(roles) and stored[2]["content"] == "Which code word?"  # written once, by the agent
    status, after = call(gateway, "GET", f"/api/sessions/{CLI_ID}")
    assert after["session"]["message_count"] == len(stored)

    # Forked: a child session with every message copied.
    status, forked = call(gateway, "POST", f"/api/sessions/{CLI_ID}/fork", {"id": "cli-branch"})
    assert status == 201, forked
    fork = forked["session"]
    assert (fork["id"], fork["parent_session_id"], fork["source"]) == ("cli-branch", CLI_ID, "api_server")
    assert fork["title"] == "Code word #2"  # Hermes' lineage title, as the CLI's /branch
    fork_row, fork_messages = read_state(home, "cli-branch")
    assert fork_row is not None and fork_row["parent_session_id"] == CLI_ID
    assert [(m["role"], m["content"]) for m in fork_messages] == [(m["role"], m["content"]) for m in stored]

    # Made through the API: a Hermes session (source api_server), its turn written by the agent.
    status, created = call(gateway, "POST", "/api/sessions", {"id": "from-the-api", "title": "API made"})
    assert status == 201, created
    status, reply = call(gateway, "POST", "/api/sessions/from-the-api/chat", {"message": "Hello from the API"})
    assert reply["status"] == "completed", reply
    api_row, api_messages = read_state(home, "from-the-api")
    assert api_row is not None and (api_row["source"], api_row["title"]) == ("api_server", "API made")
    assert api_messages[0]["content"] == "Hello from the API"
    status, api_only = call(gateway, "GET", "/api/sessions?source=api_server")
    assert {"from-the-api", "cli-branch"} <= {s["id"] for s in api_only["data"]}
    assert CLI_ID not in {s["id"] for s in api_only["data"]}

    # Patch and delete act on state.db too.
    status, patched = call(gateway, "PATCH", "/api/sessions/from-the-api", {"archived": True, "pinned": True})
    assert status == 200 and (patched["session"]["archived"], patched["session"]["pinned"]) == (True, True)
    status, deleted = call(gateway, "DELETE", "/api/sessions/from-the-api")
    assert status == 200 and deleted["deleted"] is True
    assert read_state(home, "from-the-api")[0] is None

    # A session Hermes continued under a new id is read and continued at its live tip, as upstream does.
    status, page = call(gateway, "GET", "/api/sessions/old/messages")
    assert status == 200 and page["session_id"] == "tip", page
    assert [m["content"] for m in page["data"]] == ["after the split"]
    status, reply = call(gateway, "POST", "/api/sessions/old/chat", {"message": "Go on after the split"})
    assert status == 200 and reply["status"] == "completed" and reply["session_id"] == "tip", reply
    assert "Go on after the split" in [m["content"] for m in read_state(home, "tip")[1]]
    assert [m["content"] for m in read_state(home, "old")[1]] == ["before the split"]

    assert "falling back to:" not in gateway.output()  # hermes.compat took no fallback on the pinned hermes-agent
