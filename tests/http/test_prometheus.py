"""A real Prometheus scrapes a live reference gateway while scripted turns run (issue 24, "Done when"): the scrape
carries the API key as its bearer token (a job without it is refused: `up` is 0), and PromQL over Prometheus' HTTP
API finds the completed turns, a time-to-first-token quantile and the tool durations by tool name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import CHAT, live_request, wait_for
from tests.live import LiveGateway, start_gateway, write_home
from tests.prom import Prometheus, ScrapeJob, prometheus_binary

pytestmark = pytest.mark.slow  # Prometheus start-up and 1 s scrapes: a few seconds

TOOL_TURNS = 3  # "use tool": reasoning, a 0.2 s `terminal` tool, an answer (tests/scripts/chat.yaml)
PLAIN_TURNS = 2  # "hello": an answer only


@pytest.fixture
def scraped(tmp_path: Path) -> Iterator[tuple[LiveGateway, Prometheus]]:
    prometheus_binary()  # skip (or fail under CI) before starting anything
    gateway = start_gateway(write_home(tmp_path / "home"))
    target = f"{gateway.host}:{gateway.port}"
    try:
        prometheus = Prometheus(
            tmp_path / "prometheus",
            [ScrapeJob("hermes", target, gateway.key), ScrapeJob("hermes-nokey", target, None)],
        )
    except BaseException:
        gateway.stop()
        raise
    yield gateway, prometheus
    prometheus.stop()
    gateway.stop()


def test_prometheus_scrapes_the_gateway_and_answers_promql_about_its_turns(
    scraped: tuple[LiveGateway, Prometheus],
) -> None:
    gateway, prometheus = scraped
    for text, times in (("use tool", TOOL_TURNS), ("hello", PLAIN_TURNS)):
        for _ in range(times):
            reply = live_request(
                gateway, "POST", CHAT, {"messages": [{"role": "user", "content": text}], "stream": True}
            )
            assert reply.status == 200, reply.raw[:300]

    completed = 'sum(hermes_api_turns_total{job="hermes",status="completed"})'
    wait_for(lambda: prometheus.value(completed), 30, until=lambda v: v == TOOL_TURNS + PLAIN_TURNS, interval=0.5)

    assert prometheus.value('up{job="hermes"}') == 1
    # the scrape without the key got 401
    wait_for(lambda: prometheus.value('up{job="hermes-nokey"}'), 10, until=lambda v: v == 0, interval=0.5)
    assert prometheus.value('sum(hermes_api_admissions_total{job="hermes",outcome="new"})') == 5
    # p50 and p95 of the time to first token: every turn's first output came within a second of its admission
    for q in (0.5, 0.95):
        quantile = prometheus.value(
            f'histogram_quantile({q}, sum by (le) (gen_ai_server_time_to_first_token_seconds_bucket{{job="hermes"}}))'
        )
        assert quantile is not None and 0 < quantile <= 1.0, (q, quantile)
    # tool durations by tool name: three `terminal` runs of 0.2 s each
    by_tool = prometheus.query('sum by (gen_ai_tool_name) (gen_ai_execute_tool_duration_seconds_count{job="hermes"})')
    assert {r["metric"]["gen_ai_tool_name"]: float(r["value"][1]) for r in by_tool} == {"terminal": TOOL_TURNS}
    seconds = prometheus.value('sum(gen_ai_execute_tool_duration_seconds_sum{gen_ai_tool_name="terminal"})')
    assert seconds is not None and 0.6 <= seconds < 3.0, seconds
    mean = prometheus.value(
        'sum(gen_ai_execute_tool_duration_seconds_sum{job="hermes"}) / sum(gen_ai_execute_tool_duration_seconds_count)'
    )
    assert mean is not None and 0.2 <= mean < 1.0, mean
