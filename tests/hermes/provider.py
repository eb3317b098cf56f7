"""A scripted OpenAI-compatible model provider on 127.0.0.1 for the real Hermes agent to call.

`POST /v1/chat/completions` plays a scenario chosen by a tag in the conversation's last user message, else its
first (`scenario_of`):

- (no tag) **tool**: first call streams `reasoning_content` deltas and a `terminal` tool call
  `echo tool-ok`; the call after the tool result streams reasoning, then an answer quoting the tool
  output it received — so `tool-ok` reaches the answer only if the agent really ran the command.
- `[always-tool]`: every call that offers tools asks for another `terminal` call; a call without tools
  (Hermes' closing summary after the iteration budget) answers with `SUMMARY_TEXT`.
- `[slow-stream]`: streams a reasoning delta every 0.1 s for 30 s (a long thinking phase).
- `[slow-tool]`: asks for `terminal` `sleep 30`; a later call would answer `slept`.
- `[danger] <path>`: asks for `terminal` `rm -rf <path>` (Hermes' dangerous-command guard flags it); the call
  after the tool result answers `DANGER_DONE` + the tool output.
- `[danger-think] <path>`: `[danger]`, its tool call after `reasoning_content` deltas (as a thinking model streams:
  what a chat client keeps of them, bench/owui_turn_taking_check.py).
- `[bench]`: no tool; 10 reasoning deltas, then 200 answer deltas, 5 ms apart (bench/side_by_side.py).
- `[bench-tool]`: a turn with a tool, as bench/warm.py's conversations: 3 reasoning deltas and a `terminal` call
  `echo bench-ok`; the call after the tool result streams the `[bench]` reply (10 reasoning, 200 answer deltas).
- `[bench-zero]`: no tool, no delay: 10 reasoning deltas, then 20 answer deltas, written back to back
  (bench/warm.py's first-reasoning-byte overhead).
- `[clarify]`: asks Hermes' `clarify` tool `CLARIFY_QUESTION` with `CLARIFY_CHOICES`; the call after its result
  answers `CLARIFIED` + the user's response the tool returned.
- `[client-tool]`: when the request offers the client's `CLIENT_TOOL`, calls it with `CLIENT_TOOL_ARGS`; the call
  after its result answers `CLIENT_TOOL_DONE` + the result; without it, answers `NO_CLIENT_TOOL`.
- `[compact]`: answers `COMPACT_SUMMARY` (Hermes' context compressor summarising a conversation that has the tag:
  POST /v1/responses/compact); `[compact-fail]`: answers HTTP 400, as a provider refusing the summary call.

Every request is recorded in `requests` (with whether the client dropped the stream), so tests can
assert what the agent did and that nothing was called after an interrupt. Runs in its own thread and
event loop, so synchronous tests (the `openai` client) and the gateway subprocess can both use it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

MODEL = "test-model"
TOOL_COMMAND = "echo tool-ok"
REASONING_FIRST = ("I should run ", "the command ", "first.")
REASONING_AFTER = ("The tool ", "answered.")
ANSWER_PREFIX = "The terminal printed: "
SUMMARY_TEXT = "Summary: I kept running commands and ran out of iterations."
TAGS = (
    "always-tool",
    "slow-stream",
    "slow-tool",
    "danger",
    "danger-think",
    "bench",
    "bench-tool",
    "bench-zero",
    "clarify",
    "client-tool",
    "compact-fail",
    "compact",
)
DANGER_DONE = "Dangerous command finished: "
BENCH_DELTAS = 200
CLARIFY_QUESTION = "Which colour should the report use?"
CLARIFY_CHOICES = ("red", "blue")
CLARIFIED = "Clarified: "
CLIENT_TOOL = "get_weather"
CLIENT_TOOL_ARGS = {"city": "Paris"}
CLIENT_TOOL_DONE = "The client's tool said: "
NO_CLIENT_TOOL = "No client tool offered."
COMPACT_SUMMARY = "## Goal\nThe user keeps the launch word: heliotrope."


@dataclass
class Recorded:
    """One request the provider received."""

    scenario: str
    messages: list[dict[str, Any]]
    tools: list[str]
    stream: bool
    body: dict[str, Any]
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    aborted: bool = False  # the client closed the connection before the response was complete

    @property
    def last_role(self) -> str:
        return str(self.messages[-1].get("role")) if self.messages else ""


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def scenario_of(messages: list[dict[str, Any]]) -> str:
    """The tag of the conversation's last user message, else of its first (a later turn of a conversation may ask
    for another behaviour; an untagged follow-up keeps the opening's), else `tool`."""
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    for text in (users[-1:] + users[:1]) if users else []:
        for tag in TAGS:
            if f"[{tag}]" in text:
                return tag
    return "tool"


def tool_output(messages: list[dict[str, Any]]) -> str:
    """The `output` of the last tool result in the conversation (Hermes' terminal result is JSON)."""
    for message in reversed(messages):
        if message.get("role") == "tool":
            content = _text(message.get("content"))
            try:
                data = json.loads(content)
            except ValueError:
                return content
            return str(data.get("output", content)) if isinstance(data, dict) else content
    return ""


def last_tool_result(messages: list[dict[str, Any]]) -> str:
    """The content of the last tool result in the conversation, as the agent sent it."""
    return next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "tool"), "")


def turn_requests(provider: ScriptedProvider, marker: str) -> list[Recorded]:
    """The requests of the turn whose user message contains `marker` (the requests after it in the conversation
    carry it too, as history: the turn's own are those whose last user message is it), in arrival order."""
    return [
        r
        for r in provider.calls()
        if marker in _text(next((m.get("content") for m in reversed(r.messages) if m.get("role") == "user"), ""))
    ]


@dataclass
class Reply:
    """What one call answers: reasoning pieces, answer pieces, tool calls, and pacing."""

    reasoning: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    tool_calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()
    error: int = 0  # an HTTP error status instead of a completion
    delay: float = 0.01
    repeat_reasoning_for: float = 0.0  # keep streaming reasoning this long (slow-stream)


def plan(record: Recorded, count: int) -> Reply:
    """The scripted reply to the `count`-th request (1-based) of a conversation in `record.scenario`."""
    messages = record.messages
    after_tool = record.last_role == "tool"
    if record.scenario == "compact":
        return Reply(text=(COMPACT_SUMMARY,))
    if record.scenario == "compact-fail":
        return Reply(error=400)
    if record.scenario == "always-tool":
        if record.tools:
            return Reply(
                reasoning=("Another command.",),
                tool_calls=((f"call_loop{count:04d}", "terminal", {"command": f"echo loop-{count}"}),),
            )
        return Reply(text=(SUMMARY_TEXT,))
    if record.scenario == "slow-stream":
        return Reply(reasoning=("Thinking slowly. ",), repeat_reasoning_for=30.0, delay=0.1, text=("late answer",))
    if record.scenario == "bench" or (record.scenario == "bench-tool" and after_tool):
        return Reply(
            reasoning=tuple(f"step {i}. " for i in range(10)),
            text=tuple(f"w{i} " for i in range(BENCH_DELTAS)),
            delay=0.005,
        )
    if record.scenario == "bench-tool":
        return Reply(
            reasoning=REASONING_FIRST,
            tool_calls=((f"call_bench{count:04d}", "terminal", {"command": "echo bench-ok"}),),
            delay=0.005,
        )
    if record.scenario == "bench-zero":
        return Reply(
            reasoning=tuple(f"step {i}. " for i in range(10)), text=tuple(f"w{i} " for i in range(20)), delay=0.0
        )
    if record.scenario in ("danger", "danger-think"):
        if after_tool:
            return Reply(text=(DANGER_DONE + tool_output(messages).strip(),))
        first_user = next(_text(m.get("content")) for m in messages if m.get("role") == "user")
        target = first_user.split(f"[{record.scenario}]", 1)[1].split()[0]
        return Reply(
            reasoning=REASONING_FIRST if record.scenario == "danger-think" else (),
            tool_calls=((f"call_danger{count:04d}", "terminal", {"command": f"rm -rf {target}"}),),
        )
    if record.scenario == "clarify":
        if after_tool:
            result = json.loads(last_tool_result(messages))
            return Reply(text=(CLARIFIED + str(result.get("user_response")),))
        question = {"question": CLARIFY_QUESTION, "choices": list(CLARIFY_CHOICES)}
        return Reply(tool_calls=((f"call_clarify{count:04d}", "clarify", question),))
    if record.scenario == "client-tool":
        if after_tool:
            return Reply(text=(CLIENT_TOOL_DONE + last_tool_result(messages),))
        if CLIENT_TOOL not in record.tools:
            return Reply(text=(NO_CLIENT_TOOL,))
        return Reply(tool_calls=((f"call_client{count:04d}", CLIENT_TOOL, CLIENT_TOOL_ARGS),))
    if record.scenario == "slow-tool":
        if after_tool:
            return Reply(text=("slept",))
        return Reply(
            reasoning=("A long command.",), tool_calls=((f"call_slow{count:04d}", "terminal", {"command": "sleep 30"}),)
        )
    if after_tool:
        output = tool_output(messages).strip()
        answer = ANSWER_PREFIX + output
        return Reply(reasoning=REASONING_AFTER, text=(answer[:10], answer[10:]))
    return Reply(
        reasoning=REASONING_FIRST, tool_calls=((f"call_tool{count:04d}", "terminal", {"command": TOOL_COMMAND}),)
    )


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-provider",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


USAGE = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}


class ScriptedProvider:
    """The provider app, served from a background thread on 127.0.0.1:<free port>."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedProvider:
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            app = web.Application()
            app.router.add_get("/v1/models", self._models)
            app.router.add_post("/v1/chat/completions", self._chat)
            self._runner = web.AppRunner(app, handler_cancellation=True)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port = self._runner.addresses[0][1]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, name="scripted-provider", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("scripted provider did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> ScriptedProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- inspection -------------------------------------------------------------------------------
    def calls(self, scenario: str | None = None, marker: str | None = None) -> list[Recorded]:
        """Recorded requests, optionally of one scenario and/or whose first user message contains `marker`."""
        with self._lock:
            found = list(self.requests)
        if scenario is not None:
            found = [r for r in found if r.scenario == scenario]
        if marker is not None:
            found = [
                r
                for r in found
                if marker in next((_text(m.get("content")) for m in r.messages if m.get("role") == "user"), "")
            ]
        return found

    # -- handlers ---------------------------------------------------------------------------------
    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "tests"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        messages = body.get("messages") or []
        record = Recorded(
            scenario=scenario_of(messages),
            messages=messages,
            tools=[t.get("function", {}).get("name", "") for t in body.get("tools") or []],
            stream=bool(body.get("stream")),
            body={k: v for k, v in body.items() if k not in ("messages", "tools")},
        )
        with self._lock:
            self.requests.append(record)
            count = sum(1 for r in self.requests if r.scenario == record.scenario)
        reply = plan(record, count)
        if reply.error:
            record.ended = time.monotonic()
            error = {"message": "scripted refusal", "type": "invalid_request_error", "code": "refused"}
            return web.json_response({"error": error}, status=reply.error)
        try:
            if not record.stream:
                return self._whole(reply)
            return await self._stream(request, reply)
        except (asyncio.CancelledError, ConnectionResetError):
            record.aborted = True
            raise
        finally:
            record.ended = time.monotonic()

    def _whole(self, reply: Reply) -> web.Response:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(reply.text) or None}
        if reply.reasoning:
            message["reasoning_content"] = "".join(reply.reasoning)
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, n, a in reply.tool_calls
            ]
        return web.json_response(
            {
                "id": "chatcmpl-provider",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": MODEL,
                "choices": [
                    {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
                ],
                "usage": USAGE,
            }
        )

    async def _stream(self, request: web.Request, reply: Reply) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        await response.write(_chunk({"role": "assistant", "content": ""}))
        for piece in reply.reasoning:
            await response.write(_chunk({"reasoning_content": piece}))
            await asyncio.sleep(reply.delay)
        deadline = time.monotonic() + reply.repeat_reasoning_for
        while time.monotonic() < deadline:
            await response.write(_chunk({"reasoning_content": reply.reasoning[-1]}))
            await asyncio.sleep(reply.delay)
        for piece in reply.text:
            await response.write(_chunk({"content": piece}))
            await asyncio.sleep(reply.delay)
        for index, (call_id, name, args) in enumerate(reply.tool_calls):
            arguments = json.dumps(args)
            await response.write(
                _chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": arguments[:6]},
                            }
                        ]
                    }
                )
            )
            await response.write(_chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[6:]}}]}))
        await response.write(_chunk({}, "tool_calls" if reply.tool_calls else "stop"))
        usage = {
            "id": "chatcmpl-provider",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": MODEL,
            "choices": [],
            "usage": USAGE,
        }
        await response.write(b"data: " + json.dumps(usage).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
