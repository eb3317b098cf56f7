"""Large legal requests against the real gateway process (issue 20, defects 2 and 3): a settled turn does not keep the
client's history in memory, requests at the message and body limits never stall the event loop, and past the limits
a request is 400 naming the field, stated in /openapi.json."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from hermes_api_plugin.http.json_body import MAX_CONTAINERS, MAX_MEMBERS, MAX_VALUES
from hermes_api_plugin.protocol.counts import MAX_INPUT_ITEMS, MAX_MESSAGES
from tests.helpers import assert_error_envelope, fetch, wait_for_async
from tests.live import LiveGateway

STALL_MS = 150  # the longest /health may take during a large request: 100 ms plus margin for a loaded CI machine


def vm_rss_mb(pid: int) -> float:
    """The process's resident memory (Linux: /proc/<pid>/status VmRSS) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def post(live: LiveGateway, path: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(live.host, live.port, timeout=120)
    try:
        conn.request(
            "POST", path, body=body, headers={**live.headers, "Content-Type": "application/json", **(headers or {})}
        )
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def chat_body(messages: int, pad: int, tag: str = "") -> bytes:
    """A chat of `messages` messages (alternating user / assistant, `pad` characters each), ending with the user's."""
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{tag} message {i} " + "x" * pad}
        for i in range(messages - 1)
    ]
    body = {"model": "hermes-agent", "messages": [*history, {"role": "user", "content": f"{tag} the question"}]}
    return json.dumps(body).encode()


def responses_body(items: int, pad: int) -> bytes:
    body = {
        "model": "hermes-agent",
        "input": [{"role": "user", "content": f"item {i} " + "z" * pad} for i in range(items)],
    }
    return json.dumps(body).encode()


def shaped_body(junk: str) -> bytes:
    """A one-message chat carrying `junk` (JSON text) in a field the server ignores, padded to ~10 MB: the shapes whose
    C-level parse and hashing cost grows with their number of values, not their bytes."""
    pad = "p" * (9_000_000 - len(junk))
    return (
        f'{{"model":"hermes-agent","messages":[{{"role":"user","content":"hi"}}],"junk":{junk},"pad":"{pad}"}}'.encode()
    )


# Near each structure limit (the chat itself adds a few containers, members and values): what json's scanner and the
# identity hash's encoder are slowest on per byte — empty arrays, small numbers, one object of many members.
HOSTILE_SHAPES = {
    "arrays": "[" + ",".join(["[]"] * (MAX_CONTAINERS - 10)) + "]",
    "numbers": "[" + ",".join(["0"] * (MAX_VALUES - 10)) + "]",
    "members": "{" + ",".join(f'"{i}":0' for i in range(MAX_MEMBERS - 10)) + "}",
}


def slowest_health_ms(live: LiveGateway, request: Callable[[], tuple[int, bytes]]) -> tuple[float, int, int]:
    """Run `request` while another connection asks GET /health every 50 ms; the slowest /health answer (ms), how
    many were asked, and the request's status."""
    stop = threading.Event()
    latencies: list[float] = []

    def probe() -> None:
        conn = http.client.HTTPConnection(live.host, live.port, timeout=60)
        try:
            while not stop.is_set():
                started = time.monotonic()
                conn.request("GET", "/health")
                conn.getresponse().read()
                latencies.append(time.monotonic() - started)
                time.sleep(0.05)
        finally:
            conn.close()

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        time.sleep(0.2)
        status, _ = request()
        time.sleep(0.3)  # what a turn does once the reply is out (settling, storing) counts too
    finally:
        stop.set()
        prober.join()
    return max(latencies) * 1000, len(latencies), status


def test_issue20_defect2_settled_large_chats_do_not_keep_their_history_in_memory(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    """Each 8.5 MB chat of 10 000 messages kept ~22 MB in the gateway for an hour (the settled turn held the whole
    history); now the process's RSS stops growing once the first few large requests have set its high-water mark."""
    live = gateway_factory(script=None)
    assert post(live, "/v1/chat/completions", chat_body(2, 10))[0] == 200
    for n in range(3):  # the parser's and the threads' high-water mark
        assert post(live, "/v1/chat/completions", chat_body(MAX_MESSAGES, 800, f"warm{n}"))[0] == 200
    warm = vm_rss_mb(live.proc.pid)
    for n in range(5):
        assert post(live, "/v1/chat/completions", chat_body(MAX_MESSAGES, 800, f"chat{n}"))[0] == 200
    grown = vm_rss_mb(live.proc.pid) - warm
    # Kept histories grow ~22 MB a chat (110 MB here); the allocator's own noise over five such chats was -16 to +44 MB
    # on a 2-core machine running other work, so the bound sits between the two.
    assert grown < 66, f"five more settled chats of {MAX_MESSAGES} messages kept {grown:.0f} MB"


def test_issue20_defect3_health_answers_at_once_during_requests_at_the_limits(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    """A chat of MAX_MESSAGES messages in a ~10 MB body (the largest allowed), keyed too, and a Responses request of
    MAX_INPUT_ITEMS items in a ~10 MB body: /health, asked every 50 ms meanwhile, answers within STALL_MS in at least
    one of two tries of each (on main it waited 130-350 ms every time: the parse, hashes and store encoding ran on the
    event loop; here 25-70 ms, with rare spikes on a machine busy with other work). So do bodies of the shapes that
    cost json's C scanner and the identity hash most per byte, just inside the structure limits (before those limits a
    10 MB body of `[]` held the loop 0.9 s, of `""` 0.6 s: C code holds the interpreter lock even off the loop)."""
    live = gateway_factory(script=None)
    cases: dict[str, Callable[[], tuple[int, bytes]]] = {
        "chat": lambda: post(live, "/v1/chat/completions", chat_body(MAX_MESSAGES, 900, "plain")),
        "keyed chat": lambda: post(
            live, "/v1/chat/completions", chat_body(MAX_MESSAGES, 900, "keyed"), {"Idempotency-Key": "big-1"}
        ),
        "responses": lambda: post(live, "/v1/responses", responses_body(MAX_INPUT_ITEMS, 900)),
        **{
            f"{shape} near the structure limit": (
                lambda junk=junk: post(live, "/v1/chat/completions", shaped_body(junk), {"Idempotency-Key": junk[:40]})
            )
            for shape, junk in HOSTILE_SHAPES.items()
        },
    }
    slowest: dict[str, list[int]] = {}
    for name, request in cases.items():
        for _ in range(2):  # a stall of the loop happens every time; a busy machine's hiccup rarely twice
            stall, probes, status = slowest_health_ms(live, request)
            assert status == 200, name
            assert probes >= 5, f"{name}: /health was asked only {probes} times"
            slowest.setdefault(name, []).append(round(stall))
    assert max(min(stalls) for stalls in slowest.values()) < STALL_MS, f"/health waited (ms): {slowest}"


def test_issue20_defect3_past_the_structure_limits_is_413_before_the_parse(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    """One more container, member or value than the limits allow is 413 body_too_large in the envelope, nothing runs,
    and /health never waits on it."""
    live = gateway_factory()
    over = {
        "arrays": "[" + ",".join(["[]"] * MAX_CONTAINERS) + "]",
        "numbers": "[" + ",".join(["0"] * MAX_VALUES) + "]",
        "members": "{" + ",".join(f'"{i}":0' for i in range(MAX_MEMBERS + 1)) + "}",
        "empty strings": "[" + ",".join(['""'] * MAX_VALUES) + "]",
    }
    for shape, junk in over.items():
        stall, _, status = slowest_health_ms(
            live, lambda junk=junk: post(live, "/v1/chat/completions", shaped_body(junk))
        )
        assert status == 413, shape
        assert stall < STALL_MS, f"{shape}: /health waited {stall:.0f} ms"
    status, raw = post(live, "/v1/chat/completions", shaped_body(over["members"]))
    assert json.loads(raw)["error"]["code"] == "body_too_large"
    assert live.executions() == []


async def test_issue20_defect3_past_the_message_and_item_limits_is_400_naming_the_field(
    api: TestClient, auth: dict[str, str]
) -> None:
    """One message or item past the limit is 400 invalid_parameter with `param` naming the field; nothing runs."""
    many = [{"role": "user", "content": "hi"}] * (MAX_MESSAGES + 1)
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("/v1/chat/completions", {"messages": many}, "messages"),
        ("/v1/runs", {"input": many}, "input"),
        ("/v1/responses", {"input": ["hi"] * (MAX_INPUT_ITEMS + 1)}, "input"),
        ("/v1/responses", {"input": "hi", "conversation_history": many}, "conversation_history"),
        ("/v1/runs", {"input": "hi", "conversation_history": many}, "conversation_history"),
    ]
    for path, body, param in cases:
        reply = await fetch(api, "POST", path, json=body, headers=auth)
        assert_error_envelope(reply, 400, code="invalid_parameter", param=param)
        assert "at most" in reply.json()["error"]["message"]
    ok = await fetch(api, "POST", "/v1/chat/completions", json={"messages": many[:MAX_MESSAGES]}, headers=auth)
    assert ok.status == 200, "exactly at the limit is accepted"


async def test_issue20_defect3_openapi_states_the_limits(api: TestClient, auth: dict[str, str]) -> None:
    doc = (await fetch(api, "GET", "/openapi.json", headers=auth)).json()
    schemas = doc["components"]["schemas"]

    def array_of(schema: dict[str, Any]) -> dict[str, Any]:
        options = schema.get("anyOf", [schema])
        return next(o for o in options if o.get("type") in ("array", ["array", "null"]))

    assert schemas["ChatCompletionRequest"]["properties"]["messages"]["maxItems"] == MAX_MESSAGES
    assert array_of(schemas["ResponseCreateRequest"]["properties"]["input"])["maxItems"] == MAX_INPUT_ITEMS
    assert array_of(schemas["RunCreateRequest"]["properties"]["input"])["maxItems"] == MAX_MESSAGES
    assert array_of(schemas["RunCreateRequest"]["properties"]["conversation_history"])["maxItems"] == MAX_MESSAGES


async def test_issue20_defect2_a_run_evicted_from_memory_still_answers_from_the_store(
    make_api: Callable[..., Any], auth: dict[str, str]
) -> None:
    """W-6.2 with `api_server.turns.max_recent: 1`: a keyed run pushed out of memory by a newer settled run still
    reads back (status, output, events) from its durable admission and journal; an unkeyed run on one gateway's
    store lives only in memory, so once evicted it is 404 run_not_found."""
    api: TestClient = await make_api(config={"api_server": {"turns": {"max_recent": 1}}})

    async def run(text: str, headers: dict[str, str] | None = None) -> str:
        reply = await fetch(api, "POST", "/v1/runs", json={"input": text}, headers={**auth, **(headers or {})})
        assert reply.status == 202, reply.raw
        run_id: str = reply.json()["run_id"]
        await wait_for_async(
            lambda: fetch(api, "GET", f"/v1/runs/{run_id}", headers=auth),
            until=lambda r: r.status == 200 and r.json()["status"] == "completed",
            what=f"run {run_id} settled",
        )
        return run_id

    keyed = await run("hello", {"Idempotency-Key": "evicted-run"})
    live = await fetch(api, "GET", f"/v1/runs/{keyed}", headers=auth)
    unkeyed = await run("hello again")  # the newest settled run: the keyed one leaves memory
    again = await fetch(api, "GET", f"/v1/runs/{keyed}", headers=auth)
    assert again.status == 200
    assert {k: again.json()[k] for k in ("status", "output", "last_event")} == {
        k: live.json()[k] for k in ("status", "output", "last_event")
    }
    events = await fetch(api, "GET", f"/v1/runs/{keyed}/events", headers=auth)
    assert events.status == 200 and b"run.completed" in events.raw
    await run("and once more")
    assert_error_envelope(await fetch(api, "GET", f"/v1/runs/{unkeyed}", headers=auth), 404, code="run_not_found")
