"""The `answers` part on the hermes runtime (issue 22): `.venv-hermes/bin/python -m bench.answers_hermes [--rounds 20]`.

Needs hermes-agent (the venv `./test --hermes` builds). One plugin gateway (`agent.runtime: hermes`, real `AIAgent`)
against the scripted provider of tests/hermes/provider.py on loopback, Hermes' `clarify` tool enabled and manual
approvals. Each round, one at a time, for every variant (bench/answers.py's rounds, with the provider's scenarios):

- `question_*`: `[clarify]` — the agent asks Hermes' `clarify` question, the delivery ends with it; the answer `red`;
- `approval_*`: `[danger] <dir>` — the agent runs `rm -rf <dir>`, Hermes' guard asks, the delivery ends with the
  approval question; the answer `/approve` (the command then runs: Hermes' terminal tool is part of the runtime's work);
- `client_tool_*`: `[client-tool]` with the client's `get_weather` declared — the delivery ends with its `tool_calls`;
  the answer is the `role: "tool"` message;

each `_session` (`X-Hermes-Session-Id`, the answer as the next message) and `_history` (stateless, the whole history
resent). After the answer the agent makes one provider call, which answers text at once. Per answering request:
answer sent → first content byte through the plugin, minus the same client's first-content latency straight from the
provider replaying the messages the agent sent after the answer (bench/warm.py's first-reasoning method): the
overhead; also answer sent → that provider request arriving. Same-run baseline: a new turn of the conversation just
answered (the warm agent), `[bench-zero]` (10 reasoning, 20 answer deltas, no delay), measured the same way, after
each `question_session` round (`new_turn_session`) and each `question_history` round (`new_turn_history`, the history
resent). p50/p99 of each. Results go to the `answers_hermes` section of bench/results.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from tests.hermes.provider import CLIENT_TOOL, ScriptedProvider, turn_requests

from .answers import TARGET_MS, VARIANTS, Delivery, answered, stream
from .common import AUTH, ROOT, percentile
from .gateways import gateway, stream_chat

SECTIONS = {"platform_toolsets": {"api_server": ["terminal", "clarify"]}, "approvals": {"mode": "manual"}}
TOOL = {
    "type": "function",
    "function": {
        "name": CLIENT_TOOL,
        "description": "The weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
BASELINES = ("new_turn_session", "new_turn_history")
SERIES = ("plugin", "provider", "overhead", "to_provider")


def _stats(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 50), 2), "p99_ms": round(percentile(values, 99), 2)}


async def _agents(session: aiohttp.ClientSession, url: str) -> dict[str, int]:
    """Agent cache hits and misses so far (/health/detailed): a miss is a turn that built a fresh agent."""
    async with session.get(url + "/health/detailed", headers=AUTH) as reply:
        agents = (await reply.json())["api_server"]["agents"] or {}
    return {name: int(agents.get(name, 0)) for name in ("hits", "misses")}


async def _direct_first_content(session: aiohttp.ClientSession, provider: ScriptedProvider, messages: Any) -> float:
    """ms from sending `messages` straight to the provider to its first content delta (the runtime's own wait)."""
    direct = await stream_chat(session, f"http://127.0.0.1:{provider.port}", messages)
    assert direct.first_content is not None, direct
    return direct.first_content * 1000


async def _measure(
    session: aiohttp.ClientSession, provider: ScriptedProvider, delivery: Delivery, marker: str, which: int
) -> dict[str, float]:
    """The figures of one timed delivery: `which` picks the provider request of the turn to replay (-1: the one after
    the answer; 0: a new turn's first)."""
    request = turn_requests(provider, marker)[which]
    assert delivery.first_content_ms is not None
    direct = await _direct_first_content(session, provider, request.messages)
    return {
        "plugin": delivery.first_content_ms,
        "provider": direct,
        "overhead": delivery.first_content_ms - direct,
        "to_provider": (request.started - delivery.sent) * 1000,
    }


async def _round(
    session: aiohttp.ClientSession, url: str, provider: ScriptedProvider, variant: str, work: Path, run: str, n: int
) -> tuple[dict[str, float], dict[str, float] | None]:
    """One round of `variant`: the answer's figures, and for the question variants a following new turn's."""
    marker = f"<{run}-{variant}-{n:03d}>"
    kind, _, addressing = variant.rpartition("_")
    session_id = f"answers-{run}-{variant}-{n:03d}"
    if kind == "question":
        opening, answer = f"[clarify] {marker}", "red"
        first, second = await answered(session, url, variant, opening, answer, session_id=session_id)
    elif kind == "approval":
        target = work / f"victim-{variant}-{n:03d}"
        target.mkdir()
        first, second = await answered(
            session, url, variant, f"[danger] {target} {marker}", "/approve", session_id=session_id
        )
        assert not target.exists(), "approved: the command ran"
    else:
        first, second = await answered(
            session, url, variant, f"[client-tool] {marker}", "sunny", [TOOL], session_id=session_id
        )
    figures = await _measure(session, provider, second, marker, -1)
    if kind != "question":
        return figures, None
    # the baseline: the conversation's next turn, on the agent that just answered (a new turn, not a resumed one)
    follow = f"<{run}-{variant}-{n:03d}-next>"
    message = {"role": "user", "content": f"[bench-zero] next {follow}"}
    if addressing == "session":
        baseline = await stream(session, url, {"messages": [message]}, {"X-Hermes-Session-Id": session_id})
    else:
        history = [
            {"role": "user", "content": opening},
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": answer},
            {"role": "assistant", "content": second.content},
            message,
        ]
        baseline = await stream(session, url, {"messages": history})
    return figures, await _measure(session, provider, baseline, follow, 0)


async def run(rounds: int, warmup: int) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {
        name: {series: [] for series in SERIES} for name in (*VARIANTS, *BASELINES)
    }
    run_id = uuid.uuid4().hex[:6]
    with ScriptedProvider() as provider, tempfile.TemporaryDirectory(prefix="hermes-answers-") as tmp:
        root = Path(tmp)
        work = root / "victims"
        work.mkdir()
        async with (
            gateway(provider, root, True, "plugin-answers", sections=SECTIONS) as gw,
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session,
        ):
            agents: dict[str, int] = {}
            for n in range(warmup + rounds):
                for variant in VARIANTS:
                    if n == warmup and not agents:
                        agents = await _agents(session, gw.url)
                    figures, baseline = await _round(session, gw.url, provider, variant, work, run_id, n)
                    if n < warmup:
                        continue
                    for series, value in figures.items():
                        samples[variant][series].append(value)
                    if baseline is not None:
                        for series, value in baseline.items():
                            samples["new_turn_" + variant.rpartition("_")[2]][series].append(value)
            after = await _agents(session, gw.url)
    out: dict[str, Any] = {"rounds": rounds, "target_ms": TARGET_MS}
    out["agents"] = {name: after[name] - agents.get(name, 0) for name in ("hits", "misses")}
    for name, series in samples.items():
        out[name] = {key: _stats(values) for key, values in series.items()}
    for variant in VARIANTS:
        base = out["new_turn_" + variant.rpartition("_")[2]]["overhead"]
        mine = out[variant]["overhead"]
        out[variant]["overhead_over_new_turn"] = {q: round(mine[q] - base[q], 2) for q in ("p50_ms", "p99_ms")}
    return out


def report(result: dict[str, Any]) -> list[str]:
    lines = []
    for name in (*VARIANTS, *BASELINES):
        f = result[name]
        line = (
            f"answers_hermes.{name:20s} overhead p50 {f['overhead']['p50_ms']} / p99 {f['overhead']['p99_ms']} ms "
            f"(plugin first content p50 {f['plugin']['p50_ms']} / p99 {f['plugin']['p99_ms']} ms, provider p50 "
            f"{f['provider']['p50_ms']} ms, sent -> provider request p50 {f['to_provider']['p50_ms']} ms)"
        )
        if "overhead_over_new_turn" in f:
            over = f["overhead_over_new_turn"]
            verdict = "met" if max(f["overhead"].values()) <= TARGET_MS else "MISSED"
            line += (
                f"; minus a new turn's p50 {over['p50_ms']} / p99 {over['p99_ms']} ms "
                f"(target overhead <= {TARGET_MS} ms: {verdict})"
            )
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.answers_hermes")
    parser.add_argument("--rounds", type=int, default=20, help="measured rounds of every variant")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured rounds first")
    parser.add_argument("--out", default=str(ROOT / "results.json"))
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stopped: still stop the gateway on the way out
    result = asyncio.run(run(args.rounds, args.warmup))
    for line in report(result):
        print(line, flush=True)
    path = Path(args.out)
    document = json.loads(path.read_text()) if path.exists() else {"results": {}}
    document.setdefault("results", {})["answers_hermes"] = result
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
