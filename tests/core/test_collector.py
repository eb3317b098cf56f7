"""The start-up objects frozen out of later full collections (core/collector.py): once per process, after a
collection, and what is made afterwards still collected. In a child process: freezing is process-wide."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from hermes_api_plugin.http import app as app_module
from tests.conftest import ApiFactory

CHILD = """
import gc, json
from hermes_api_plugin.core.collector import freeze_start_up

class Node:
    def __init__(self): self.me = self

Node()  # garbage in a reference cycle: collected before the freeze, not frozen
kept = [Node() for _ in range(100)]  # start-up objects that stay
first = freeze_start_up()
second = freeze_start_up()
frozen = gc.get_freeze_count()
Node()  # a cycle made after the freeze
print(json.dumps({"first": first, "second": second, "frozen": frozen, "collected_after": gc.collect()}))
"""


def test_the_first_freeze_leaves_start_up_out_and_what_comes_after_is_still_collected() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=60)
    result = json.loads(done.stdout)
    assert result["first"] > 1000 and result["frozen"] > 1000  # the modules' objects, the 100 kept nodes
    assert result["second"] == 0, "once per process"
    assert result["collected_after"] >= 1, "a cycle made after the freeze is collected as before"


@pytest.mark.parametrize(("config", "calls"), [({}, 1), ({"api_server": {"gc": {"freeze_at_start": False}}}, 0)])
async def test_the_app_freezes_at_start_unless_configured_not_to(
    make_api: ApiFactory, monkeypatch: pytest.MonkeyPatch, config: dict[str, Any], calls: int
) -> None:
    made: list[int] = []
    monkeypatch.setattr(app_module, "freeze_start_up", lambda: made.append(1) or 0)
    api = await make_api(config=config)
    assert (await api.get("/health")).status == 200
    assert len(made) == calls
