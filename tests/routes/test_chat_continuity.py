"""Conversation continuity for stateless chat (issue 14, submission/continuity.py), on the scripted runtime and the plugin's
session store: a client that resends the visible history the gateway answered continues the conversation — same
session, and the agent's history is the server-side one, with the tool calls and results the client never saw. An
edited answer or a regenerated one starts a session of its own (seeded with what the client sent), whose next
message continues it in turn; `api_server.chat_continuity: off` gives the agent the client's history as before. The
§5.2 identity does not change: a keyed retry replays.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient

from tests.helpers import DEFAULT_ANSWER, USE_TOOL_ANSWER, execution_for, history_texts

from .support import json_chat


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


async def test_a_resent_transcript_continues_the_conversation_with_its_tool_calls(
    api: TestClient, auth: dict[str, str]
) -> None:
    headers, first = await json_chat(api, auth, messages=[user("use tool, continuity one")])
    session_id = headers["X-Hermes-Session-Id"]
    assert first["choices"][0]["message"]["content"] == USE_TOOL_ANSWER
    sent = [user("use tool, continuity one"), assistant(USE_TOOL_ANSWER), user("and then?")]
    headers, _ = await json_chat(api, auth, messages=sent)
    assert headers["X-Hermes-Session-Id"] == session_id
    execution = execution_for(api, "and then?")
    assert execution["session_id"] == session_id
    roles = [m["role"] for m in execution["history"]]
    assert roles == ["user", "assistant", "tool", "assistant"], "the server-side history, tool call and result in it"
    assert execution["history"][1]["tool_calls"][0]["function"]["name"] == "terminal"
    assert history_texts(execution)[-1] == ("assistant", USE_TOOL_ANSWER)

    # Whitespace the client trimmed or added does not break it; a third message continues it again.
    sent += [assistant(f"  {DEFAULT_ANSWER}\n"), user("one more")]
    headers, _ = await json_chat(api, auth, messages=sent)
    assert headers["X-Hermes-Session-Id"] == session_id
    assert [m["role"] for m in execution_for(api, "one more")["history"]].count("tool") == 1


async def test_an_edited_answer_starts_a_branch_that_its_next_message_continues(
    api: TestClient, auth: dict[str, str]
) -> None:
    headers, _ = await json_chat(api, auth, messages=[user("use tool, continuity two")])
    original = headers["X-Hermes-Session-Id"]
    edited = [user("use tool, continuity two"), assistant("An answer the gateway never gave."), user("branch here")]
    headers, reply = await json_chat(api, auth, messages=edited)
    branch = headers["X-Hermes-Session-Id"]
    assert branch != original and branch.startswith("api-")
    assert history_texts(execution_for(api, "branch here")) == [
        ("user", "use tool, continuity two"),
        ("assistant", "An answer the gateway never gave."),
    ], "the branch starts from what the client sent"

    following = [*edited, assistant(reply["choices"][0]["message"]["content"]), user("still on the branch")]
    headers, _ = await json_chat(api, auth, messages=following)
    assert headers["X-Hermes-Session-Id"] == branch

    # The original conversation is untouched by the branch: its own continuation still matches it.
    headers, _ = await json_chat(
        api, auth, messages=[user("use tool, continuity two"), assistant(USE_TOOL_ANSWER), user("back on the original")]
    )
    assert headers["X-Hermes-Session-Id"] == original
    roles = [m["role"] for m in execution_for(api, "back on the original")["history"]]
    assert roles == ["user", "assistant", "tool", "assistant"]


async def test_a_regenerated_answer_runs_beside_the_original(api: TestClient, auth: dict[str, str]) -> None:
    """Regenerate resends the history up to the question: that history is a prefix, not the transcript — another
    conversation, so the original's transcript does not get a second answer to the same question."""
    await json_chat(api, auth, messages=[user("continuity three")])
    headers, _ = await json_chat(api, auth, messages=[user("continuity three"), assistant(DEFAULT_ANSWER), user("q")])
    original = headers["X-Hermes-Session-Id"]
    again = [user("continuity three"), assistant(DEFAULT_ANSWER), user("q"), assistant(DEFAULT_ANSWER), user("q2")]
    assert (await json_chat(api, auth, messages=again))[0]["X-Hermes-Session-Id"] == original
    regenerated = [user("continuity three"), assistant(DEFAULT_ANSWER), user("regenerate q")]
    assert (await json_chat(api, auth, messages=regenerated))[0]["X-Hermes-Session-Id"] != original


async def test_with_continuity_off_the_agent_gets_the_clients_history(make_api: Any, auth: dict[str, str]) -> None:
    api = await make_api(config={"api_server": {"chat_continuity": "off"}})
    headers, _ = await json_chat(api, auth, messages=[user("use tool, continuity off")])
    sent = [user("use tool, continuity off"), assistant(USE_TOOL_ANSWER), user("off then?")]
    assert (await json_chat(api, auth, messages=sent))[0]["X-Hermes-Session-Id"] == headers["X-Hermes-Session-Id"]
    assert [m["role"] for m in execution_for(api, "off then?")["history"]] == ["user", "assistant"]


async def test_a_keyed_retry_of_a_continued_chat_replays(api: TestClient, auth: dict[str, str]) -> None:
    """§5.2: continuity resolves the session inside the admitted turn; the key's identity and target are the same
    on the retry, which replays instead of running again."""
    await json_chat(api, auth, messages=[user("continuity keyed")])
    sent = [user("continuity keyed"), assistant(DEFAULT_ANSWER), user("keyed follow-up")]
    key = {"Idempotency-Key": "continuity-keyed-1"}
    headers, first = await json_chat(api, auth, messages=sent, headers=key)
    headers_again, again = await json_chat(api, auth, messages=sent, headers=key)
    assert again["id"] == first["id"] and headers_again["X-Hermes-Session-Id"] == headers["X-Hermes-Session-Id"]
    execution_for(api, "keyed follow-up")  # ran once


async def test_a_new_chat_with_a_taken_opening_gets_a_session_of_its_own(api: TestClient, auth: dict[str, str]) -> None:
    """Open WebUI users open many chats with the same first message: the second one does not land in the first's
    transcript, which its own continuation still matches."""
    first, _ = await json_chat(api, auth, messages=[user("continuity hi")])
    second, _ = await json_chat(api, auth, messages=[user("continuity hi")])
    assert second["X-Hermes-Session-Id"] != first["X-Hermes-Session-Id"]
    assert second["X-Hermes-Session-Id"].startswith("api-")
    sent = [user("continuity hi"), assistant(DEFAULT_ANSWER), user("continuity hi, continued")]
    headers, _ = await json_chat(api, auth, messages=sent)
    assert headers["X-Hermes-Session-Id"] in (first["X-Hermes-Session-Id"], second["X-Hermes-Session-Id"])
    assert history_texts(execution_for(api, "continuity hi, continued")) == [
        ("user", "continuity hi"),
        ("assistant", DEFAULT_ANSWER),
    ], "a continued conversation holds one exchange: the other chat's never joined it"


async def test_two_new_chats_opened_at_once_with_one_opening_get_sessions_of_their_own(
    api: TestClient, auth: dict[str, str]
) -> None:
    """Both look the opening's session up before either has written to it: the second must not join the first's."""
    opened = await asyncio.gather(*(json_chat(api, auth, messages=[user("continuity twins")]) for _ in range(2)))
    sessions = {headers["X-Hermes-Session-Id"] for headers, _ in opened}
    assert len(sessions) == 2
    for session_id in sessions:
        listed = await api.get(f"/api/sessions/{session_id}/messages", headers=auth)
        assert listed.status == 200, await listed.text()
        messages = (await listed.json())["data"]
        assert [m["role"] for m in messages] == ["user", "assistant"], "one exchange each, never both in one"
