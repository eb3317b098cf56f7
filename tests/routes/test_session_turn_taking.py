"""Turn-taking on session chat with the scripted runtime (WIRE.md §15.2, §15.4): a session chat's delivery ends where
its turn suspends — the request's event, the assistant's message with the question, `run.requires_action`, `done` —
and the session's next message answers it (`/approve`, `/deny`, plain words; any message for a question), its
delivery a message of its own in the same run."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import ApiFactory
from tests.helpers import SUSPEND_COMMAND, SUSPEND_SCRIPT, Reply, fetch

from .support import SESSIONS, chat, create_session, read_events, terminal_results


async def stream(api: TestClient, auth: dict[str, str], session_id: str, message: str) -> Reply:
    reply = await fetch(api, "POST", f"{SESSIONS}/{session_id}/chat/stream", json={"message": message}, headers=auth)
    assert reply.status == 200, reply.body
    return reply


def events(reply: Reply) -> list[dict[str, Any]]:
    return [r.json() for r in reply.records]


async def test_w_15_1_a_session_stream_ends_at_the_approval_and_the_next_message_decides(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    session = (await create_session(api, auth))["id"]
    first = await stream(api, auth, session, "delete the build")
    names = [e["event"] for e in events(first)]
    assert names[-4:] == ["approval.request", "assistant.completed", "run.requires_action", "done"]
    closing = events(first)[-3]
    assert (
        closing["content"].startswith("⚠️") and SUSPEND_COMMAND in closing["content"]
    )  # the answer since the last tool
    assert events(first)[-2]["required_action"]["type"] == "approval"
    run_id = first.headers["X-Hermes-Run-Id"]

    second = await stream(api, auth, session, "/approve")
    assert second.headers["X-Hermes-Run-Id"] == run_id
    later = events(second)
    assert [e["seq"] for e in later] == list(range(1, len(later) + 1))  # a delivery of its own
    assert later[0]["event"] == "run.started" and later[-2]["event"] == "run.completed"
    assert next(e for e in later if e["event"] == "approval.responded")["choice"] == "once"
    assert next(e for e in later if e["event"] == "assistant.completed")["content"] == "Done with the build directory."
    assert later[1]["message_id"] != events(first)[1]["message_id"]
    assert terminal_results((await read_events(api, auth, run_id)).payloads) == [False]


async def test_w_15_1_a_session_json_chat_reports_requires_action_and_deny_keeps_the_file(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    session = (await create_session(api, auth))["id"]
    headers, first = await chat(api, auth, session, "delete the build")
    assert first["status"] == "requires_action" and first["required_action"]["command"] == SUSPEND_COMMAND
    assert SUSPEND_COMMAND in first["message"]["content"]
    again, second = await chat(api, auth, session, "/deny")
    assert again["X-Hermes-Run-Id"] == headers["X-Hermes-Run-Id"] and second["status"] == "completed"
    assert terminal_results((await read_events(api, auth, headers["X-Hermes-Run-Id"])).payloads) == [True]


async def test_w_15_2_a_session_question_is_answered_by_the_next_message(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    session = (await create_session(api, auth))["id"]
    _, first = await chat(api, auth, session, "deploy")
    assert first["status"] == "requires_action" and first["message"]["content"] == "Which branch?"
    _, second = await chat(api, auth, session, "main")
    assert second["status"] == "completed" and second["message"]["content"] == "Deploying main."
