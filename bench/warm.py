"""Warm agents (issue 14), measured: `.venv-hermes/bin/python -m bench.warm [--conversations 20] [--turns 5]`.

Needs hermes-agent (the venv `./test --hermes` builds). Every gateway runs the real `AIAgent` against the scripted
provider of tests/hermes/provider.py on loopback; every comparison is made in the same run. Three parts:

1. **Agents** (plugin only, one gateway with `api_server.agents.max_cached` above everything it keeps): gateway
   CPU (utime + stime of its process, /proc/<pid>/stat) per turn, fresh (each turn on a new session, so a new
   agent) vs warm (the turns of one session), interleaved turn by turn; the provider's untagged scenario (a
   `terminal` call, then a short answer), streaming chat with `X-Hermes-Session-Id`. RSS one cached agent costs:
   the VmRSS growth over K one-turn conversations on a gateway with `max_cached` >= K, minus the same on a gateway
   with `max_cached: 0`, divided by K (both from the same point: after one warm-up turn).
2. **Open WebUI-style conversations**, plugin vs hermes-agent 0.19.0's built-in api_server: N concurrent
   conversations of T turns, each turn a streaming `/v1/chat/completions` resending the whole visible history
   (user messages and the assistant's streamed content) plus the new user message, no session header; provider
   scenario `[bench-tool]` (a `terminal` call, then 10 reasoning and 200 answer deltas 5 ms apart). Per server:
   first content byte p50/p95 over turns 2..T, wall time, turns completed, peak RSS (VmHWM), CPU, and the prefix
   stability the provider observed: for each turn t >= 2, whether its first provider request starts with exactly
   (json.dumps equality) the messages of turn t-1's last provider request.
3. **First reasoning byte overhead** (plugin, `[bench-zero]`: 10 reasoning then 20 answer deltas, no delay): N
   conversations of T turns, one at a time, Open WebUI-style; per turn, (request sent -> first `reasoning_content`
   through the plugin) minus (the same client's first-reasoning latency straight from the provider, replaying the
   messages the agent sent for that turn); p50 of turn 1 and of turns 2..T. The same on the gateway of part 1 that
   leaves hermes-agent as it ships (`first_reasoning_as_shipped`), the two taking turns conversation by conversation.

Each turn's user message carries a unique marker; the provider requests of a turn are those whose last user message
holds it (`tests.hermes.provider.turn_requests`). Also recorded: the CPU other processes used meanwhile (the machine
may be shared) and steal. Results go to the `warm` section of bench/results.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from tests.hermes.provider import ScriptedProvider, turn_requests

from .common import KEY, ROOT, percentile
from .gateways import CLOCK_TICKS, Gateway, Streamed, cpu_seconds, gateway, peak_rss_kb, rss_kb, stream_chat

SETTLE_S = 0.3  # after a turn, before reading the gateway's CPU time: the turn's last writes land in it
CPU_TARGET = 0.3  # issue 14: warm turn CPU <= 0.3 x fresh
TTFB_TARGET = 0.25  # issue 14: first content p50 of turns 2..T <= 0.25 x the built-in server's
OVERHEAD_TARGET_MS = 25.0  # issue 14: first reasoning byte overhead p50 on follow-up turns
FOLLOW_UP_TARGET_MS = 10.0  # issue 25, item 5: the same, over the provider's own
# hermes-agent as it ships: none of the plugin's savings of its per-call work (hermes/compat/tls.py, config_copies.py,
# request_bodies.py)
KINDS = ("turn1", "follow_up")
AS_SHIPPED = {"share_tls_contexts": False, "fast_config_copies": False, "fast_request_bodies": False}
Conversation = list[Streamed | None]


def _client() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=900))


def _own_cpu(children: bool = False) -> float:
    """CPU time of this process (the client and the scripted provider's thread), and of its gateways once ended."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) if children else (resource.RUSAGE_SELF,):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def _machine() -> tuple[float, float]:
    """CPU seconds the whole machine spent busy since boot (/proc/stat: all but idle, iowait and steal), and steal
    (time the hypervisor gave this VM's CPUs to someone else)."""
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(x) for x in stat.readline().split()[1:9]]
    return (sum(ticks[:7]) - ticks[3] - ticks[4]) / CLOCK_TICKS, ticks[7] / CLOCK_TICKS


def _p(values: list[float], q: float) -> float:
    return round(percentile(values, q), 1)


async def _agents(session: aiohttp.ClientSession, gw: Gateway) -> dict[str, int]:
    """`api_server.agents` of /health/detailed: cached, leased, hits, misses, evictions (all 0 when none are kept)."""
    async with session.get(gw.url + "/health/detailed", headers={"Authorization": f"Bearer {KEY}"}) as reply:
        agents = (await reply.json())["api_server"]["agents"] or {}
    return {name: int(agents.get(name, 0)) for name in ("cached", "leased", "hits", "misses", "evictions")}


async def _session_turn(session: aiohttp.ClientSession, gw: Gateway, session_id: str, text: str) -> Streamed:
    streamed = await stream_chat(
        session, gw.url, [{"role": "user", "content": text}], {"X-Hermes-Session-Id": session_id}
    )
    if not streamed.done:
        raise RuntimeError(f"turn {text!r} did not complete")
    return streamed


async def _conversations(session: aiohttp.ClientSession, gw: Gateway, count: int, tag: str) -> None:
    """`count` one-turn conversations, one at a time, each on a session of its own."""
    for n in range(count):
        await _session_turn(session, gw, f"{tag}-{n}-{uuid.uuid4().hex[:8]}", f"conversation {n} of {tag}")


# -- part 1: CPU per turn and RSS per cached agent -------------------------------------------------------


async def cpu_per_turn(session: aiohttp.ClientSession, gw: Gateway, shipped: Gateway, turns: int) -> dict[str, Any]:
    """Interleaved, on two gateways: `gw` with the plugin's defaults, `shipped` with hermes-agent as it ships
    (`AS_SHIPPED`: its provider clients' TLS contexts, one CA bundle load per provider call — what every turn cost
    before issue 14 — its config copies and the SDK's request transform). On each, a turn on a new session (fresh
    agent), then the next turn of one long session (warm agent)."""
    idle_start = cpu_seconds(gw.pid)
    await asyncio.sleep(2.0)
    idle_ms_per_s = (cpu_seconds(gw.pid) - idle_start) * 1000 / 2.0
    servers = {"": gw, "_as_shipped": shipped}
    warm_sessions = {suffix: f"cpu-warm{suffix}-{uuid.uuid4().hex[:8]}" for suffix in servers}
    for suffix, server in servers.items():
        await _session_turn(session, server, warm_sessions[suffix], "opening of the warm conversation")
    costs: dict[str, list[float]] = {}
    before = await _agents(session, gw)
    for n in range(turns):
        for suffix, server in servers.items():
            for kind in ("fresh", "warm"):
                session_id = warm_sessions[suffix] if kind == "warm" else f"cpu-fresh-{n}-{uuid.uuid4().hex[:8]}"
                start = cpu_seconds(server.pid)
                await _session_turn(session, server, session_id, f"{kind}{suffix} turn {n}")
                await asyncio.sleep(SETTLE_S)
                costs.setdefault(kind + suffix, []).append(cpu_seconds(server.pid) - start)
    after = await _agents(session, gw)
    mean = {kind: sum(values) / turns * 1000 for kind, values in costs.items()}
    out: dict[str, Any] = {"turns_each": turns}
    for kind, value in mean.items():
        out[f"{kind}_ms_per_turn"] = round(value, 1)
    for kind, fresh in (("warm", "fresh"), ("warm_as_shipped", "fresh_as_shipped"), ("warm", "fresh_as_shipped")):
        out[f"{kind}_over_{fresh}"] = round(mean[kind] / mean[fresh], 3) if mean[fresh] else None
    out["fresh_over_fresh_as_shipped"] = round(mean["fresh"] / mean["fresh_as_shipped"], 3)
    out.update({f"{kind}_ms": [round(x * 1000) for x in values] for kind, values in costs.items()})
    out.update(
        target=CPU_TARGET,
        idle_ms_per_s=round(idle_ms_per_s, 2),
        agent_hits=after["hits"] - before["hits"],
        agent_misses=after["misses"] - before["misses"],
    )
    return out


async def memory(provider: ScriptedProvider, root: Path, conversations: int, cached: bool) -> dict[str, int]:
    """VmRSS of a gateway after a warm-up of `conversations` one-turn conversations, and after as many more. The
    warm-up fills the allocator's arenas with what building and dropping agents leaves behind, so the measured
    growth is what the kept agents hold rather than the allocator's first expansion."""
    extra = {"agents": {"max_cached": 2 * conversations + 8 if cached else 0}}
    name = "plugin-rss-cached" if cached else "plugin-rss-uncached"
    async with gateway(provider, root, True, name, extra) as gw, _client() as session:
        await _conversations(session, gw, conversations, f"{name}-warm-up")
        await asyncio.sleep(1.0)
        before = rss_kb(gw.pid)
        await _conversations(session, gw, conversations, name)
        await asyncio.sleep(1.0)
        return {"before_kb": before, "after_kb": rss_kb(gw.pid), "cached": (await _agents(session, gw))["cached"]}


async def agent_memory(mode: str, kept: int) -> dict[str, Any]:
    """`bench.agent_memory` in a process of its own: RSS per kept AIAgent with TLS contexts `shared` or `shipped`."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.agent_memory", mode, str(kept), cwd=ROOT.parent, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"bench.agent_memory {mode} failed ({proc.returncode})")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


# -- part 2: Open WebUI-style conversations ---------------------------------------------------------------


def _marker(run: str, conversation: int, turn: int) -> str:
    return f"<{run}-c{conversation:03d}-t{turn:02d}>"


async def owui_conversation(
    session: aiohttp.ClientSession, url: str, scenario: str, run: str, conversation: int, turns: int
) -> Conversation:
    """One chat as Open WebUI holds it: every turn resends the visible history and adds a user message."""
    messages: list[dict[str, Any]] = []
    results: Conversation = []
    for turn in range(1, turns + 1):
        messages.append({"role": "user", "content": f"[{scenario}] turn {turn} {_marker(run, conversation, turn)}"})
        try:
            streamed = await stream_chat(session, url, list(messages))
        except (aiohttp.ClientError, TimeoutError):
            streamed = None
        if streamed is None or not streamed.done or not streamed.content:
            results.extend([None] * (turns - turn + 1))
            break
        results.append(streamed)
        messages.append({"role": "assistant", "content": streamed.content})
    return results


def prefix_stability(provider: ScriptedProvider, run: str, conversations: int, turns: int) -> dict[str, Any]:
    """Over every conversation's turns 2..T, as the provider received them: how many turns' first request extends
    the previous turn's last one exactly, and for the others, the role of the first message that differs."""
    stable = pairs = 0
    differs: dict[str, int] = {}
    for c in range(conversations):
        previous = turn_requests(provider, _marker(run, c, 1))
        for t in range(2, turns + 1):
            current = turn_requests(provider, _marker(run, c, t))
            pairs += 1
            if not (previous and current):
                differs["missing"] = differs.get("missing", 0) + 1
            else:
                last, first = previous[-1].messages, current[0].messages
                index = next(
                    (i for i, m in enumerate(last) if i >= len(first) or json.dumps(first[i]) != json.dumps(m)), None
                )
                if index is None:
                    stable += 1
                else:
                    role = str(last[index].get("role"))
                    differs[role] = differs.get(role, 0) + 1
            previous = current
    return {
        "prefix_stable_pct": round(100 * stable / pairs, 1) if pairs else None,
        "prefix_pairs": pairs,
        "prefix_first_difference_by_role": differs,
    }


async def owui(provider: ScriptedProvider, root: Path, ours: bool, conversations: int, turns: int) -> dict[str, Any]:
    run = uuid.uuid4().hex[:6]
    async with gateway(provider, root, ours, "plugin-owui" if ours else "upstream-owui") as gw, _client() as session:
        await owui_conversation(session, gw.url, "bench-tool", f"{run}w", 0, 1)  # the first turn imports lazily
        before = await _agents(session, gw) if ours else None
        started, cpu, own = time.monotonic(), cpu_seconds(gw.pid), _own_cpu()
        chats = await asyncio.gather(
            *(owui_conversation(session, gw.url, "bench-tool", run, c, turns) for c in range(conversations))
        )
        wall = time.monotonic() - started
        cpu, own = cpu_seconds(gw.pid) - cpu, _own_cpu() - own
        after = await _agents(session, gw) if ours else None
        peak = peak_rss_kb(gw.pid)
    by_turn = [
        [s.first_content * 1000 for chat in chats if (s := chat[t]) is not None and s.first_content is not None]
        for t in range(turns)
    ]
    follow_ups = [ms for values in by_turn[1:] for ms in values]
    result: dict[str, Any] = {
        "server": "hermes-api-plugin (hermes runtime)" if ours else "hermes-agent 0.19.0 built-in api_server",
        "turns_completed": sum(s is not None for chat in chats for s in chat),
        "turns_requested": conversations * turns,
        "wall_s": round(wall, 2),
        "first_content_p50_ms": _p(follow_ups, 50),
        "first_content_p95_ms": _p(follow_ups, 95),
        "first_content_p50_by_turn_ms": [_p(values, 50) for values in by_turn],
        "peak_rss_mb": round(peak / 1024, 1),
        "gateway_cpu_ms_per_turn": round(cpu * 1000 / (conversations * turns), 1),
        "bench_process_cpu_ms_per_turn": round(own * 1000 / (conversations * turns), 1),
        **prefix_stability(provider, run, conversations, turns),
    }
    if before is not None and after is not None:
        result["agent_hits"] = after["hits"] - before["hits"]
        result["agent_misses"] = after["misses"] - before["misses"]
    return result


# -- part 3: first reasoning byte overhead ----------------------------------------------------------------


async def first_reasoning(
    provider: ScriptedProvider,
    session: aiohttp.ClientSession,
    gateways: dict[str, Gateway],
    conversations: int,
    turns: int,
) -> dict[str, dict[str, Any]]:
    """Per turn and gateway: through the plugin, straight from the provider (same messages), and request sent -> the
    agent's first provider request arriving; the gateways take turns conversation by conversation."""
    run = uuid.uuid4().hex[:6]
    direct_url = f"http://127.0.0.1:{provider.port}"
    samples: dict[str, dict[str, dict[str, list[float]]]] = {
        name: {
            kind: {"plugin": [], "provider": [], "overhead": [], "to_provider": []} for kind in ("turn1", "follow_up")
        }
        for name in gateways
    }
    for c in range(conversations):
        for name, gw in gateways.items():
            messages: list[dict[str, Any]] = []
            for t in range(1, turns + 1):
                marker = _marker(f"{run}-{name}", c, t)
                messages.append({"role": "user", "content": f"[bench-zero] turn {t} {marker}"})
                through = await stream_chat(session, gw.url, list(messages))
                if not through.done or through.first_reasoning is None:
                    raise RuntimeError(f"{name}: turn {t} of conversation {c} did not stream reasoning")
                requests = turn_requests(provider, marker)
                direct = await stream_chat(session, direct_url, requests[0].messages)
                assert direct.first_reasoning is not None
                kind = samples[name]["turn1" if t == 1 else "follow_up"]
                kind["plugin"].append(through.first_reasoning * 1000)
                kind["provider"].append(direct.first_reasoning * 1000)
                kind["overhead"].append((through.first_reasoning - direct.first_reasoning) * 1000)
                kind["to_provider"].append((requests[0].started - through.sent) * 1000)
                messages.append({"role": "assistant", "content": through.content})
    return {
        name: {
            kind: {
                "turns": len(values["plugin"]),
                **{f"{series}_p50_ms": _p(points, 50) for series, points in values.items()},
            }
            for kind, values in by_kind.items()
        }
        | {"target_ms": OVERHEAD_TARGET_MS, "issue25_target_ms": FOLLOW_UP_TARGET_MS}
        for name, by_kind in samples.items()
    }


# -- the run -----------------------------------------------------------------------------------------------


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def report(result: dict[str, Any]) -> list[str]:
    cpu, mem, reasoning = result["cpu"], result["memory"], result["first_reasoning"]
    lines = [
        f"warm.cpu.fresh_as_shipped {cpu['fresh_as_shipped_ms_per_turn']} ms gateway CPU per turn "
        f"({cpu['turns_each']} turns; a new agent, hermes-agent as it ships (TLS contexts, config copies, request "
        f"bodies): every turn before warm agents); warm on that gateway {cpu['warm_as_shipped_ms_per_turn']} ms "
        f"(x{cpu['warm_as_shipped_over_fresh_as_shipped']})",
        f"warm.cpu.fresh           {cpu['fresh_ms_per_turn']} ms gateway CPU per turn (a new agent, the plugin's "
        f"defaults; x{cpu['fresh_over_fresh_as_shipped']} of as shipped)",
        f"warm.cpu.warm            {cpu['warm_ms_per_turn']} ms gateway CPU per turn: x"
        f"{cpu['warm_over_fresh_as_shipped']} of a turn as shipped (target <= x{CPU_TARGET}: "
        f"{_verdict((cpu['warm_over_fresh_as_shipped'] or 1) <= CPU_TARGET)}), x{cpu['warm_over_fresh']} of a fresh "
        "turn with the plugin's defaults",
        f"warm.memory.per_agent    {mem['per_agent_kb']} KB RSS per cached agent ({mem['conversations']} "
        f"conversations: {mem['cached_delta_kb']} KB kept warm vs {mem['uncached_delta_kb']} KB with max_cached 0)",
        f"warm.memory.in_one_process {mem['in_one_process']['shared']['per_agent_kb']} KB RSS per kept AIAgent with "
        f"shared TLS contexts, {mem['in_one_process']['shipped']['per_agent_kb']} KB as hermes-agent ships "
        f"({mem['in_one_process']['shared']['kept']} agents kept after one turn each)",
    ]
    for server in ("plugin", "upstream"):
        side = result["owui"][server]
        lines.append(
            f"warm.owui.{server:14s} {side['turns_completed']}/{side['turns_requested']} turns in {side['wall_s']} s, "
            f"first content turns 2+ p50 {side['first_content_p50_ms']} ms / p95 {side['first_content_p95_ms']} ms, "
            f"peak RSS {side['peak_rss_mb']} MB, gateway CPU {side['gateway_cpu_ms_per_turn']} ms/turn, "
            f"provider prefix stable {side['prefix_stable_pct']} %"
        )
    ratio = result["owui"]["first_content_p50_plugin_over_upstream"]
    lines.append(
        f"warm.owui.ratio          plugin / upstream first content p50 (turns 2+) x{ratio} "
        f"(target <= x{TTFB_TARGET}: {_verdict(ratio is not None and ratio <= TTFB_TARGET)})"
    )
    for kind in ("turn1", "follow_up"):
        for label, figures in (("", reasoning), ("_as_shipped", result.get("first_reasoning_as_shipped"))):
            if figures is None:
                continue
            r = figures[kind]
            target = (
                f" (target <= {OVERHEAD_TARGET_MS} ms: {_verdict(r['overhead_p50_ms'] <= OVERHEAD_TARGET_MS)}; "
                f"issue 25: <= {FOLLOW_UP_TARGET_MS} ms: {_verdict(r['overhead_p50_ms'] <= FOLLOW_UP_TARGET_MS)})"
                if kind == "follow_up" and not label
                else ""
            )
            lines.append(
                f"warm.first_reasoning{label}.{kind:9s} overhead p50 {r['overhead_p50_ms']} ms ({r['turns']} turns: "
                f"plugin {r['plugin_p50_ms']} ms, provider {r['provider_p50_ms']} ms, sent -> provider request "
                f"{r['to_provider_p50_ms']} ms){target}"
            )
    machine = result.get("machine")
    if machine:
        lines.append(
            f"warm.machine             {machine['wall_s']} s; meanwhile other processes used "
            f"{machine['other_processes_cpu_s']} CPU-s, steal {machine['steal_s']} s"
        )
    return lines


async def run(conversations: int, turns: int, cpu_turns: int, cached: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with ScriptedProvider() as provider, tempfile.TemporaryDirectory(prefix="hermes-warm-") as tmp:
        root = Path(tmp)
        kept = await memory(provider, root, cached, cached=True)
        dropped = await memory(provider, root, cached, cached=False)
        cached_delta, uncached_delta = kept["after_kb"] - kept["before_kb"], dropped["after_kb"] - dropped["before_kb"]
        out["memory"] = {
            "conversations": cached,
            "method": "(VmRSS growth over K one-turn conversations with max_cached >= 2K) - (the same with "
            "max_cached 0), / K; both after a warm-up of K one-turn conversations",
            "cached": kept,
            "uncached": dropped,
            "cached_delta_kb": cached_delta,
            "uncached_delta_kb": uncached_delta,
            "per_agent_kb": round((cached_delta - uncached_delta) / cached, 1),
            "in_one_process": {mode: await agent_memory(mode, min(20, cached)) for mode in ("shared", "shipped")},
        }
        extra = {"agents": {"max_cached": 4 * (cpu_turns + conversations) + 64}}
        shipped_extra = {"agents": {**extra["agents"], **AS_SHIPPED}}
        async with (
            gateway(provider, root, True, "plugin-agents", extra) as gw,
            gateway(provider, root, True, "plugin-agents-as-shipped", shipped_extra) as shipped,
            _client() as session,
        ):
            await _conversations(session, gw, 1, "agents-warm-up")
            await _conversations(session, shipped, 1, "agents-as-shipped-warm-up")
            out["cpu"] = await cpu_per_turn(session, gw, shipped, cpu_turns)
            both = await first_reasoning(provider, session, {"plugin": gw, "as_shipped": shipped}, conversations, turns)
            out["first_reasoning"], out["first_reasoning_as_shipped"] = both["plugin"], both["as_shipped"]
        out["owui"] = {
            "plugin": await owui(provider, root, True, conversations, turns),
            "upstream": await owui(provider, root, False, conversations, turns),
        }
        plugin, upstream = out["owui"]["plugin"], out["owui"]["upstream"]
        ratio = plugin["first_content_p50_ms"] / upstream["first_content_p50_ms"]
        out["owui"]["first_content_p50_plugin_over_upstream"] = round(ratio, 3) if ratio == ratio else None
        out["owui"]["wall_plugin_over_upstream"] = round(plugin["wall_s"] / upstream["wall_s"], 3)
        out["owui"]["target"] = TTFB_TARGET
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.warm")
    parser.add_argument("--conversations", type=int, default=20, help="parts 2 and 3: conversations")
    parser.add_argument("--turns", type=int, default=5, help="parts 2 and 3: turns per conversation")
    parser.add_argument("--cpu-turns", type=int, default=10, help="part 1: fresh and warm turns measured, each")
    parser.add_argument("--cached", type=int, default=100, help="part 1: conversations kept warm for the RSS figure")
    parser.add_argument("--out", default=str(ROOT / "results.json"))
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stopped: still stop the gateways on the way out
    (busy, steal), ours, started = _machine(), _own_cpu(children=True), time.monotonic()
    result = asyncio.run(run(args.conversations, args.turns, args.cpu_turns, args.cached))
    # the machine may be shared: CPU that went to other processes while this ran (machine busy - this tree)
    (busy_after, steal_after), ours_after = _machine(), _own_cpu(children=True)
    result["machine"] = {
        "wall_s": round(time.monotonic() - started, 1),
        "other_processes_cpu_s": round((busy_after - busy) - (ours_after - ours), 1),
        "steal_s": round(steal_after - steal, 1),
    }
    for line in report(result):
        print(line, flush=True)
    path = Path(args.out)
    document = json.loads(path.read_text()) if path.exists() else {"results": {}}
    sizes = {"conversations": args.conversations, "turns": args.turns, "cpu_turns": args.cpu_turns}
    document.setdefault("results", {})["warm"] = {**sizes, "cached": args.cached, **result}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
