"""Background responses, cancel and disconnects: a background turn runs without its client, cancel settles
a running or queued one `cancelled` and refuses a settled or connected foreground one, a foreground stream's
disconnect cancels it (WIRE.md §4.8, §4.9, §5.5; W-4.13).

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the
scripted runtime (tests/scripts/chat.yaml); nothing on the server side is mocked. Shared helpers:
tests/routes/responses_helpers.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient

from hermes_api_plugin.http.app_keys import TURNS
from tests.helpers import (
    RESPONSE_KEYS,
    RESPONSES,
    RUN_ID,
    USE_TOOL_ANSWER,
    assert_error_envelope,
    fetch,
    read_until,
    wait_for_async,
)
from tests.live import executions

from .responses_helpers import (
    ResponseStream,
    create,
    first_id,
    get_json,
    get_stream,
    message_texts,
    poll_status,
    read_tool_start,
)


async def test_background_returns_at_once_and_completes_without_client(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.13, §4.9: background:true stream:false → 200 at once, in_progress/queued; it completes on its own."""
    headers, reply = await create(api, auth, "use tool", background=True)
    assert reply["status"] in ("in_progress", "queued")
    assert reply["background"] is True
    assert reply["output"] == [] and reply["usage"] is None
    assert RUN_ID.match(headers["X-Hermes-Run-Id"])
    done = await poll_status(api, auth, reply["id"], {"completed"})
    assert done["background"] is True
    assert message_texts(done) == [("commentary", "Listed the files."), ("final_answer", USE_TOOL_ANSWER)]
    assert done["usage"]["total_tokens"] == 59


async def test_cancel_background_hang_settles_cancelled(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.13, W-4.17: cancel of a running background response → 200 status cancelled, tool closed."""
    _, running = await create(api, auth, "hang", background=True)
    await read_tool_start(api, auth, running["id"])
    async with api.post(f"{RESPONSES}/{running['id']}/cancel", headers=auth) as resp:
        assert resp.status == 200
        cancelled = await resp.json()
    assert set(cancelled) == RESPONSE_KEYS
    assert cancelled["status"] == "cancelled"
    assert [(i["type"], i["status"]) for i in cancelled["output"]] == [
        ("reasoning", "completed"),
        ("function_call", "completed"),
        ("function_call_output", "completed"),
    ]
    assert cancelled["output"][-1]["output"] == "[interrupted]"
    status, stored = await get_json(api, auth, f"{RESPONSES}/{running['id']}")
    assert status == 200 and stored == cancelled
    # A second cancel of the settled background response returns the stored object unchanged.
    async with api.post(f"{RESPONSES}/{running['id']}/cancel", headers=auth) as again:
        assert again.status == 200
        assert await again.json() == cancelled


async def test_cancel_of_settled_foreground_response_is_not_cancellable(api: TestClient, auth: dict[str, str]) -> None:
    """§4.8: cancel of a foreground response (not background, not detached) → 400 response_not_cancellable."""
    _, reply = await create(api, auth, "hello")
    assert_error_envelope(
        await fetch(api, "POST", f"{RESPONSES}/{reply['id']}/cancel", headers=auth),
        400,
        "response_not_cancellable",
        type="invalid_request_error",
    )


async def test_cancel_of_connected_foreground_stream_is_not_cancellable(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.13: cancelling a running foreground response whose client is connected → 400 response_not_cancellable."""
    body = {"model": "hermes-agent", "input": "hang", "stream": True}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        raw = await read_until(resp, b"response.function_call_arguments.done")
        response_id = first_id(raw)
        assert_error_envelope(
            await fetch(api, "POST", f"{RESPONSES}/{response_id}/cancel", headers=auth), 400, "response_not_cancellable"
        )
        status, snapshot = await get_json(api, auth, f"{RESPONSES}/{response_id}")
        assert status == 200 and snapshot["status"] == "in_progress"
        turn = api.server.app[TURNS].get(resp.headers["X-Hermes-Run-Id"])
        assert turn is not None
        turn.cancel()  # the run's own stop (§6.4) still works while the client is connected
        raw += await asyncio.wait_for(resp.content.read(), 10)
    assert ResponseStream(resp.status, resp.headers, raw).names[-1] == "response.cancelled"


async def test_background_stream_survives_a_disconnect(api: TestClient, auth: dict[str, str]) -> None:
    """§4.9: background:true stream:true — a disconnect does not stop the turn; GET shows it completed."""
    body = {"model": "hermes-agent", "input": "use tool", "stream": True, "background": True}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        raw = await read_until(resp, b"\n\n")
        response_id = first_id(raw)
        resp.close()
    done = await poll_status(api, auth, response_id, {"completed", "cancelled", "failed"})
    assert done["status"] == "completed"
    assert message_texts(done)[-1] == ("final_answer", USE_TOOL_ANSWER)


async def test_foreground_stream_disconnect_cancels_the_turn(api: TestClient, auth: dict[str, str]) -> None:
    """§5.5: without a key or background, a disconnect cancels the turn; the stored response settles cancelled."""
    body = {"model": "hermes-agent", "input": "hang", "stream": True}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        raw = await read_until(resp, b"response.function_call_arguments.done")
        response_id = first_id(raw)
        resp.close()
    cancelled = await poll_status(api, auth, response_id, {"cancelled", "completed", "failed"})
    assert cancelled["status"] == "cancelled"
    assert cancelled["output"][-1]["output"] == "[interrupted]"


async def test_cancel_settles_a_detached_foreground_response(make_api: Any, auth: dict[str, str]) -> None:
    """W-4.13, §4.8: a foreground turn running without its client (on_disconnect continue) can be cancelled."""
    api = await make_api(config={"api_server": {"on_disconnect": "continue"}})
    body = {"model": "hermes-agent", "input": "hang", "stream": True}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        raw = await read_until(resp, b"response.function_call_arguments.done")
        response_id = first_id(raw)
        run_id = resp.headers["X-Hermes-Run-Id"]
        resp.close()
    turn = api.server.app[TURNS].get(run_id)
    assert turn is not None
    await wait_for_async(lambda: turn.detached, what="the server noticing the disconnect")
    assert (await get_json(api, auth, f"{RESPONSES}/{response_id}"))[1]["status"] == "in_progress"
    async with api.post(f"{RESPONSES}/{response_id}/cancel", headers=auth) as cancel:
        assert cancel.status == 200
        cancelled = await cancel.json()
    assert cancelled["status"] == "cancelled"
    assert cancelled["background"] is False


async def test_cancel_of_queued_background_response_never_starts_it(api: TestClient, auth: dict[str, str]) -> None:
    """§4.8, §4.9: a background response queued behind its chain's running turn is cancelled without running."""
    _, running = await create(api, auth, "hang", background=True)
    await read_tool_start(api, auth, running["id"])
    _, queued = await create(api, auth, "queued never runs", background=True, previous_response_id=running["id"])
    assert queued["status"] == "queued"
    assert queued["previous_response_id"] == running["id"]
    async with api.post(f"{RESPONSES}/{queued['id']}/cancel", headers=auth) as resp:
        assert resp.status == 200
        cancelled = await resp.json()
    assert cancelled["status"] == "cancelled"
    assert cancelled["output"] == []
    async with api.post(f"{RESPONSES}/{running['id']}/cancel", headers=auth) as resp:
        assert (await resp.json())["status"] == "cancelled"
    replay = await get_stream(api, auth, queued["id"])
    assert replay.status == 200
    assert replay.names == ["response.created", "response.cancelled"], "a queued turn never gets response.in_progress"
    assert not [
        e
        for e in executions(api.home)  # type: ignore[attr-defined]
        if e["input"]["content"][0]["text"] == "queued never runs"
    ]
