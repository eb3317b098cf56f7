"""GET /metrics inside Hermes Agent's own gateway (issue 24): the real `hermes gateway run` with the real agent runs a
chat turn that executes a real terminal tool; the scrape (with the API key; 401 without) counts the completed turn, the
tool's duration by tool name and the warm agent the hermes runtime built — read directly and through a real Prometheus
(Debian's, tests/prom.py) scraping the gateway with the key; a multiplexed profile's turn is labelled with its
profile, under `/p/{profile}/metrics` too."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import openai

from tests.helpers import metric_samples, metric_value, wait_for
from tests.live import TEST_KEY
from tests.prom import Prometheus, ScrapeJob, prometheus_binary

from .conftest import HomeFactory
from .provider import ScriptedProvider
from .support import PLUGINS, HermesGateway, add_work_profile, listening


def _scrape(port: int, key: str | None, path: str = "/metrics") -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_hermes_gateway_counts_a_real_agent_turn_and_its_tool(
    hermes_home: HomeFactory, run_hermes: Callable[[Path], HermesGateway], tmp_path: Path
) -> None:
    prometheus_binary()  # skip (or fail under CI) before starting anything
    home = hermes_home(env={"API_SERVER_PORT": "0"}, plugins=PLUGINS)
    gateway = run_hermes(home)
    port = listening(gateway)
    assert _scrape(port, None)[0] == 401
    prometheus = Prometheus(tmp_path / "prometheus", [ScrapeJob("hermes", f"127.0.0.1:{port}", TEST_KEY)])
    try:
        _a_turn_is_counted(port, prometheus)
    finally:
        prometheus.stop()
    gateway.stop()


def _a_turn_is_counted(port: int, prometheus: Prometheus) -> None:
    """A chat turn with the terminal tool, read from /metrics and then through Prometheus' PromQL."""
    sdk = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=TEST_KEY, max_retries=0, timeout=90.0)
    reply = sdk.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": "Metrics inside hermes gateway: run it"}]
    )
    sdk.close()
    assert "tool-ok" in (reply.choices[0].message.content or "")

    status, text = _scrape(port, TEST_KEY)
    assert status == 200, text[:500]
    samples = metric_samples(text)
    assert metric_value(samples, "hermes_api_turns_total", status="completed", runtime="hermes", surface="chat") == 1
    tools = {ls["gen_ai_tool_name"] for n, ls, _ in samples if n == "gen_ai_execute_tool_duration_seconds_count"}
    assert "terminal" in tools, tools
    assert metric_value(samples, "gen_ai_execute_tool_duration_seconds_count", gen_ai_tool_name="terminal") >= 1
    assert metric_value(samples, "gen_ai_server_request_duration_seconds_count", runtime="hermes", error_type="") == 1
    assert metric_value(samples, "hermes_api_agent_cache_misses_total", runtime="hermes") >= 1

    completed = 'sum(hermes_api_turns_total{job="hermes",runtime="hermes",status="completed"})'
    wait_for(lambda: prometheus.value(completed), 30, until=lambda v: v == 1, interval=0.5)
    by_tool = prometheus.query('sum by (gen_ai_tool_name) (gen_ai_execute_tool_duration_seconds_count{job="hermes"})')
    assert {r["metric"]["gen_ai_tool_name"]: float(r["value"][1]) for r in by_tool}.get("terminal", 0) >= 1, by_tool
    first_token = prometheus.value(
        'histogram_quantile(0.95, sum by (le) (gen_ai_server_time_to_first_token_seconds_bucket{job="hermes"}))'
    )
    assert first_token is not None and first_token > 0, first_token


def test_each_multiplexed_profile_has_its_metrics_under_its_prefix(
    hermes_home: HomeFactory, run_hermes: Callable[[Path], HermesGateway], provider: ScriptedProvider
) -> None:
    """WIRE §14.3: `/p/work/metrics` is served (the gateway's registry; the work profile's turn labelled `work`), and
    an unknown profile's is 404 after authentication."""
    home = hermes_home(env={"API_SERVER_PORT": "0"}, plugins=PLUGINS, gateway={"multiplex_profiles": True})
    add_work_profile(home, provider)
    gateway = run_hermes(home)
    port = listening(gateway)
    sdk = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/p/work/v1", api_key=TEST_KEY, max_retries=0, timeout=90.0)
    reply = sdk.chat.completions.create(
        model="work", messages=[{"role": "user", "content": "Metrics of the work profile: run it"}]
    )
    sdk.close()
    assert "tool-ok" in (reply.choices[0].message.content or "")
    status, text = _scrape(port, TEST_KEY, "/p/work/metrics")
    assert status == 200, text[:500]
    samples = metric_samples(text)
    assert metric_value(samples, "hermes_api_turns_total", status="completed", profile="work") == 1
    assert metric_value(samples, "hermes_api_turns_total", profile="default") == 0
    assert _scrape(port, TEST_KEY, "/p/nope/metrics")[0] == 404
    assert _scrape(port, None, "/p/work/metrics")[0] == 401
    gateway.stop()
