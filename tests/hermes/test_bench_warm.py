"""The warm-agents benchmark (bench/warm.py) at tiny size, so it cannot rot: every figure is there and a number."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def test_warm_benchmark_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    sizes = ["--conversations", "2", "--turns", "2", "--cpu-turns", "2", "--cached", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.warm", *sizes, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for figure in ("cpu.fresh", "cpu.warm", "memory.per_agent", "owui.plugin", "owui.upstream", "owui.ratio"):
        assert f"warm.{figure} " in done.stdout, done.stdout
    assert "warm.first_reasoning.turn1" in done.stdout and "warm.first_reasoning.follow_up" in done.stdout
    result = json.loads(out.read_text())["results"]["warm"]

    cpu = result["cpu"]
    for key in (
        "fresh_ms_per_turn",
        "warm_ms_per_turn",
        "warm_over_fresh",
        "fresh_as_shipped_ms_per_turn",
        "warm_as_shipped_ms_per_turn",
        "warm_over_fresh_as_shipped",
    ):
        assert _number(cpu[key]) and cpu[key] > 0, cpu
    assert (cpu["agent_hits"], cpu["agent_misses"]) == (2, 2), "each warm turn reused its agent, each fresh one built"
    assert _number(result["memory"]["per_agent_kb"]), result["memory"]
    assert result["memory"]["cached"]["cached"] >= 2 and result["memory"]["uncached"]["cached"] == 0
    for mode in ("shared", "shipped"):
        in_one_process = result["memory"]["in_one_process"][mode]
        assert in_one_process["kept"] == 2 and _number(in_one_process["per_agent_kb"]), in_one_process

    owui = result["owui"]
    for server in ("plugin", "upstream"):
        side = owui[server]
        assert side["turns_completed"] == side["turns_requested"] == 4, side
        for key in ("wall_s", "first_content_p50_ms", "first_content_p95_ms", "peak_rss_mb", "prefix_stable_pct"):
            assert _number(side[key]), (server, key, side)
        assert side["prefix_pairs"] == 2
    assert owui["plugin"]["prefix_stable_pct"] == 100.0, owui["plugin"]
    assert owui["plugin"]["agent_hits"] == 2, "the resent history continued each conversation on its warm agent"
    assert _number(owui["first_content_p50_plugin_over_upstream"])

    assert "warm.first_reasoning_as_shipped.follow_up" in done.stdout
    for kind in ("turn1", "follow_up"):
        for part in ("first_reasoning", "first_reasoning_as_shipped"):
            figures = result[part][kind]
            assert figures["turns"] == 2, (part, figures)
            for key in ("plugin_p50_ms", "provider_p50_ms", "overhead_p50_ms", "to_provider_p50_ms"):
                assert _number(figures[key]), (part, kind, key, figures)
