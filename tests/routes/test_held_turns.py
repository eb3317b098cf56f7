"""Issue 20, defect 1 (the safety net): whatever fails on a work-creating route after its turn was admitted and
before the turn starts, the turn is cancelled and settles with its slot freed — never left queued for good.

The failure is injected where each route hands its admitted turn on (its delivery step; `start_detached` for runs):
it stands in for any bug between `submit` and the response head, such as the `Last-Event-ID` parse that used to sit
there and answered 500 while the turn it had admitted held a slot until a restart. The request gets the §1.7 500
(`internal_error`, an unexpected failure); what matters is what it leaves behind.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

import hermes_api_plugin.http.delivery as delivery
import hermes_api_plugin.routes.responses as responses_route
import hermes_api_plugin.routes.runs as runs_route
from tests.conftest import ApiFactory
from tests.helpers import assert_error_envelope, fetch, wait_for_async

HELLO = [{"role": "user", "content": "hello"}]
# route: (the module, the step after admission that fails, path, body)
ROUTES: dict[str, tuple[Any, str, str, dict[str, Any]]] = {
    "chat": (delivery, "deliver", "/v1/chat/completions", {"messages": HELLO}),
    "chat_stream": (delivery, "deliver", "/v1/chat/completions", {"messages": HELLO, "stream": True}),
    "responses": (delivery, "deliver", "/v1/responses", {"input": "hello"}),
    "responses_background": (responses_route, "start_detached", "/v1/responses", {"input": "x", "background": True}),
    "runs": (runs_route, "start_detached", "/v1/runs", {"input": "hello"}),
    "session_chat": (delivery, "deliver", "/api/sessions/held/chat", {"message": "hello"}),
    "session_stream": (delivery, "deliver", "/api/sessions/held/chat/stream", {"message": "hello"}),
}


class InjectedFailure(Exception):
    """The stand-in bug."""


def _fail(*args: Any, **kwargs: Any) -> Any:
    raise InjectedFailure("after admission, before the head")


async def _held(api: TestClient, auth: dict[str, str]) -> dict[str, int]:
    reply = await fetch(api, "GET", "/health/detailed", headers=auth)
    body = reply.json()["api_server"]
    return {**body["turns"], "admitted": body["slots"]["admitted"]}


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("keyed", [False, True], ids=["unkeyed", "keyed"])
async def test_issue20_defect1_a_failure_after_admission_cancels_the_turn_and_frees_its_slot(
    make_api: ApiFactory, auth: dict[str, str], monkeypatch: pytest.MonkeyPatch, route: str, keyed: bool
) -> None:
    """Issue 20, defect 1: with a cap of one slot, the route fails after admitting its turn twice running: both times
    500 (never 429: the first turn gave its slot back), no turn left running or queued; then, the bug gone, a turn
    runs and the session the failed turns were on can be deleted."""
    # A keyed chat stream writes its head inside submit (WIRE §5.3): a later failure cannot be a 500 any more; its
    # connection is ended instead, so the client learns at once that the stream is cut.
    head_first = keyed and route == "chat_stream"
    api = await make_api(config={"api_server": {"max_concurrent_runs": 1}})
    module, step, path, body = ROUTES[route]
    with monkeypatch.context() as patch:
        patch.setattr(module, step, _fail)
        for attempt in range(2):
            headers = {**auth, "Idempotency-Key": f"held-{attempt}"} if keyed else auth
            if head_first:
                with pytest.raises(aiohttp.ClientPayloadError):  # cut, not left open until the client's timeout
                    await fetch(api, "POST", path, json=body, headers=headers, timeout=5.0)
            else:
                assert_error_envelope(await fetch(api, "POST", path, json=body, headers=headers), 500, "internal_error")
            await wait_for_async(
                lambda: _held(api, auth),
                until=lambda held: not any(held.values()),
                what=f"{route}: the failed turn settled",
            )
    assert (await fetch(api, "POST", path, json=body, headers=auth)).status in (200, 202)
    await wait_for_async(lambda: _held(api, auth), until=lambda held: not any(held.values()), what="settled")
    if path.startswith("/api/sessions/held/"):
        assert (await fetch(api, "DELETE", "/api/sessions/held", headers=auth)).status == 200
