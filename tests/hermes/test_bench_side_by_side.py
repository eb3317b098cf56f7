"""The side-by-side benchmark (plugin vs the built-in API server of hermes-agent) at tiny size, so it cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT


def test_side_by_side_benchmark_runs_both_servers_and_reports_each_figure(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.side_by_side", "--streams", "2", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "side_by_side.plugin" in done.stdout and "side_by_side.upstream" in done.stdout, done.stdout
    result = json.loads(out.read_text())["results"]["side_by_side"]
    for server in ("plugin", "upstream"):
        assert result[server]["completed"] == 2, result[server]
        assert result[server]["content_deltas_per_request"] > 0
        assert result[server]["peak_rss_mb"] > 0
    assert result["plugin"]["reasoning_arrives"] is True
