"""A response head that cannot be written (the client is gone at that instant) never strands a turn.

Issue 11: before the one submission path, chat answered 500 and its held turn stayed `queued` in the registry
for good — holding a concurrency slot, making its session undeletable (409). Here the head write fails on
every surface that writes one (SSE and early-head JSON, keyed and not): the reply is an error envelope, the
turn settles without running, the slot is free and the session can be deleted. Runs write no turn head (202
at once), so they have no such failure.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.http import delivery, sse
from hermes_api_plugin.http.app_keys import TURNS
from tests.conftest import ApiFactory
from tests.helpers import HELLO_CHAT
from tests.live import executions

SESSION = "head-failure"

# (name, path, body, stream): every way a new turn's head is written.
CASES = [
    ("chat-json", "/v1/chat/completions", {**HELLO_CHAT, "stream": False}, False),
    ("chat-sse", "/v1/chat/completions", {**HELLO_CHAT, "stream": True}, True),
    ("responses-json", "/v1/responses", {"input": "hello", "stream": False}, False),
    ("responses-sse", "/v1/responses", {"input": "hello", "stream": True}, True),
    ("session-chat", f"/api/sessions/{SESSION}/chat", {"message": "hello"}, False),
    ("session-chat-stream", f"/api/sessions/{SESSION}/chat/stream", {"message": "hello"}, True),
]


def _fail_once(monkeypatch: pytest.MonkeyPatch, cls: Any) -> list[int]:
    """Make the next head write of `cls` fail as a reset connection does; returns the call counter."""
    real = cls.open.__func__
    calls: list[int] = []

    async def failing(kind: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionResetError("Cannot write to closing transport")
        return await real(kind, *args, **kwargs)

    monkeypatch.setattr(cls, "open", classmethod(failing))
    return calls


async def _settled(api: TestClient) -> None:
    registry = api.server.app[TURNS]
    for _ in range(200):
        if registry.active == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{registry.active} turn(s) left in the registry")


@pytest.mark.parametrize("keyed", [False, True], ids=["unkeyed", "keyed"])
@pytest.mark.parametrize(("name", "path", "body", "stream"), CASES, ids=[c[0] for c in CASES])
async def test_a_head_that_cannot_be_written_frees_the_turn(
    make_api: ApiFactory,
    auth: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    path: str,
    body: dict[str, Any],
    stream: bool,
    keyed: bool,
) -> None:
    api = await make_api(config={"api_server": {"max_concurrent_runs": 1}})
    status, _ = await _request(api, "POST", "/api/sessions", auth, {"id": SESSION})
    assert status == 201
    headers = {**auth, "X-Hermes-Session-Id": SESSION}
    if keyed:
        headers["Idempotency-Key"] = f"head-failure-{name}"
    calls = _fail_once(monkeypatch, sse.SseStream if stream else sse.EarlyJson)

    status, reply = await _request(api, "POST", path, headers, body)
    assert calls, "the head was never written"
    assert 400 <= status < 600 and status != 500, reply
    assert set(reply["error"]) == {"message", "type", "param", "code"}
    assert reply["error"]["code"] == "client_closed_request"

    await _settled(api)
    assert executions(api.home) == [], "the agent never ran the turn"  # type: ignore[attr-defined]
    # The slot is free: with a cap of 1, a new turn is admitted and completes.
    status, _ = await _request(api, "POST", "/v1/chat/completions", auth, {**HELLO_CHAT, "stream": False})
    assert status == 200
    status, deleted = await _request(api, "DELETE", f"/api/sessions/{SESSION}", auth)
    assert status == 200, deleted


async def _request(
    api: TestClient, method: str, path: str, headers: dict[str, str], body: Any = None
) -> tuple[int, dict[str, Any]]:
    async with api.request(method, path, json=body, headers=headers) as resp:
        return resp.status, json.loads(await resp.text())


def test_deliver_takes_the_surface_not_its_pieces() -> None:
    """Issue 21, part 3: what varies per surface (headers, first records, render, fold, body, [DONE], the wait for a
    durable journal) is the surface's to say; `deliver` takes the request, the journal, the held turn, the surface and
    at most two more — it does not grow back into the thirteen parameters it had."""
    parameters = list(inspect.signature(delivery.deliver).parameters)
    assert len(parameters) <= 6, parameters
    assert parameters[:4] == ["request", "journal", "held", "surface"]
