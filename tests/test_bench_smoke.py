"""The benchmarks at tiny size, so they cannot rot (the real runs are `python -m bench`, not CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT


@pytest.mark.slow  # a few seconds of benchmark subprocesses
def test_every_benchmark_runs_at_tiny_size_and_reports_each_figure(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    for prefix in (
        "throughput.chat",
        "throughput.responses",
        "throughput.producer",
        "latency.1_streams",
        "latency_threads.5_streams",
        "idle_streams",
        "stream_cpu.chat",
        "stream_cpu.responses",
        "admissions",
        "startup",
        "store",
        "replicas",
        "answers.question_session",
        "answers.client_tool_history",
        "answers.new_turn_history",
        "websocket.first_event",
        "websocket.total",
    ):
        assert any(line.startswith(prefix) for line in lines), (prefix, done.stdout)
    results = json.loads(out.read_text())["results"]
    throughput = results["throughput"]
    assert throughput["chat_deltas_per_s"] > 0 and throughput["raw_deltas_per_s"] > 0
    # the producer's ceiling, same run: the runtime alone outruns both streams it feeds
    assert throughput["producer_deltas_per_s"] > max(
        throughput["chat_deltas_per_s"], throughput["responses_deltas_per_s"]
    )
    assert 0 < throughput["chat_of_producer"] < 1 and throughput["producer_ratio"] > throughput["chat_ratio"]
    idle = results["idle_streams"]
    assert idle["held"] == idle["requested"]
    # what a full garbage collection walks per open stream, the plugin's beside aiohttp's own (a connection at least)
    assert idle["tracked_per_stream"] > idle["raw_tracked_per_stream"] > 10, idle
    # and per delta a running turn streamed: its journal holds their text, no object per delta (issue 25)
    assert abs(idle["tracked_per_delta"]) < 0.1, idle
    # the plugin and the raw writer on the same schedule, every tick received (issue 25): the turns played on the loop,
    # and from a thread each as Hermes' agent runs (the raw writer then ticks from a thread per stream too)
    for part, streams in ((p, n) for p in ("latency", "latency_threads") for n in ("1", "5")):
        latency = results[part][streams]
        assert latency["events"] == latency["raw"]["events"] == int(streams) * 20, latency
        assert latency["ratio"]["p50"] > 0 and latency["ratio"]["p99"] > 0
        for side in (latency, latency["raw"]):  # how busy the server was beside each run's figures
            assert side["wall_s"] > 0 and side["server_cpu_s"] >= 0, side
            assert side["server_busy"] == pytest.approx(side["server_cpu_s"] / side["wall_s"], abs=0.01), side
            # and how its deltas kept their schedule: request → first delta, and how late each callback ran
            assert 0 < side["first_delta_p50_ms"] <= side["first_delta_p99_ms"], side
            assert -1 < side["slip_p50_ms"] <= side["slip_p99_ms"], side
    cpu = results["stream_cpu"]  # the server's CPU per stream, the raw writer's beside it, and the heap after each
    for kind in ("raw", "chat", "responses"):
        assert cpu[kind]["cpu_ms_per_stream"] > 0 and cpu[kind]["tracked_after"] > 0, cpu
    assert cpu["chat"]["ratio"] == pytest.approx(
        cpu["chat"]["cpu_ms_per_stream"] / cpu["raw"]["cpu_ms_per_stream"], 0.01
    )
    assert results["startup"]["median_s"] > 0
    answers = results["answers"]  # every suspension kind answered both ways resumed its turn; the baselines ran
    for name in (*(f"{k}_{a}" for k in ("question", "approval", "client_tool") for a in ("session", "history")),):
        assert answers[name]["first_content"]["p50_ms"] > 0 and answers[name]["head"]["p99_ms"] > 0, name
        assert answers[name]["ratio"]["p50_ms"] > 0, name
    assert answers["new_turn_session"]["first_content"]["p50_ms"] > 0 and answers["rounds"] == 3
    store = results["store"]
    if "skipped" in store:  # no PostgreSQL server binaries here; CI installs them
        assert os.environ.get("CI") != "true", store["skipped"]
    else:
        for name in ("sqlite", "postgres", "postgres_round_trip_check", "postgres_no_pool_check"):
            assert store[name]["keyed"]["p50_ms"] > 0 and store[name]["unkeyed"]["p99_ms"] > 0
        assert store["postgres_over_sqlite"]["keyed"]["p50_ms"] > 0
        assert store["pool_check_us_per_borrow"]["round_trip"] > 0
    socket = results["websocket"]  # 20 responses on one socket and 20 SSE requests on one connection, both timed
    assert socket["socket"]["total_ms"] > 0 and socket["sse"]["first_event"]["p50_ms"] > 0
    assert socket["ratio"]["total"] > 0
    replicas = results["replicas"]
    if "skipped" in replicas:
        assert os.environ.get("CI") != "true", replicas["skipped"]
    else:  # A's own client and B's, attached through the database, on the same deltas
        for turns in ("1", "2"):
            figures = replicas[turns]
            assert figures["events"] > 0
            assert figures["own"]["p50_ms"] > 0 and figures["attached"]["p99_ms"] > 0
            assert figures["difference"]["p50_ms"] > 0, "B reads A's rows after A's client got them"


@pytest.mark.slow  # two tiny rounds of throughput and latency, here and "against" this same checkout
def test_rounds_alternate_two_checkouts_and_keep_every_figure_with_its_raw_partner(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.rounds", "--rounds", "2", "--quick", "--against", str(ROOT), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())["results"]
    for summary in (results["rounds"], results["rounds_against"]):
        assert summary["rounds"] == 2
        for part, streams in ((p, n) for p in ("latency", "latency_threads") for n in ("1", "5")):
            for figure in ("p99_ms", "raw_p99_ms", "p99_ratio", "first_delta_p99_ms", "raw_first_delta_p99_ms"):
                entry = summary[f"{part}_{streams}_{figure}"]
                assert len(entry["values"]) == 2 and entry["median"] > 0, (part, streams, figure, entry)
            for figure in ("server_busy", "raw_server_busy"):  # a tiny run may use less than a clock tick of CPU
                entry = summary[f"{part}_{streams}_{figure}"]
                assert len(entry["values"]) == 2 and entry["median"] >= 0, (streams, figure, entry)
        assert summary["chat_ratio"]["median"] > 0 and summary["responses_ratio"]["median"] > 0
        assert summary["producer_ratio"]["median"] > 0 and summary["chat_of_producer"]["median"] > 0
        for kind in ("chat", "responses", "raw"):
            assert (
                summary[f"stream_cpu_{kind}_ms"]["median"] > 0 and len(summary[f"stream_cpu_{kind}_ms"]["values"]) == 2
            )
        assert summary["stream_cpu_chat_ratio"]["median"] > 0
