"""The typed replies of keyed turns read and write the admission record's reply JSON exactly as it is stored today.

A keyed retry re-renders its turn from that JSON (WIRE.md §5.4), and a keyed run found only through its admission
record names its session and model from it: rows stored before the replies were typed must still read, and what is
stored now must be what was stored before (the same keys and values).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.http.app_keys import SCOPE, STORE, TURNS
from hermes_api_plugin.store.base import IdempotencyRecord
from hermes_api_plugin.surfaces.chat import ChatReply
from hermes_api_plugin.surfaces.responses import ResponsesReply
from hermes_api_plugin.surfaces.runs import RunReply, stored_reply
from hermes_api_plugin.surfaces.sessions import SessionChatReply
from tests.conftest import ApiFactory
from tests.helpers import CHAT, HELLO_CHAT, RESPONSES, RUNS, wait_for_async

SESSION = "api-0123456789abcdef"
# Each surface's reply as the admission record holds it today (the JSON text, as the store writes it).
STORED: dict[str, str] = {
    "chat": json.dumps(
        {"completion_id": "chatcmpl-" + "a" * 32, "created": 1767225600, "model": "hermes-agent", "session_id": SESSION}
    ),
    "responses": json.dumps(
        {
            "head": {
                "id": "resp_" + "b" * 32,
                "created_at": 1767225600,
                "model": "hermes-agent",
                "background": False,
                "store": True,
                "instructions": "Be brief.",
                "metadata": {"ticket": "42"},
                "tools": [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}],
                "tool_choice": "auto",
                "parallel_tool_calls": True,
                "previous_response_id": None,
            },
            "commentary": True,
            "queued": False,
            "session_id": SESSION,
        }
    ),
    "runs": json.dumps({"session_id": "api_1767225600_0badf00d", "model": "hermes-agent"}),
    "session_chat": json.dumps({"session_id": "s1", "model": "other-model"}),
}
TYPES = {"chat": ChatReply, "responses": ResponsesReply, "runs": RunReply, "session_chat": SessionChatReply}


def _record(surface: str, reply: dict[str, Any]) -> IdempotencyRecord:
    return IdempotencyRecord("scope", surface, "key", "identity", "[]", "settled", "run_" + "c" * 32, reply)


@pytest.mark.parametrize("surface", sorted(STORED))
def test_a_reply_stored_today_round_trips(surface: str) -> None:
    stored = json.loads(STORED[surface])
    reply = TYPES[surface].from_json(stored)
    assert reply.to_json() == stored
    assert json.dumps(reply.to_json()) == STORED[surface]  # the same keys, in the same order
    assert stored_reply(_record(surface, stored)) == reply


def test_a_stored_reply_names_the_runs_session_and_model() -> None:
    named = {surface: stored_reply(_record(surface, json.loads(text))) for surface, text in STORED.items()}
    assert {surface: (reply.session_id, reply.model) for surface, reply in named.items()} == {
        "chat": (SESSION, "hermes-agent"),
        "responses": (SESSION, "hermes-agent"),  # the Response head's model
        "runs": ("api_1767225600_0badf00d", "hermes-agent"),
        "session_chat": ("s1", "other-model"),
    }


def test_a_chat_reply_without_a_session_still_reads() -> None:
    """The chat replay has always named the live session when the record names none."""
    stored = json.loads(STORED["chat"])
    del stored["session_id"]
    assert ChatReply.from_json(stored).session_id is None


# (surface, path, body): one keyed request per surface; what its admission record stores must read back as it is.
KEYED = [
    ("chat", CHAT, {**HELLO_CHAT, "stream": False}),
    ("responses", RESPONSES, {"input": "hello", "instructions": "Be brief.", "metadata": {"ticket": "42"}}),
    ("runs", RUNS, {"input": "hello"}),
    ("session_chat", f"/api/sessions/{SESSION}/chat", {"message": "hello"}),
]


@pytest.mark.parametrize(("surface", "path", "body"), KEYED, ids=[k[0] for k in KEYED])
async def test_what_a_keyed_turn_stores_reads_back_as_its_typed_reply(
    make_api: ApiFactory, auth: dict[str, str], surface: str, path: str, body: dict[str, Any]
) -> None:
    api: TestClient = await make_api()
    async with api.post("/api/sessions", json={"id": SESSION}, headers=auth) as resp:
        assert resp.status == 201
    headers = {**auth, "Idempotency-Key": f"typed-{surface}"}
    async with api.post(path, json=body, headers=headers) as resp:
        assert resp.status in (200, 202), await resp.text()
        run_id = resp.headers.get("X-Hermes-Run-Id") or (await resp.json())["run_id"]
    await wait_for_async(lambda: _settled(api))
    record = await api.server.app[STORE].idempotency_record_for_turn(api.server.app[SCOPE], run_id)
    assert record is not None and record.surface == surface
    reply = TYPES[surface].from_json(record.reply)
    assert reply.to_json() == record.reply
    assert reply.model == "hermes-agent"


async def _settled(api: TestClient) -> bool:
    return bool(api.server.app[TURNS].active == 0)
