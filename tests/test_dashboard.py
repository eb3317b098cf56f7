"""config/grafana/hermes-api.json (issue 24): every PromQL expression of the dashboard parses (Prometheus' own
`promtool`, with Grafana's variables replaced), and every metric it queries exists in a gateway's /metrics after a turn
ran — so a renamed metric breaks this test, not the dashboard in someone's Grafana."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml
from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import CHAT, ROOT
from tests.prom import prometheus_binary

DASHBOARD = ROOT / "config" / "grafana" / "hermes-api.json"
# Grafana's variables, as a query would be sent once they are filled in
VARIABLES = {"$__rate_interval": "1m", "$job": ".*", "$profile": ".*"}
# What the dashboard must show (issue 24, part 4): each a substring of some expression
REQUIRED = (
    "hermes_api_time_to_first_reasoning_seconds_bucket",
    "hermes_api_time_to_first_content_seconds_bucket",
    "hermes_api_turns_unsettled",
    "gen_ai_execute_tool_duration_seconds_bucket",
    "hermes_api_admissions_total",
    'status=~"4..|5.."',
    "hermes_api_agent_cache_hits_total",
    "hermes_api_store_operation_duration_seconds_bucket",
)
_KEYWORDS = frozenset(
    {
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "and",
        "or",
        "unless",
        "offset",
        "bool",
        "inf",
        "nan",
    }
)
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NAME = re.compile(r"(?<![\w.])([A-Za-z_:][A-Za-z0-9_:]*)\b(?!\s*\()")
_LABEL_VALUES = re.compile(r"label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)")


def _dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return doc


def expressions(doc: dict[str, Any]) -> list[str]:
    """Every panel target's PromQL, Grafana's variables filled in."""
    found = []
    for panel in doc["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in VARIABLES.items():
                expr = expr.replace(variable, value)
            found.append(expr)
    return found


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (functions, keywords, labels, strings and numbers left out)."""
    bare = _GROUPING.sub(" ", _RANGES.sub(" ", _MATCHERS.sub(" ", _STRINGS.sub('""', expr))))
    return {name for name in _NAME.findall(bare) if name not in _KEYWORDS}


def exposed_names(text: str) -> set[str]:
    """Every name a query may select from a /metrics document: families and their samples' names."""
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}.get(family.type, ())
        names.update(family.name + suffix for suffix in suffixes)
    return names


def test_the_name_extraction_sees_selectors_and_ignores_the_rest() -> None:
    expr = 'histogram_quantile(0.95, sum by (le, route) (rate(a_bucket{job=~"x|y"}[1m]))) / on(job) b_total offset 5m'
    assert metric_names(expr) == {"a_bucket", "b_total"}


def test_every_dashboard_expression_is_valid_promql(tmp_path: Path) -> None:
    promtool = prometheus_binary("promtool")
    exprs = expressions(_dashboard())
    assert len(exprs) >= 20
    rules = {
        "groups": [
            {"name": "dashboard", "rules": [{"record": f"dashboard:{i}", "expr": e} for i, e in enumerate(exprs)]}
        ]
    }
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules), encoding="utf-8")
    checked = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_dashboard_shows_what_the_issue_asks_for() -> None:
    joined = "\n".join(expressions(_dashboard()))
    assert [part for part in REQUIRED if part not in joined] == []


async def test_every_metric_the_dashboard_queries_exists_after_a_turn(api: TestClient, auth: dict[str, str]) -> None:
    body = {"messages": [{"role": "user", "content": "use tool"}], "stream": True}
    async with api.post(CHAT, json=body, headers=auth) as resp:
        assert resp.status == 200
        await resp.read()
    async with api.get("/metrics", headers=auth) as resp:
        exposed = exposed_names(await resp.text())
    doc = _dashboard()
    queried = set().union(*(metric_names(e) for e in expressions(doc)))
    variables = [v["query"]["query"] for v in doc["templating"]["list"] if isinstance(v.get("query"), dict)]
    queried |= {m.group(1) for q in variables for m in [_LABEL_VALUES.search(q)] if m}
    assert len(queried) >= 20
    assert sorted(queried - exposed) == []
