"""The `answers` part (issue 22, WIRE.md §15): answering request sent → the resumed delivery, on the scripted runtime.

Each round, one at a time, for every variant: a streaming chat whose turn suspends at once (a `question` or an
`approval` step first, or — tools declared — the default turn's call of the client's tool), read to the end of its
delivery; then the answering request, timed from the moment it is sent to the response head and to the first byte
of the read holding its first *content* record (a non-empty `delta.content`). After the answer the script emits
text at once (chunk delay 0), so the runtime's own work is ~0 and the figure is the gateway's. Variants:

- `question_session`, `approval_session`, `client_tool_session`: the conversation named by `X-Hermes-Session-Id`,
  the answer sent as just the next message (`main`, `/approve`) — for tool results, the call and its `role: "tool"`
  message after the opening (a chat request cannot start with tool results);
- `question_history`, `approval_history`, `client_tool_history`: stateless, as Open WebUI (and agent SDKs for tool
  results) send it: the whole history resent, the answer last, no session header.

On the runs surface (`runs_question`, `runs_approval`): a run (`POST /v1/runs`) that suspends at once, its events
stream (`GET /v1/runs/{id}/events`) open; then `POST /v1/runs/{id}/answer` or `/approval` (`once`), timed to its JSON
reply and to the first `message.delta` record on the events stream (compared with `new_turn_history`).

The same-run baselines are new turns whose first text is as immediate (the script's default turn, `ok`):
`new_turn_history` (stateless, one user message) and `new_turn_session` (a new session each). Per variant p50/p99
of both times, and the first-content p50/p99 minus and over its baseline's (session variants against
`new_turn_session`, the others against `new_turn_history`). Rounds interleave the variants, so drift hits all alike.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from .common import AUTH, Server, p50_p99

TARGET_MS = 25.0  # issue 22: answer → first resumed byte within 25 ms over the runtime's own work
QUESTION_PROMPT = "ask"  # runtime.py: a question at once, then "Branch {answer}."
APPROVAL_PROMPT = "approve"  # runtime.py: an approval at once, then "Done."
TOOL_PROMPT = "weather"  # no script turn matches: the default turn calls the declared tool
NEW_TURN_PROMPT = "hello"  # the default turn: "ok"
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
ANSWERS = {"question": "main", "approval": "/approve"}
RESUMED = {"question": "Branch main.", "approval": "Done.", "client_tool": "get_weather returned: sunny"}
VARIANTS = (
    "question_session",
    "question_history",
    "approval_session",
    "approval_history",
    "client_tool_session",
    "client_tool_history",
)
RUNS = ("runs_question", "runs_approval")
BASELINES = ("new_turn_session", "new_turn_history")


@dataclass
class Delivery:
    """One streamed chat delivery; times in ms from the request being sent."""

    sent: float = 0.0  # time.monotonic() when the request left (the clock of the scripted provider's records)
    head_ms: float = 0.0
    first_content_ms: float | None = None
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    run_id: str = ""


async def stream(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Delivery:
    """POST a streaming chat and read it to `[DONE]`; the first content record is timed at the read that brought it."""
    out = Delivery()
    parts: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    out.sent, started = time.monotonic(), time.perf_counter()
    async with session.post(
        url + "/v1/chat/completions", json={**body, "stream": True}, headers={**AUTH, **(headers or {})}
    ) as response:
        out.head_ms = (time.perf_counter() - started) * 1000
        assert response.status == 200, await response.text()
        out.run_id = response.headers.get("X-Hermes-Run-Id", "")
        pending = b""
        async for piece in response.content.iter_any():
            arrived = time.perf_counter()
            pending += piece
            *records, pending = pending.split(b"\n\n")
            for record in records:
                line = next((x for x in record.split(b"\n") if x.startswith(b"data: {")), None)
                if line is None:
                    continue
                for choice in json.loads(line[6:]).get("choices") or ():
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        parts.append(delta["content"])
                        if out.first_content_ms is None:
                            out.first_content_ms = (arrived - started) * 1000
                    for call in delta.get("tool_calls") or ():
                        whole = calls.setdefault(call["index"], {"arguments": ""})
                        whole.update({k: call[k] for k in ("id",) if k in call})
                        function = call.get("function") or {}
                        whole.setdefault("name", function.get("name"))
                        whole["arguments"] += function.get("arguments") or ""
                    out.finish_reason = choice.get("finish_reason") or out.finish_reason
    out.content = "".join(parts)
    out.tool_calls = [calls[i] for i in sorted(calls)]
    return out


def _assistant_calls(calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls
        ],
    }


async def answered(
    session: aiohttp.ClientSession,
    url: str,
    variant: str,
    opening_text: str,
    answer_text: str,
    tools: list[dict[str, Any]] | None = None,
    session_id: str = "",
) -> tuple[Delivery, Delivery]:
    """One round of `variant` (`<kind>_<addressing>`): the delivery of `opening_text` that suspends, then the
    answering one (timed): `answer_text` as the next message, or as the output of every tool call (client_tool).
    `_session` variants name the conversation `session_id` (a new one when empty)."""
    kind, _, addressing = variant.rpartition("_")
    session_id = session_id or f"answers-{uuid.uuid4().hex[:12]}"
    headers = {"X-Hermes-Session-Id": session_id} if addressing == "session" else {}
    extra = {"tools": tools} if tools else {}
    opening = {"role": "user", "content": opening_text}
    first = await stream(session, url, {"messages": [opening], **extra}, headers)
    if kind == "client_tool":
        assert first.finish_reason == "tool_calls" and first.tool_calls, (variant, first)
        results = [{"role": "tool", "tool_call_id": c["id"], "content": answer_text} for c in first.tool_calls]
        resent = [opening, _assistant_calls(first.tool_calls), *results]
    else:
        assert first.finish_reason == "stop" and first.content, (variant, first)
        results = [{"role": "user", "content": answer_text}]
        resent = [opening, {"role": "assistant", "content": first.content}, *results]
    # a chat request must end with a user message or with tool results after their call: tool results are always
    # sent with the assistant's call before them (the session variant names the conversation as well)
    brief = addressing == "session" and kind != "client_tool"
    second = await stream(session, url, {"messages": results if brief else resent, **extra}, headers)
    assert second.run_id == first.run_id, (variant, first.run_id, second.run_id)  # the same turn, resumed
    assert second.first_content_ms is not None and second.finish_reason == "stop", (variant, second)
    return first, second


async def scripted_round(session: aiohttp.ClientSession, url: str, variant: str) -> Delivery:
    """One round of `variant` on the bench script; the answering delivery."""
    unique = uuid.uuid4().hex[:12]  # every conversation its own: a resent history never matches an earlier round's
    kind = variant.rpartition("_")[0]
    if kind == "client_tool":
        _, second = await answered(session, url, variant, f"{TOOL_PROMPT} {unique}", "sunny", [TOOL])
    else:
        prompt = QUESTION_PROMPT if kind == "question" else APPROVAL_PROMPT
        _, second = await answered(session, url, variant, f"{prompt} {unique}", ANSWERS[kind])
    assert second.content == RESUMED[kind], (variant, second.content)  # the turn went on from where it stopped
    return second


async def run_round(session: aiohttp.ClientSession, url: str, kind: str) -> tuple[float, float]:
    """A run (`POST /v1/runs`) that suspends at once, its events followed; then `POST /v1/runs/{id}/answer` (question)
    or `/approval` (approval): ms from that request sent to its reply, and to the first `message.delta` record."""
    prompt = QUESTION_PROMPT if kind == "question" else APPROVAL_PROMPT
    async with session.post(url + "/v1/runs", json={"input": f"{prompt} {uuid.uuid4().hex[:12]}"}, headers=AUTH) as r:
        assert r.status == 202, await r.text()
        run_id = (await r.json())["run_id"]
    asked = b'"question.request"' if kind == "question" else b'"approval.request"'
    path, body = ("answer", {"text": "main"}) if kind == "question" else ("approval", {"choice": "once"})
    async with session.get(f"{url}/v1/runs/{run_id}/events", headers=AUTH) as events:
        assert events.status == 200, await events.text()
        seen = b""
        while asked not in seen:
            seen += await events.content.readany()
        started = time.perf_counter()
        async with session.post(f"{url}/v1/runs/{run_id}/{path}", json=body, headers=AUTH) as reply:
            replied = (time.perf_counter() - started) * 1000
            assert reply.status == 200, await reply.text()
        seen = b""
        while b'"message.delta"' not in seen:
            piece = await events.content.readany()
            assert piece, "the run's events ended without its answer"
            seen += piece
        first = (time.perf_counter() - started) * 1000
        await events.read()  # to the end of the run
    return replied, first


async def new_turn(session: aiohttp.ClientSession, url: str, addressing: str) -> Delivery:
    headers = {"X-Hermes-Session-Id": f"answers-new-{uuid.uuid4().hex[:12]}"} if addressing == "session" else {}
    message = {"role": "user", "content": f"{NEW_TURN_PROMPT} {uuid.uuid4().hex[:12]}"}
    delivery = await stream(session, url, {"messages": [message]}, headers)
    assert delivery.content == "ok" and delivery.first_content_ms is not None, delivery
    return delivery


async def answers(session: aiohttp.ClientSession, server: Server, size: dict[str, Any]) -> dict[str, Any]:
    """`size["answers_rounds"]` rounds of every variant and baseline, after `answers_warmup` unmeasured ones."""
    head: dict[str, list[float]] = {name: [] for name in (*VARIANTS, *RUNS, *BASELINES)}
    content: dict[str, list[float]] = {name: [] for name in (*VARIANTS, *RUNS, *BASELINES)}
    warmup, rounds = size["answers_warmup"], size["answers_rounds"]
    for n in range(warmup + rounds):
        for variant in VARIANTS:
            second = await scripted_round(session, server.url, variant)
            if n >= warmup:
                head[variant].append(second.head_ms)
                content[variant].append(second.first_content_ms or 0.0)
        for kind in ("question", "approval"):
            replied, first = await run_round(session, server.url, kind)
            if n >= warmup:
                head[f"runs_{kind}"].append(replied)
                content[f"runs_{kind}"].append(first)
        for baseline in BASELINES:
            delivery = await new_turn(session, server.url, baseline.rpartition("_")[2])
            if n >= warmup:
                head[baseline].append(delivery.head_ms)
                content[baseline].append(delivery.first_content_ms or 0.0)
    out: dict[str, Any] = {"rounds": rounds, "target_ms": TARGET_MS}
    for name in (*VARIANTS, *RUNS, *BASELINES):
        # a run's answer is a JSON request of its own: its whole reply, where a chat answer's delivery has a head
        out[name] = {"reply" if name in RUNS else "head": p50_p99(head[name]), "first_content": p50_p99(content[name])}
    for variant in (*VARIANTS, *RUNS):
        base = out["new_turn_" + ("history" if variant in RUNS else variant.rpartition("_")[2])]["first_content"]
        mine = out[variant]["first_content"]
        out[variant]["over_baseline"] = {q: round(mine[q] - base[q], 3) for q in ("p50_ms", "p99_ms")}
        out[variant]["ratio"] = {q: round(mine[q] / base[q], 3) for q in ("p50_ms", "p99_ms")}
    return out


def report(result: dict[str, Any]) -> list[str]:
    lines = []
    for name in (*VARIANTS, *RUNS, *BASELINES):
        figures = result[name]
        label = "reply" if name in RUNS else "head"
        line = (
            f"answers.{name:20s} first content p50 {figures['first_content']['p50_ms']} / p99 "
            f"{figures['first_content']['p99_ms']} ms, {label} p50 {figures[label]['p50_ms']} / p99 "
            f"{figures[label]['p99_ms']} ms"
        )
        if "over_baseline" in figures:
            over, ratio = figures["over_baseline"], figures["ratio"]
            verdict = "met" if max(over.values()) <= TARGET_MS else "MISSED"
            line += (
                f"; over a new turn p50 {over['p50_ms']} / p99 {over['p99_ms']} ms (x{ratio['p50_ms']} / "
                f"x{ratio['p99_ms']}; target <= {TARGET_MS} ms over: {verdict})"
            )
        lines.append(line + f" ({result['rounds']} rounds)")
    return lines
