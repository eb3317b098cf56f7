"""Approvals (WIRE.md §14.2, W-14.3) with the real Hermes `AIAgent` and its real dangerous-command guard.

One reference gateway (`hermes` runtime) whose Hermes home sets `approvals.mode: manual` and a short
`approvals.timeout`; the scripted provider makes the agent call `terminal` with `rm -rf <dir>`, which Hermes'
guard (tools/approval.py) flags. The directory on disk says whether the command ran.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.live import LiveGateway, start_gateway

from .conftest import HomeFactory
from .provider import DANGER_DONE, ScriptedProvider
from .test_reference_gateway import http, wait_for

APPROVAL_TIMEOUT_S = 4


@pytest.fixture(scope="module")
def gateway(hermes_home: HomeFactory) -> Any:
    live = start_gateway(hermes_home(approvals={"mode": "manual", "timeout": APPROVAL_TIMEOUT_S}), timeout=60)
    yield live
    live.stop()


def victim(tmp_path: Path) -> Path:
    target = tmp_path / f"victim-{uuid.uuid4().hex[:8]}"
    target.mkdir()
    (target / "keep.txt").write_text("still here")
    return target


def post(gateway: LiveGateway, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST returning (status, JSON body) for error statuses too."""
    request = urllib.request.Request(
        gateway.url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={**gateway.headers, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def status(gateway: LiveGateway, run_id: str) -> str:
    return str(http(gateway, "GET", f"/v1/runs/{run_id}")["status"])


def run_events(gateway: LiveGateway, run_id: str) -> list[dict[str, Any]]:
    """The events of a settled run (a live run's stream follows it until it settles)."""
    raw = http(gateway, "GET", f"/v1/runs/{run_id}/events")
    return [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]


def submit_run(gateway: LiveGateway, target: Path) -> str:
    run_id = http(gateway, "POST", "/v1/runs", {"input": f"Clean up [danger] {target}"})["run_id"]
    assert wait_for(lambda: status(gateway, run_id) == "waiting_for_approval", 30), run_events(gateway, run_id)
    return str(run_id)


def test_approved_once_runs_the_command_and_shows_on_the_chat_stream(gateway: LiveGateway, tmp_path: Path) -> None:
    """W-14.3: the chat stream carries `hermes.approval.request` (chunk-shaped, Open WebUI status), the run
    waits, `approve` (= once) lets the command run, and `hermes.approval.responded` closes the status."""
    target = victim(tmp_path)
    body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": f"[danger] {target}"}]}
    request = urllib.request.Request(
        gateway.url + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        method="POST",
        headers={**gateway.headers, "Content-Type": "application/json"},
    )
    records: list[tuple[str | None, dict[str, Any]]] = []
    head: dict[str, str] = {}

    def read() -> None:
        with urllib.request.urlopen(request, timeout=60) as response:
            head.update(response.headers)
            name = None
            for raw in response:
                line = raw.decode().rstrip("\n")
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:") and line[5:].strip() != "[DONE]":
                    records.append((name, json.loads(line[5:])))
                    name = None

    reader = threading.Thread(target=read)
    reader.start()
    assert wait_for(lambda: any(n == "hermes.approval.request" for n, _ in records), 30), records
    run_id = head["X-Hermes-Run-Id"]
    asked = next(d for n, d in records if n == "hermes.approval.request")
    assert asked["object"] == "chat.completion.chunk" and asked["choices"][0]["delta"] == {"content": ""}
    assert asked["run_id"] == run_id and f"rm -rf {target}" in asked["command"]
    assert asked["approval_choices"][0] == "once" and asked["description"]
    assert asked["event"] == {
        "type": "status",
        "data": {"description": f"Waiting for approval: {asked['command']}", "done": False},
    }
    assert status(gateway, run_id) == "waiting_for_approval"
    assert target.exists()  # nothing runs before the decision

    assert post(gateway, f"/v1/runs/{run_id}/approval", {"choice": "approve"}) == (
        200,
        {"object": "hermes.run.approval_response", "run_id": run_id, "choice": "once", "resolved": 1},
    )
    reader.join(60)
    assert not target.exists()  # approved once: the command ran
    responded = next(d for n, d in records if n == "hermes.approval.responded")
    assert responded["event"]["data"] == {"description": f"Approved: {asked['command']}", "done": True}
    assert records[-1][1]["choices"][0]["finish_reason"] == "stop"
    assert DANGER_DONE in "".join(d["choices"][0]["delta"].get("content") or "" for n, d in records if n is None)
    names = [e["event"] for e in run_events(gateway, run_id)]
    assert names.index("approval.request") < names.index("approval.responded") < names.index("run.completed")


def test_deny_never_runs_and_the_endpoint_error_codes(gateway: LiveGateway, tmp_path: Path) -> None:
    """W-14.3 on /v1/runs: 400 for an unknown choice, `deny` refuses the command, then 409; 404 unknown run."""
    target = victim(tmp_path)
    run_id = submit_run(gateway, target)
    assert http(gateway, "GET", f"/v1/runs/{run_id}")["last_event"] == "approval.request"
    code, error = post(gateway, f"/v1/runs/{run_id}/approval", {"choice": "maybe"})
    assert (code, error["error"]["code"]) == (400, "invalid_approval_choice")
    assert post(gateway, f"/v1/runs/{run_id}/approval", {"choice": "deny"})[0] == 200
    code, error = post(gateway, f"/v1/runs/{run_id}/approval", {"choice": "once"})
    assert code == 409 and error["error"]["code"] in ("approval_not_pending", "approval_not_active")
    assert wait_for(lambda: status(gateway, run_id) == "completed", 30)
    assert (target / "keep.txt").exists()
    events = run_events(gateway, run_id)  # the run has settled: its events stream ends
    request = next(e for e in events if e["event"] == "approval.request")
    assert request["choices"][0] == "once" and request["choices"][-1] == "deny" and request["run_id"] == run_id
    assert f"rm -rf {target}" in request["command"]
    assert [e["choice"] for e in events if e["event"] == "approval.responded"] == ["deny"]
    code, error = post(gateway, f"/v1/runs/{run_id}/approval", {"choice": "once"})
    assert (code, error["error"]["code"]) == (409, "approval_not_active")
    code, error = post(gateway, "/v1/runs/run_unknown/approval", {"choice": "once"})
    assert (code, error["error"]["code"]) == (404, "run_not_found")


def test_no_decision_within_the_timeout_never_runs(gateway: LiveGateway, tmp_path: Path) -> None:
    """W-14.3: Hermes' approval timeout denies; the run reports `approval.responded` deny and goes on."""
    target = victim(tmp_path)
    run_id = submit_run(gateway, target)
    assert wait_for(lambda: status(gateway, run_id) == "completed", APPROVAL_TIMEOUT_S + 30)
    assert (target / "keep.txt").exists()
    events = run_events(gateway, run_id)
    assert [e["choice"] for e in events if e["event"] == "approval.responded"] == ["deny"]
    names = [e["event"] for e in events]
    assert names.index("approval.responded") < names.index("tool.completed")


def test_stop_while_waiting_denies(gateway: LiveGateway, provider: ScriptedProvider, tmp_path: Path) -> None:
    """W-14.3: a stop while the approval waits cancels the run and the command never runs."""
    target = victim(tmp_path)
    run_id = submit_run(gateway, target)
    assert post(gateway, f"/v1/runs/{run_id}/stop", {})[0] == 200
    assert wait_for(lambda: status(gateway, run_id) == "cancelled", 15)
    events = run_events(gateway, run_id)
    assert [e["choice"] for e in events if e["event"] == "approval.responded"] == ["deny"]
    assert (target / "keep.txt").exists()


def test_capabilities_report_approvals_on_the_hermes_runtime(gateway: LiveGateway) -> None:
    """W-14.5: `run_approval_response` and `approval_events` are true where approvals are served."""
    features = http(gateway, "GET", "/v1/capabilities")["features"]
    assert features["run_approval_response"] is True and features["approval_events"] is True
