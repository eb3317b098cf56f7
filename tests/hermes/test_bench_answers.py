"""The hermes part of the answers benchmark (bench/answers_hermes.py) at tiny size, so it cannot rot: every variant
resumed its turn on the real agent and every figure is a number."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

VARIANTS = [f"{kind}_{how}" for kind in ("question", "approval", "client_tool") for how in ("session", "history")]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def test_answers_benchmark_on_the_hermes_runtime_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.answers_hermes", "--rounds", "1", "--warmup", "0", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())["results"]["answers_hermes"]
    for name in (*VARIANTS, "new_turn_session", "new_turn_history"):
        assert f"answers_hermes.{name} " in done.stdout, done.stdout
        for series in ("plugin", "provider", "overhead", "to_provider"):
            assert _number(result[name][series]["p50_ms"]), (name, series, result[name])
        assert result[name]["plugin"]["p50_ms"] > 0 and result[name]["to_provider"]["p50_ms"] > 0, result[name]
    # the next turn — by session header, and by the history resent with the question and its answer (issue 14 across
    # an answered turn) — ran on the agent that had just answered
    assert result["agents"]["hits"] == 2, result["agents"]
