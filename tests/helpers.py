"""Shared test helpers: the constants tests share (paths, id patterns, the scripted runtime's answers, error
envelopes), a chat request body, the golden wire files' normalisation, the real app in-process, SSE parsing, a parsed HTTP reply, reading a stream up to a marker, the error
envelope check, bounded waits, the scripted runtime's execution log, and /metrics samples.

Every test module takes these from here instead of keeping its own copy; tests/live.py keeps what concerns a Hermes
home and the real gateway process.
"""

from __future__ import annotations

import asyncio
import gc
import http.client
import inspect
import json
import re
import socket
import time
import types
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer
from multidict import CIMultiDict, CIMultiDictProxy

import hermes_api_plugin
from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.gateway.server import ReferenceGateway, build_plugin_manager, runner_kwargs
from hermes_api_plugin.runtimes import select_runtime
from hermes_api_plugin.turns import SettledTurn, TurnRegistry
from tests.live import LiveGateway, executions

T = TypeVar("T")

JSON_TYPE = "application/json; charset=utf-8"
ERROR_KEYS = {"message", "type", "param", "code"}
# WIRE.md §1.7: the error types a server may put into the envelope.
ERROR_TYPES = {
    "invalid_request_error",
    "gateway_auth_error",
    "not_found_error",
    "conflict_error",
    "rate_limit_error",
    "server_error",
}
# WIRE.md §4.5: the keys of every Response object, of its usage, and the shape of each output item's id.
RESPONSE_KEYS = {
    "id",
    "object",
    "created_at",
    "status",
    "background",
    "model",
    "output",
    "parallel_tool_calls",
    "tool_choice",
    "tools",
    "instructions",
    "metadata",
    "error",
    "incomplete_details",
    "previous_response_id",
    "store",
    "usage",
    # WIRE.md §16: what the Open Responses ResponseResource requires besides
    "completed_at",
    "truncation",
    "text",
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "top_logprobs",
    "reasoning",
    "max_output_tokens",
    "max_tool_calls",
    "service_tier",
    "safety_identifier",
    "prompt_cache_key",
    "user",
}
USAGE_KEYS = {"input_tokens", "output_tokens", "total_tokens", "input_tokens_details", "output_tokens_details"}
ITEM_ID = {
    "reasoning": re.compile(r"^rs_[0-9a-f]{24}$"),
    "message": re.compile(r"^msg_[0-9a-f]{24}$"),
    "function_call": re.compile(r"^fc_[0-9a-f]{24}$"),
    "function_call_output": re.compile(r"^fco_[0-9a-f]{24}$"),
    "mcp_call": re.compile(r"^mcp_[0-9a-f]{24}$"),
    "mcp_approval_request": re.compile(r"^mcpr_[0-9a-f]{24}$"),
}


# -- what tests share: paths, ids, the scripted runtime's turns, envelopes --------------------------------------------

ROOT = Path(__file__).resolve().parents[1]  # the repository
PACKAGE = Path(hermes_api_plugin.__file__).parent  # the package's folder
GOLDEN = Path(__file__).parent / "golden"  # the recorded wire of the scripted turns (tests/test_golden.py)
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
RUNS = "/v1/runs"
MODEL = "hermes-agent"  # the model name the gateway serves
RUN_ID = re.compile(r"^run_[0-9a-f]{32}$")
RESPONSE_ID = re.compile(r"^resp_[0-9a-f]{32}$")
COMPLETION_ID = re.compile(r"^chatcmpl-[0-9a-f]{32}$")
NEW_SESSION = re.compile(r"^api_(\d+)_[0-9a-f]{8}$")  # a session id the server made up (its time, then hex)
PROGRESS = "hermes.tool.progress"  # the chat stream's tool progress records (WIRE.md §3.4)
SURFACES = ("chat", "responses")  # the two OpenAI surfaces (both take Idempotency-Key), and where each is posted
PATHS = {"chat": CHAT, "responses": RESPONSES}
# Bytes that show a surface's stream is past its head and into the turn (the scripted turns reason first).
RUNNING_MARKER = {"chat": b"reasoning_content", "responses": b"response.reasoning_summary_text.delta"}
RUN_TERMINALS = ("run.completed", "run.incomplete", "run.failed", "run.cancelled")  # WIRE.md §6.3

# Sample values.
HELLO_CHAT = {"messages": [{"role": "user", "content": "hello"}]}  # the smallest chat request
PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
RUN = "run_" + "b" * 32  # a run id of the right shape
JOB_ID = "0123456789ab"  # a cron job id of Hermes' shape (12 hex digits)
STORE_PASSWORD = "s3cret-pw"  # the password in the store URLs of the masking tests

# The scripted runtime's turns (tests/scripts/chat.yaml), spelled out: a test states what a client must see.
DEFAULT_ANSWER = "Hello from the scripted runtime."
USE_TOOL_ANSWER = "Your project has README.md and src/."  # "use tool"
USE_TOOL_REASONING = "I should look at the files first.\n\nTwo entries."
# its Responses output item types, in order
USE_TOOL_TYPES = ["reasoning", "function_call", "function_call_output", "message", "reasoning", "message"]
TOOL_RESULT = "README.md\nsrc/"  # what its `ls` printed
COMMENTARY = "Listed the files."  # what it said between the tool and the answer
# A function tool a client lends the agent (WIRE.md §15), chat's shape; the scripted runtime calls it with these
# arguments (valid for its schema, §15.5) and answers "get_weather returned: <output>".
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
            "required": ["city"],
        },
    },
}
WEATHER_ARGUMENTS = '{"city":"example","unit":"c"}'
WEATHER_FLAT_TOOL = {"type": "function", **WEATHER_TOOL["function"]}  # the same tool in the Responses shape
# tests/scripts/suspend.yaml (WIRE §15): the turn that asks to approve a command, and what it says once approved
SUSPEND_SCRIPT = "suspend.yaml"
SUSPEND_ASK = "delete the build"
SUSPEND_COMMAND = "rm -rf build/"
SUSPEND_DONE = "Done with the build directory."
EXHAUST_SUMMARY = "I checked 41 of 60 log files; so far the linker step is the only failure."  # "exhaust"

# Responses: the terminal events (exactly one ends a stream, WIRE.md §4.4) and the tool items' types.
RESPONSE_TERMINALS = ("response.completed", "response.incomplete", "response.failed", "response.cancelled")
TOOL_TYPES = ("function_call", "function_call_output")

# Headers and error bodies a test compares whole (WIRE.md §1.5, §1.7, §5.3).
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
}
AUTH_FAILED = {
    "error": {
        "message": "Invalid API key (API_SERVER_KEY)",
        "type": "gateway_auth_error",
        "param": None,
        "code": "gateway_auth_failed",
    }
}
CONFLICT = {
    "error": {
        "message": "admission_conflict",
        "type": "invalid_request_error",
        "param": None,
        "code": "admission_conflict",
    }
}
UNKNOWN = {
    "error": {"message": "unknown_execution", "type": "conflict_error", "param": None, "code": "unknown_execution"}
}
RESTART_ERROR = {"code": "unknown_execution", "message": "The gateway restarted before this turn settled."}


# -- requests and the golden wire -------------------------------------------------------------------------------------


def chat_body(
    text: str | None = None, *, stream: bool = True, messages: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    """A chat completion request: one user message `text`, or the given `messages`."""
    if messages is None:
        messages = [{"role": "user", "content": text}]
    return {"model": MODEL, "stream": stream, "messages": messages, **extra}


_IDS = re.compile(
    r"\b(chatcmpl-[0-9a-f]{32}|(?:resp|run)_[0-9a-f]{32}|(?:rs|msg|fco|fc)_[0-9a-f]{24}|call_[0-9a-f]{24})\b"
)
_INTEGERS = re.compile(r'"(created|created_at|completed_at|duration_ms)":\d+(?=[,}])')
_FLOATS = re.compile(r'"(timestamp|ts|duration)":\d+\.\d+(?=[,}])')


def normalise(raw: bytes) -> bytes:
    """A recorded stream as its golden file holds it: generated ids replaced by per-prefix ordinals, the
    timestamps and durations zeroed."""
    seen: dict[str, str] = {}
    counters: dict[str, int] = {}

    def ordinal(match: re.Match[str]) -> str:
        value = match.group(1)
        if value not in seen:
            prefix = value[: value.index("-") + 1] if value.startswith("chatcmpl-") else value[: value.index("_") + 1]
            counters[prefix] = counters.get(prefix, 0) + 1
            seen[value] = f"{prefix}<{counters[prefix]}>"
        return seen[value]

    text = _IDS.sub(ordinal, raw.decode("utf-8"))
    text = _INTEGERS.sub(lambda m: f'"{m.group(1)}":0', text)
    return _FLOATS.sub(lambda m: f'"{m.group(1)}":0.0', text).encode("utf-8")


# -- the real app in-process ------------------------------------------------------------------------------------------


async def serve_app(aiohttp_client: Any, home: Path, environ: Mapping[str, str] | None = None) -> TestClient:
    """The real API app for a Hermes home, built through the plugin's startup hook and served on 127.0.0.1 with the
    gateway's runner settings; the client's `home` attribute names the home."""
    settings = load_settings(home, environ={"HERMES_HOME": str(home), **(environ or {})})
    pm = build_plugin_manager()
    gateway = ReferenceGateway(settings, select_runtime(settings), pm)
    pm.hook.hermes_api_gateway_startup(gateway=gateway)
    # TestServer turns handler_cancellation on itself; the other runner settings go to start_server.
    kwargs = {k: v for k, v in runner_kwargs().items() if k != "handler_cancellation"}
    server = TestServer(gateway.apps[0])
    await server.start_server(**kwargs)
    client: TestClient = await aiohttp_client(server)
    client.home = home  # type: ignore[attr-defined]
    return client


# -- SSE ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SseRecord:
    event: str | None
    data: str
    id: str | None = None

    def json(self) -> Any:
        return json.loads(self.data)


def parse_sse(raw: bytes) -> tuple[list[SseRecord], int]:
    """Records and the number of `: keepalive` comments in a complete SSE body."""
    records: list[SseRecord] = []
    keepalives = 0
    for block in raw.decode("utf-8").split("\n\n"):
        if not block:
            continue
        event = data = rid = None
        for line in block.split("\n"):
            if line.startswith(":"):
                keepalives += 1
            elif line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                assert data is None, f"two data lines in one record: {block!r}"
                data = line[6:]
            elif line.startswith("id: "):
                rid = line[4:]
            else:
                raise AssertionError(f"unexpected SSE line {line!r}")
        if data is not None:
            records.append(SseRecord(event, data, rid))
        else:
            assert event is None and rid is None, f"record without data: {block!r}"
    return records, keepalives


def complete_records(raw: bytes) -> list[SseRecord]:
    """The complete records of a partly read stream (whatever follows the last blank line is still arriving)."""
    end = raw.rfind(b"\n\n")
    return parse_sse(raw[: end + 2])[0] if end >= 0 else []


async def read_until(resp: ClientResponse, marker: bytes, raw: bytes = b"", timeout: float = 15.0) -> bytes:
    """Read an open response (appending to `raw`) until `marker` has arrived; fail if the stream ends first or the
    marker takes longer than `timeout` s. Returns everything read, which may end inside a record."""
    deadline = time.monotonic() + timeout
    while marker not in raw:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {marker!r} within {timeout} s: {raw!r}"
        piece = await asyncio.wait_for(resp.content.readany(), remaining)
        assert piece, f"stream ended before {marker!r}: {raw!r}"
        raw += piece
    return raw


# -- replies ----------------------------------------------------------------------------------------------------------


@dataclass
class Reply:
    """A whole HTTP reply: status, headers (case-insensitive) and the raw body, with views of a JSON or SSE body."""

    status: int
    headers: Mapping[str, str]
    raw: bytes

    def json(self) -> Any:
        return json.loads(self.raw)  # early-head replies may start with padding newlines (§1.11)

    @property
    def is_stream(self) -> bool:
        return self.headers.get("Content-Type", "").startswith("text/event-stream")

    @cached_property
    def _sse(self) -> tuple[list[SseRecord], int]:
        assert self.is_stream, (self.status, dict(self.headers), self.raw[:300])
        return parse_sse(self.raw)

    @property
    def records(self) -> list[SseRecord]:
        return self._sse[0]

    @property
    def keepalives(self) -> int:
        """The number of `: keepalive` comments in the stream."""
        return self._sse[1]

    @property
    def events(self) -> list[dict[str, Any]]:
        """The JSON of every record."""
        return [r.json() for r in self.records]

    @property
    def chunks(self) -> list[dict[str, Any]]:
        """Chat stream data chunks (progress records included), `[DONE]` excluded."""
        return [r.json() for r in self.records if r.data != "[DONE]"]

    @property
    def replayed(self) -> bool:
        return self.headers.get("Idempotency-Replayed") == "true"

    @property
    def run_id(self) -> str | None:
        return self.headers.get("X-Hermes-Run-Id")

    def answer(self) -> Any:
        """What the client received: every SSE record (event name + data), or the JSON body."""
        if self.is_stream:
            return [(r.event, r.data) for r in self.records]
        return self.json()

    def chat_text(self) -> tuple[str, str]:
        """(content, reasoning) concatenated over a chat stream's plain chunks (records without an event name)."""
        plain = [r.json() for r in self.records if r.event is None and r.data != "[DONE]"]
        content = "".join(c["choices"][0]["delta"].get("content", "") for c in plain)
        reasoning = "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in plain)
        return content, reasoning

    def answer_text(self, surface: str) -> str:
        """The answer text the client got: chat ("chat") → the message content, streamed or JSON; Responses
        ("responses") → the text of the final response's message items."""
        if surface == "chat":
            if self.is_stream:
                return self.chat_text()[0]
            return self.json()["choices"][0]["message"]["content"]  # type: ignore[no-any-return]
        return response_text(self.events[-1]["response"] if self.is_stream else self.json())


def response_text(response: dict[str, Any]) -> str:
    """The text of a Response object's message items."""
    return "".join(part["text"] for item in response["output"] if item["type"] == "message" for part in item["content"])


async def read_reply(resp: ClientResponse, timeout: float = 30.0) -> Reply:
    """The rest of an aiohttp response as a Reply."""
    return Reply(resp.status, resp.headers, await asyncio.wait_for(resp.read(), timeout))


async def fetch(
    client: TestClient,
    method: str,
    path: str,
    *,
    json: Any = None,
    data: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> Reply:
    """One request through the in-process test client (a `json` body, or raw `data` bytes), read to its end."""
    async with client.request(method, path, json=json, data=data, headers=dict(headers or {})) as resp:
        return await read_reply(resp, timeout)


def live_request(
    live: LiveGateway,
    method: str,
    path: str,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> Reply:
    """One request to a live gateway with its key (plain http.client), read to its end."""
    conn = http.client.HTTPConnection(live.host, live.port, timeout=timeout)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        conn.request(
            method, path, body=payload, headers={**live.headers, "Content-Type": "application/json", **(headers or {})}
        )
        resp = conn.getresponse()
        return Reply(resp.status, CIMultiDictProxy(CIMultiDict(resp.getheaders())), resp.read())
    finally:
        conn.close()


def parse_raw_reply(data: bytes) -> Reply:
    """An HTTP/1.x reply as read off a socket: status line, headers, body (a chunked body joined)."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers: CIMultiDict[str] = CIMultiDict()
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.add(name.strip(), value.strip())
    if headers.get("Transfer-Encoding", "").lower() == "chunked":
        joined, rest = b"", body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                break
            joined, rest = joined + rest[:size], rest[size + 2 :]
        body = joined
    return Reply(status, CIMultiDictProxy(headers), body)


def raw_exchange(host: str, port: int, request: bytes, timeout: float = 30.0) -> Reply:
    """Send raw bytes on a new connection (what no client library would send: undecodable header bytes, a broken
    Content-Length), read until the server closes it, and parse the reply. Send `Connection: close` to be answered
    at once; a request the parser refuses closes the connection anyway."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    data = b"".join(chunks)
    assert data, f"no reply to {request[:200]!r}"
    return parse_raw_reply(data)


async def raw_request(client: TestClient, request: bytes, timeout: float = 10.0) -> Reply:
    """`raw_exchange` for the in-process app of a test client, without blocking its event loop."""
    reader, writer = await asyncio.open_connection(client.host, client.port)
    try:
        writer.write(request)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
        await writer.wait_closed()
    assert data, f"no reply to {request[:200]!r}"
    return parse_raw_reply(data)


_ANY: Any = ...


def assert_error_envelope(
    reply: Reply,
    status: int,
    code: str | None = _ANY,
    *,
    param: str | None = _ANY,
    type: str = _ANY,
    message: str = _ANY,
) -> dict[str, Any]:
    """WIRE.md §1.7: `status`, the JSON content type and a body that is exactly
    {"error": {"message", "type", "param", "code"}} — a non-empty message, a type from §1.7, param and code null or
    strings — with the given code, param, type and message where named. Returns the inner error object."""
    assert reply.status == status, (reply.status, reply.raw[:500])
    assert reply.headers.get("Content-Type") == JSON_TYPE, reply.headers.get("Content-Type")
    body = reply.json()
    assert isinstance(body, dict) and list(body) == ["error"], body
    error = body["error"]
    assert isinstance(error, dict) and set(error) == ERROR_KEYS, error
    assert error["type"] in ERROR_TYPES, error
    assert isinstance(error["message"], str) and error["message"], error
    assert error["param"] is None or isinstance(error["param"], str), error
    assert error["code"] is None or isinstance(error["code"], str), error
    for name, want in (("code", code), ("param", param), ("type", type), ("message", message)):
        if want is not _ANY:
            assert error[name] == want, (name, error)
    return error


# -- bounded waits ----------------------------------------------------------------------------------------------------


def wait_for(
    probe: Callable[[], T],
    timeout: float = 10.0,
    *,
    until: Callable[[T], object] = bool,
    interval: float = 0.02,
    what: str = "the condition",
) -> T:
    """Call `probe` until `until(value)` holds (by default: until it returns something truthy) and return that
    value, as soon as it does; fail with the last value after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if until(value):
            return value
        assert time.monotonic() < deadline, f"{what} not reached within {timeout} s; last: {value!r}"
        time.sleep(interval)


async def wait_for_async(
    probe: Callable[[], T | Awaitable[T]],
    timeout: float = 10.0,
    *,
    until: Callable[[T], object] = bool,
    interval: float = 0.02,
    what: str = "the condition",
) -> T:
    """`wait_for` inside a running event loop: `probe` may be a coroutine function; polls without blocking the loop."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if inspect.isawaitable(value):
            value = await value
        if until(value):  # type: ignore[arg-type]
            return value  # type: ignore[return-value]
        assert time.monotonic() < deadline, f"{what} not reached within {timeout} s; last: {value!r}"
        await asyncio.sleep(interval)


# -- the scripted runtime's execution log -----------------------------------------------------------------------------


def execution_for(where: Any, text: str) -> dict[str, Any]:
    """The one execution-log line of the turn whose user input's text parts are exactly `text`; `where` is a Hermes
    home or what serves one (an in-process test client or a LiveGateway: their `home`)."""
    home: Path = getattr(where, "home", where)
    found = [
        e for e in executions(home) if [p.get("text") for p in e["input"]["content"] if p["type"] == "text"] == [text]
    ]
    assert len(found) == 1, executions(home)
    return found[0]


def history_texts(execution: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of every history message the turn was given."""
    return [(m["role"], "".join(p.get("text", "") for p in m["content"])) for m in execution["history"]]


# -- what a live gateway still holds (issue 20, defect 1) ---------------------------------------------------------------

# Values a number on the wire must survive (issue 20, defect 1): digits `str.isdigit()` accepts and `int()` refuses
# (superscript two) or reads (Arabic-Indic three, fullwidth one), more digits than `int()` takes (4 300), a sign, spaces,
# an exponent, nothing.
HOSTILE_NUMBERS = ("²", "٣", "１", "9" * 5000, "-1", "+3", " 3 ", "1e3", "")


def held(live: LiveGateway) -> dict[str, int]:
    """What `/health/detailed` says the gateway still holds: running and queued turns, admitted slots, open streams."""
    reply = live_request(live, "GET", "/health/detailed")
    assert reply.status == 200, reply.raw[:300]
    api = reply.json()["api_server"]
    return {**api["turns"], "admitted": api["slots"]["admitted"], "streams": api["streams"]["open"]}


def wait_until_nothing_held(live: LiveGateway, what: object, timeout: float = 10.0) -> None:
    """Every turn settled, every slot free and every stream closed within `timeout` s (a detached run or a stream
    whose client just left takes a few milliseconds more); fails naming `what` was sent last."""
    wait_for(
        lambda: held(live),
        timeout,
        until=lambda counts: not any(counts.values()),
        interval=0.005,
        what=f"nothing held after {what!r:.300}",
    )


def conversation(*turns: str) -> list[dict[str, Any]]:
    """Alternating user and assistant messages, as a chat client resends them."""
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": text} for i, text in enumerate(turns)]


def metric_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Every sample of a /metrics document (Prometheus text format): (name, labels, value), parsed by
    prometheus_client's own parser, so a malformed document fails the test."""
    from prometheus_client.parser import text_string_to_metric_families

    return [(s.name, dict(s.labels), s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def metric_value(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels` (0 when there are none)."""
    return sum(v for n, ls, v in samples if n == name and all(ls.get(k) == w for k, w in labels.items()))


def tracked_reachable(root: object) -> int:
    """How many objects the cyclic garbage collector tracks that `root` reaches (classes, modules and functions
    are the program's, not the value's, and are not followed): what every full collection walks for it. Collect
    first — the collector untracks tuples and dicts of atoms as it passes them."""
    return _walked(root)[0]


def collector_reads(root: object) -> int:
    """How many object references a full collection reads for what `root` reaches: every tracked object's referents,
    tracked or not (each is read to tell) — the cost of a collection, more than the count of tracked objects."""
    return _walked(root)[1]


def _walked(root: object) -> tuple[int, int]:
    seen = {id(root)}
    stack = [root]
    count = 0
    reads = 0
    while stack:
        referents = gc.get_referents(stack.pop())
        reads += len(referents)
        for child in referents:
            if id(child) in seen or not gc.is_tracked(child):
                continue
            if isinstance(child, type | types.ModuleType | types.FunctionType | types.BuiltinFunctionType):
                continue
            seen.add(id(child))
            count += 1
            stack.append(child)
    return count, reads


async def kept_record(registry: TurnRegistry, run_id: str) -> SettledTurn:
    """The registry's record of a turn once it settled and left (what runs read of it)."""
    await wait_for_async(lambda: registry.get(run_id) is None, what="the turn leaving the registry")
    kept = registry.find(run_id)
    assert isinstance(kept, SettledTurn), kept
    return kept


# -- a turn's sink ------------------------------------------------------------------------------------------------------


class RecordingSink:
    """A sink whose methods record every callback (the turn built with it reports to it)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def on_reasoning(self, text: str) -> None:
        self.calls.append(("reasoning", text))

    def on_text(self, text: str | None) -> None:
        self.calls.append(("text", text))

    def on_tool_start(self, call_id: Any, name: str, arguments: Any) -> None:
        self.calls.append(("tool_start", name, arguments))

    def on_tool_complete(self, call_id: Any, name: str, result: Any, is_error: bool) -> None:
        self.calls.append(("tool_complete", name, result, is_error))

    def on_commentary(self, text: str, already_streamed: bool) -> None:
        self.calls.append(("commentary", text))

    def on_compaction(self, summary: str) -> None:
        self.calls.append(("compaction", summary))

    def on_approval_request(self, command: str, description: str, choices: tuple[str, ...]) -> None:
        self.calls.append(("approval_request", command))

    def on_approval_response(self, choice: str) -> None:
        self.calls.append(("approval_response", choice))
