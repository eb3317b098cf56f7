"""Warm agents (issue 14) with the real Hermes `AIAgent` against the scripted provider, on the reference gateway with
the `hermes` runtime: one agent per conversation, reused across its turns.

What the provider receives is the proof that matters for prompt caching: across the turns of one conversation the
system prompt is byte-identical and each turn's first request extends the previous turn's last one (its tool calls
and results included). `/health/detailed` (`api_server.agents`) counts the hits and misses. A new system prompt, a
stopped turn and a deleted session each leave the next turn on a fresh agent; the idle TTL and the cap are unit-tested
in tests/runtimes/test_agent_cache.py.
"""

from __future__ import annotations

import itertools
import json
import signal
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from hermes_api_plugin.turns.registry import DRAIN_GRACE_S
from tests.live import LiveGateway, start_gateway

from .conftest import HomeFactory
from .provider import MODEL, ScriptedProvider, turn_requests
from .support import http, wait_for


@pytest.fixture(scope="module")
def gateway(hermes_home: HomeFactory) -> Iterator[LiveGateway]:
    live = start_gateway(hermes_home(), timeout=60)
    yield live
    live.stop()


def agents(gateway: LiveGateway) -> dict[str, int]:
    return dict(http(gateway, "GET", "/health/detailed")["api_server"]["agents"])


def chat(gateway: LiveGateway, session_id: str, message: str, **extra: Any) -> dict[str, Any]:
    reply = http(gateway, "POST", f"/api/sessions/{session_id}/chat", {"message": message, **extra})
    assert reply["status"] == "completed", reply
    return dict(reply)


def new_session(gateway: LiveGateway) -> str:
    session_id = f"warm-{uuid.uuid4().hex[:10]}"
    assert http(gateway, "POST", "/api/sessions", {"id": session_id})["session"]["id"] == session_id
    return session_id


@pytest.fixture(scope="module")
def remembering(hermes_home: HomeFactory) -> Iterator[LiveGateway]:
    """Hermes' built-in memory on (MEMORY.md / USER.md in the home, snapshot in the system prompt)."""
    home = hermes_home(memory={"memory_enabled": True, "user_profile_enabled": True})
    (home / "memories").mkdir(exist_ok=True)
    (home / "memories" / "MEMORY.md").write_text("The user's build host is called anvil.\n", encoding="utf-8")
    live = start_gateway(home, timeout=60)
    yield live
    live.stop()


@pytest.mark.parametrize("memory", [False, True], ids=["memory-off", "memory-on"])
def test_a_conversation_keeps_one_agent_and_the_provider_sees_a_stable_growing_prefix(
    request: pytest.FixtureRequest, provider: ScriptedProvider, memory: bool
) -> None:
    gateway: LiveGateway = request.getfixturevalue("remembering" if memory else "gateway")
    session_id = new_session(gateway)
    before = agents(gateway)
    markers = [f"turn {n} of {session_id}" for n in range(1, 4)]
    for marker in markers:
        chat(gateway, session_id, marker)
    after = agents(gateway)
    # the defaults: hermes-agent's config copies and request bodies made cheaper (hermes/compat), the prefix the same
    assert after["fast_config_copies"] is after["fast_request_bodies"] is True, after
    assert after["misses"] - before["misses"] == 1, (before, after)  # built for the first turn only
    assert after["hits"] - before["hits"] == 2, (before, after)

    turns = [turn_requests(provider, marker) for marker in markers]
    assert all(len(requests) == 2 for requests in turns), "each turn: a tool call, then the answer"
    systems = {r.messages[0]["content"] for requests in turns for r in requests}
    assert len(systems) == 1 and turns[0][0].messages[0]["role"] == "system", "the system prompt never changed"
    assert ("anvil" in systems.pop()) is memory, "with memory on, its snapshot is in that stable prompt"
    for previous, current in itertools.pairwise(turns):
        last, first = previous[-1].messages, current[0].messages
        # as the provider received them, key order included
        assert json.dumps(first[: len(last)]) == json.dumps(last), "a turn's first request extends the last one"
        assert any(m.get("role") == "tool" for m in first), "the earlier tool results are part of the prefix"


def test_another_system_prompt_builds_another_agent(gateway: LiveGateway) -> None:
    session_id = new_session(gateway)
    chat(gateway, session_id, "first, no instructions")
    before = agents(gateway)
    chat(gateway, session_id, "second, with instructions", instructions="Answer in French.")
    after = agents(gateway)
    assert (after["misses"] - before["misses"], after["hits"] - before["hits"]) == (1, 0)
    assert after["evictions"] - before["evictions"] == 1, "the old agent was released"


def test_a_model_switched_in_config_yaml_reaches_the_next_turn_on_a_new_agent(
    gateway: LiveGateway, provider: ScriptedProvider
) -> None:
    """`hermes model` (config.yaml) between two turns: the next turn resolves again — Hermes' resolution is remembered
    only while config.yaml, .env and auth.json are unchanged (runtimes/resolved_settings.py) — and its new signature
    builds a new agent."""
    config = gateway.home / "config.yaml"
    original = config.read_text(encoding="utf-8")
    session_id = new_session(gateway)
    chat(gateway, session_id, f"on the first model {session_id}")
    chat(gateway, session_id, f"still the first model {session_id}")
    before = agents(gateway)
    try:
        config.write_text(original.replace(f"default: {MODEL}", f"default: {MODEL}-switched"), encoding="utf-8")
        assert config.read_text(encoding="utf-8") != original
        chat(gateway, session_id, f"on the switched model {session_id}")
    finally:
        config.write_text(original, encoding="utf-8")
    after = agents(gateway)
    models = [r.body.get("model") for r in turn_requests(provider, f"on the switched model {session_id}")]
    assert models and set(models) == {f"{MODEL}-switched"}, models
    assert {r.body.get("model") for r in turn_requests(provider, f"still the first model {session_id}")} == {MODEL}
    assert (after["misses"] - before["misses"], after["hits"] - before["hits"]) == (1, 0), (before, after)


def test_a_stopped_turn_leaves_the_next_one_a_fresh_agent(gateway: LiveGateway) -> None:
    session_id = new_session(gateway)
    chat(gateway, session_id, "warm it up")
    run = http(gateway, "POST", "/v1/runs", {"input": "[slow-tool] stop me", "session_id": session_id})
    run_id = run["run_id"]
    assert wait_for(lambda: http(gateway, "GET", f"/v1/runs/{run_id}")["last_event"] == "tool.started", 30)
    http(gateway, "POST", f"/v1/runs/{run_id}/stop", {})
    assert wait_for(lambda: http(gateway, "GET", f"/v1/runs/{run_id}")["status"] == "cancelled", 15)
    before = agents(gateway)
    chat(gateway, session_id, "after the stop")
    after = agents(gateway)
    assert (after["misses"] - before["misses"], after["hits"] - before["hits"]) == (1, 0), (before, after)
    chat(gateway, session_id, "and warm again")
    assert agents(gateway)["hits"] - after["hits"] == 1


def test_deleting_a_session_releases_its_agent(gateway: LiveGateway) -> None:
    session_id = new_session(gateway)
    chat(gateway, session_id, "to be deleted")
    before = agents(gateway)
    http(gateway, "DELETE", f"/api/sessions/{session_id}")
    after = agents(gateway)
    assert after["cached"] == before["cached"] - 1 and after["evictions"] == before["evictions"] + 1


def test_a_warm_turn_costs_less_gateway_cpu_than_a_fresh_one(hermes_home: HomeFactory) -> None:
    """Issue 14's first target, as a guard (bench/ measures it properly): the process CPU a warm turn costs is
    well under a fresh one's. Averaged over a few turns each, same run. On a gateway with hermes-agent's TLS set-up
    as shipped (`share_tls_contexts: false`), which is what every turn cost before warm agents: shared TLS contexts
    (tests/hermes/test_tls_contexts.py) make fresh agents cheap too, and this guards what the cache itself saves."""
    gateway = start_gateway(hermes_home(api_server={"agents": {"share_tls_contexts": False}}), timeout=60)
    try:
        _compare_fresh_and_warm_cpu(gateway)
    finally:
        gateway.stop()


def _compare_fresh_and_warm_cpu(gateway: LiveGateway) -> None:

    def cpu() -> float:
        with open(f"/proc/{gateway.proc.pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in clock ticks of 10 ms

    def turns(fresh: bool, count: int = 4) -> float:
        session_id = new_session(gateway)
        chat(gateway, session_id, "warm-up turn")
        start = cpu()
        for n in range(count):
            chat(gateway, new_session(gateway) if fresh else session_id, f"measured turn {n}")
        return (cpu() - start) / count

    time.sleep(0.2)
    fresh, warm = turns(fresh=True), turns(fresh=False)
    print(f"\ngateway CPU per turn: fresh {fresh * 1000:.0f} ms, warm {warm * 1000:.0f} ms ({warm / fresh:.2f}x)")
    assert warm < 0.6 * fresh, (fresh, warm)


def test_a_stateless_chat_that_resends_its_history_continues_on_the_warm_agent(
    gateway: LiveGateway, provider: ScriptedProvider
) -> None:
    """Issue 14 §2: a client that resends the visible history (as Open WebUI does) continues the conversation: the
    same session, its warm agent, and the provider sees the earlier tool call and result again — the prefix it saw."""
    opening = f"stateless opening {uuid.uuid4().hex[:8]}"
    first = http(gateway, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": opening}]})
    answer = first["choices"][0]["message"]["content"]
    before = agents(gateway)
    follow_up = f"stateless follow-up {uuid.uuid4().hex[:8]}"  # not the opening's text: turn_requests tells them apart
    sent = [
        {"role": "user", "content": opening},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": follow_up},
    ]
    http(gateway, "POST", "/v1/chat/completions", {"messages": sent})
    after = agents(gateway)
    assert (after["hits"] - before["hits"], after["misses"] - before["misses"]) == (1, 0), (before, after)
    last_of_first = turn_requests(provider, opening)[-1].messages
    first_of_second = turn_requests(provider, follow_up)[0].messages
    assert json.dumps(first_of_second[: len(last_of_first)]) == json.dumps(last_of_first)
    assert any(m.get("role") == "tool" for m in first_of_second), "the agent remembers its tool call"


def test_a_previous_response_id_chain_runs_on_one_warm_agent(gateway: LiveGateway) -> None:
    """Issue 14 §3: a Responses chain is one conversation (its session), so its turns share the warm agent."""
    first = http(gateway, "POST", "/v1/responses", {"input": f"chain start {uuid.uuid4().hex[:8]}"})
    before = agents(gateway)
    second = http(gateway, "POST", "/v1/responses", {"input": "chain next", "previous_response_id": first["id"]})
    assert second["status"] == "completed", second
    after = agents(gateway)
    assert (after["hits"] - before["hits"], after["misses"] - before["misses"]) == (1, 0), (before, after)


def test_a_client_that_leaves_mid_turn_cancels_it_on_the_warm_agent_and_the_next_turn_starts_fresh(
    gateway: LiveGateway,
) -> None:
    """§5.5 on a warm agent: the disconnect interrupts it as it would a fresh one; that agent is not reused."""
    session_id = new_session(gateway)
    chat(gateway, session_id, "warm before the disconnect")
    body = json.dumps({"message": "[slow-tool] leave me", "stream": True}).encode()
    request = urllib.request.Request(
        gateway.url + f"/api/sessions/{session_id}/chat/stream",
        data=body,
        method="POST",
        headers={**gateway.headers, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        run_id = response.headers["X-Hermes-Run-Id"]
        for line in response:
            if b"tool.started" in line:
                break  # leaving the `with` closes the connection while `sleep 30` runs
    assert wait_for(lambda: http(gateway, "GET", f"/v1/runs/{run_id}")["status"] == "cancelled", 15)
    before = agents(gateway)
    chat(gateway, session_id, "after the disconnect")
    after = agents(gateway)
    assert (after["misses"] - before["misses"], after["hits"] - before["hits"]) == (1, 0), (before, after)


def test_a_drain_stops_a_turn_on_a_warm_agent_within_its_grace(hermes_home: HomeFactory) -> None:
    """SIGTERM while a warm agent runs a long tool: the gateway interrupts it as it would a fresh one and exits
    within the drain grace; the keyed run's journal ends `run.cancelled`."""
    home = hermes_home()
    live = start_gateway(home, timeout=60)
    try:
        session_id = new_session(live)
        chat(live, session_id, "warm before the drain")
        assert agents(live)["cached"] == 1
        request = urllib.request.Request(
            live.url + "/v1/runs",
            data=json.dumps({"input": "[slow-tool] drain me", "session_id": session_id}).encode(),
            method="POST",
            headers={**live.headers, "Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            run_id = json.loads(response.read())["run_id"]
        assert wait_for(lambda: http(live, "GET", f"/v1/runs/{run_id}")["last_event"] == "tool.started", 30)
        assert agents(live)["leased"] == 1, "the run holds the warm agent"
        started = time.monotonic()
        code = live.stop(timeout=DRAIN_GRACE_S + 20)
        took = time.monotonic() - started
    finally:
        live.stop(signal.SIGKILL)
    assert code == 0 and took < DRAIN_GRACE_S, (code, took, live.output()[-2000:])
    again = start_gateway(home, timeout=60)
    try:
        events = http(again, "GET", f"/v1/runs/{run_id}/events")
        names = [json.loads(line[5:])["event"] for line in events.splitlines() if line.startswith("data:")]
    finally:
        again.stop()
    assert names[-1] == "run.cancelled", names
