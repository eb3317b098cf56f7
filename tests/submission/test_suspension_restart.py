"""A suspended turn across `kill -9` of the real gateway process (WIRE.md §15.1, W-15.4; §5.4): the restart settles
it `unknown_execution`, a keyed retry never runs it again, and no answer can reach it any more — its dangerous
command never runs."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.helpers import RESTART_ERROR, RUNS, UNKNOWN, assert_error_envelope, complete_records, live_request, wait_for
from tests.live import start_gateway, write_home

pytestmark = pytest.mark.slow  # real gateway processes, one killed with SIGKILL


def test_w_15_4_a_restart_settles_a_suspended_run_unknown_execution(tmp_path: Path) -> None:
    home = write_home(tmp_path / "home", script="suspend.yaml")
    body = {"input": "delete the build"}
    key = {"Idempotency-Key": "suspended-1"}
    before = start_gateway(home)
    try:
        admitted = live_request(before, "POST", RUNS, body, key)
        assert admitted.status == 202, admitted.raw
        run_id = admitted.json()["run_id"]
        run = wait_for(
            lambda: live_request(before, "GET", f"{RUNS}/{run_id}").json(),
            until=lambda r: r["status"] == "requires_action",
            what="the suspension",
        )
        assert run["required_action"]["type"] == "approval"
    finally:
        before.stop(signal.SIGKILL)
    after = start_gateway(home)
    try:
        run = wait_for(
            lambda: live_request(after, "GET", f"{RUNS}/{run_id}").json(),
            until=lambda r: r["status"] == "failed",
            what="the restart's settlement",
        )
        assert run["error"] == RESTART_ERROR and "required_action" not in run
        retry = live_request(after, "POST", RUNS, body, key)
        assert (retry.status, retry.json()) == (409, UNKNOWN)
        late = live_request(after, "POST", f"{RUNS}/{run_id}/approval", {"choice": "once"})
        assert_error_envelope(late, 409, "approval_not_active")
        events = [
            json.loads(r.data) for r in complete_records(live_request(after, "GET", f"{RUNS}/{run_id}/events").raw)
        ]
        assert events[-1]["event"] == "run.failed" and events[-1]["error"] == RESTART_ERROR
        assert [e["event"] for e in events].count("approval.request") == 1
        # never approved: its terminal tool never completed without error (the command never ran)
        assert not [e for e in events if e["event"] == "tool.completed" and not e["error"]]
        assert len(after.executions()) == 1  # executed once, by the killed gateway; the restart ran nothing
    finally:
        after.stop()
