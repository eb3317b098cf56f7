"""Golden byte streams: the exact SSE bytes of scripted turns on each stream kind — chat completions (§3),
Responses (§4), runs events (§6.3), session chat (§7.4) — checked in under tests/golden/.

Any change of the wire — a field, its order, spacing, escaping, a record more or less — is a visible diff of a
.sse file. The gateway plays tests/scripts/golden.yaml (no delays; every text step fits in one delta, so the
server never has adjacent deltas of one kind to coalesce, §2.2) with a 30 s keepalive (no comment can fall into
a turn). Ids, timestamps and durations are normalised: `chatcmpl-<1>`, `resp_<1>`, `rs_<1>`, `msg_<2>`,
`call_<1>`, `run_<1>` (numbered per prefix in order of first appearance), `"created":0`, `"created_at":0`,
`"completed_at":0`, `"duration_ms":0`, and the float `"timestamp"`, `"ts"`, `"duration"` as `0.0`; the normalised
files stay valid SSE with valid JSON.

After a deliberate wire change: `HERMES_UPDATE_GOLDEN=1 ./test tests/test_golden.py`, then review the diff.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import GOLDEN, Reply, chat_body, live_request, normalise
from tests.live import LiveGateway, start_gateway, write_home

UPDATE = os.environ.get("HERMES_UPDATE_GOLDEN") == "1"
PROMPTS = {"use-tool": "use tool", "exhaust": "exhaust", "fail": "fail"}
CHAT_PATH, RESPONSES_PATH = "/v1/chat/completions", "/v1/responses"


def responses_body(prompt: str) -> dict[str, Any]:
    return {"model": "hermes-agent", "stream": True, "input": prompt}


def check_golden(name: str, raw: bytes) -> None:
    path = GOLDEN / f"{name}.sse"
    got = normalise(raw)
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(got)
    assert path.exists(), f"{path} is missing: HERMES_UPDATE_GOLDEN=1 ./test tests/test_golden.py writes it"
    assert got.decode("utf-8") == path.read_text(encoding="utf-8"), f"the wire of {name} changed"


def assert_sse_head(reply: Reply) -> None:
    """§2.1 head of every stream kind."""
    assert reply.status == 200
    assert reply.headers.get("Content-Type") == "text/event-stream"
    assert reply.headers.get("Cache-Control") == "no-cache"
    assert reply.headers.get("X-Accel-Buffering") == "no"
    assert reply.headers.get("Content-Length") is None


@pytest.fixture(scope="module")
def golden_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    home = write_home(
        tmp_path_factory.mktemp("golden_home"),
        script="golden.yaml",
        config={"api_server": {"sse_keepalive_seconds": 30}},
    )
    gateway = start_gateway(home)
    yield gateway
    gateway.stop()


@pytest.mark.parametrize("turn", list(PROMPTS))
def test_chat_stream_bytes(golden_gateway: LiveGateway, turn: str) -> None:
    """§3.3–§3.5: the chat stream of each scripted turn equals tests/golden/chat-<turn>.sse."""
    reply = live_request(golden_gateway, "POST", CHAT_PATH, chat_body(PROMPTS[turn]))
    assert_sse_head(reply)
    assert reply.raw.endswith(b"data: [DONE]\n\n")
    check_golden(f"chat-{turn}", reply.raw)


@pytest.mark.parametrize("turn", list(PROMPTS))
def test_responses_stream_bytes(golden_gateway: LiveGateway, turn: str) -> None:
    """§4.2–§4.4: the Responses stream of each scripted turn equals tests/golden/responses-<turn>.sse, and the
    stored response replayed with `GET …?stream=true` (§4.6) is the same bytes, unnormalised."""
    reply = live_request(golden_gateway, "POST", RESPONSES_PATH, responses_body(PROMPTS[turn]))
    assert_sse_head(reply)
    check_golden(f"responses-{turn}", reply.raw)
    assert reply.keepalives == 0
    response_id = reply.events[0]["response"]["id"]
    replay = live_request(golden_gateway, "GET", f"{RESPONSES_PATH}/{response_id}?stream=true")
    assert_sse_head(replay)
    assert replay.raw == reply.raw


@pytest.mark.parametrize("turn", list(PROMPTS))
def test_run_events_bytes(golden_gateway: LiveGateway, turn: str) -> None:
    """§6.1, §6.3: `POST /v1/runs` then `GET /v1/runs/{id}/events` equals tests/golden/runs-<turn>.sse (`id:` lines,
    the event name inside the JSON, one terminal `run.*`)."""
    created = live_request(golden_gateway, "POST", "/v1/runs", {"input": PROMPTS[turn]})
    assert created.status == 202
    events = live_request(golden_gateway, "GET", f"/v1/runs/{created.json()['run_id']}/events")
    assert_sse_head(events)
    check_golden(f"runs-{turn}", events.raw)


@pytest.mark.parametrize("turn", list(PROMPTS))
def test_session_chat_stream_bytes(golden_gateway: LiveGateway, turn: str) -> None:
    """§7.4: `POST /api/sessions/{id}/chat/stream` on a new session equals tests/golden/sessions-<turn>.sse
    (named events with `id:` lines, `done` last)."""
    session = f"golden-{turn}-{uuid.uuid4().hex[:8]}"
    reply = live_request(golden_gateway, "POST", f"/api/sessions/{session}/chat/stream", {"message": PROMPTS[turn]})
    assert_sse_head(reply)
    check_golden(f"sessions-{turn}", reply.raw.replace(session.encode(), b"golden-session"))


def test_keyed_chat_replay_is_the_same_bytes(golden_gateway: LiveGateway) -> None:
    """§5.3: an exact keyed retry of a settled chat stream renders the recorded turn again: identical bytes,
    ids and `created` included, with Idempotency-Replayed: true."""
    key = {"Idempotency-Key": f"golden-{uuid.uuid4().hex}"}
    first = live_request(golden_gateway, "POST", CHAT_PATH, chat_body("use tool"), key)
    replay = live_request(golden_gateway, "POST", CHAT_PATH, chat_body("use tool"), key)
    assert_sse_head(first)
    assert_sse_head(replay)
    assert replay.headers.get("Idempotency-Replayed") == "true"
    assert replay.raw == first.raw
    check_golden("chat-use-tool", first.raw)


def test_normalise_numbers_ids_per_prefix_in_order_of_first_appearance() -> None:
    raw = (
        b'data: {"id":"chatcmpl-' + b"a" * 32 + b'","created":1796014068,"x":"call_' + b"1" * 24 + b'"}\n\n'
        b'data: {"id":"rs_'
        + b"b" * 24
        + b'","item":"rs_'
        + b"c" * 24
        + b'","again":"rs_'
        + b"b" * 24
        + b'","duration_ms":204,"created_at":17}\n\n'
        b'id: 3\ndata: {"run_id":"run_'
        + b"d" * 32
        + b'","ts":1796014553.56,"duration":0.204,"delta":"\\"ts\\":1.5"}\n\n'
    )
    assert normalise(raw) == (
        b'data: {"id":"chatcmpl-<1>","created":0,"x":"call_<1>"}\n\n'
        b'data: {"id":"rs_<1>","item":"rs_<2>","again":"rs_<1>","duration_ms":0,"created_at":0}\n\n'
        b'id: 3\ndata: {"run_id":"run_<1>","ts":0.0,"duration":0.0,"delta":"\\"ts\\":1.5"}\n\n'
    )
