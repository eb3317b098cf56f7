"""Approvals (WIRE.md §14.2, W-14.3) with the real Hermes `AIAgent` and its real dangerous-command guard, on both
hosts: the real `hermes gateway run` with the plugin enabled, and the reference gateway with the `hermes` runtime.

One gateway whose Hermes home sets `approvals.mode: manual` and a short `approvals.timeout`; the scripted provider makes the agent call `terminal` with `rm -rf <dir>`, which Hermes'
guard (tools/approval.py) flags. The directory on disk says whether the command ran. Every deny path of §14.2 —
`deny`, the timeout, a stop, a disconnect that cancels the turn, a drain (SIGTERM) — leaves it in place; a second
gateway with a long approval timeout makes sure a disconnect or drain, not the timeout, is what denied. §1.6:
`X-Hermes-Session-Key` is the approval session key, so a `session` approval covers that key's later turns only.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from hermes_api_plugin.turns.registry import DRAIN_GRACE_S
from tests.live import LiveGateway, start_gateway

from .conftest import HomeFactory
from .provider import DANGER_DONE, ScriptedProvider
from .support import PLUGINS, HermesGateway, http, listening, wait_for
from .support import start_gateway as start_hermes_gateway

APPROVAL_TIMEOUT_S = 4
PATIENT_TIMEOUT_S = 300  # long enough that only the event under test (disconnect, drain, a decision) decides


HOSTS = ("hermes gateway", "reference gateway")


# This suite is §14.2's held approvals (issue 13): every request holds them (WIRE §15.2 `X-Hermes-Approvals: hold`);
# suspended ones, answered in the client's dialect, are tests/hermes/test_turn_taking.py's.
HOLD = {"X-Hermes-Approvals": "hold"}


def home_with_approvals(hermes_home: HomeFactory, timeout_s: int) -> Path:
    """One home both hosts start from: the plugin enabled as a Hermes plugin, any free port, manual approvals."""
    return hermes_home(
        env={"API_SERVER_PORT": "0"}, plugins=PLUGINS, approvals={"mode": "manual", "timeout": timeout_s}
    )


def start(host: str, home: Path) -> LiveGateway | HermesGateway:
    if host == "reference gateway":
        return start_gateway(home, timeout=60)
    live = start_hermes_gateway(home)
    try:
        listening(live)
    except BaseException:
        live.stop()
        raise
    return live


@pytest.fixture(scope="module", params=HOSTS)
def host(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def gateway(host: str, hermes_home: HomeFactory) -> Any:
    live = start(host, home_with_approvals(hermes_home, APPROVAL_TIMEOUT_S))
    yield live
    live.stop()


@pytest.fixture(scope="module")
def patient(host: str, hermes_home: HomeFactory) -> Any:
    """A gateway whose approval timeout never fires within a test: a deny there comes from the test's event."""
    live = start(host, home_with_approvals(hermes_home, PATIENT_TIMEOUT_S))
    yield live
    live.stop()


def victim(tmp_path: Path) -> Path:
    target = tmp_path / f"victim-{uuid.uuid4().hex[:8]}"
    target.mkdir()
    (target / "keep.txt").write_text("still here")
    return target


def post(
    gateway: LiveGateway, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    """POST returning (status, JSON body) for error statuses too."""
    request = urllib.request.Request(
        gateway.url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={**gateway.headers, **HOLD, **(headers or {}), "Content-Type": "application/json"},
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


def submit_run(gateway: LiveGateway, target: Path, headers: dict[str, str] | None = None) -> str:
    run_id = post(gateway, "/v1/runs", {"input": f"Clean up [danger] {target}"}, headers)[1]["run_id"]
    assert wait_for(lambda: status(gateway, run_id) == "waiting_for_approval", 30), run_events(gateway, run_id)
    return str(run_id)


class ChatStream:
    """A streamed chat completion (or another SSE stream: `path`, `body`) read in a thread: its response headers
    and `(event name, data)` records. With `until`, the client closes the connection right after the first record
    of that name (a disconnect)."""

    def __init__(
        self,
        gateway: LiveGateway,
        prompt: str,
        headers: dict[str, str] | None = None,
        until: str | None = None,
        path: str = "/v1/chat/completions",
        body: dict[str, Any] | None = None,
    ) -> None:
        if body is None:
            body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": prompt}]}
        self.request = urllib.request.Request(
            gateway.url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={**gateway.headers, **HOLD, **(headers or {}), "Content-Type": "application/json"},
        )
        self.until = until
        self.records: list[tuple[str | None, dict[str, Any]]] = []
        self.head: dict[str, str] = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        with urllib.request.urlopen(self.request, timeout=60) as response:
            self.head.update(response.headers)
            name = None
            for raw in response:
                line = raw.decode().rstrip("\n")
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:") and line[5:].strip() != "[DONE]":
                    self.records.append((name, json.loads(line[5:])))
                    if name is not None and name == self.until:
                        return  # leaving the `with` closes the connection mid-turn
                    name = None

    @property
    def asked(self) -> bool:
        return any(n == "hermes.approval.request" for n, _ in self.records)

    def wait_for(self, name: str, timeout: float = 30) -> bool:
        return wait_for(lambda: any(n == name for n, _ in self.records), timeout)

    def join(self, timeout: float = 60) -> None:
        self.reader.join(timeout)
        assert not self.reader.is_alive(), "the chat stream did not end"

    @property
    def run_id(self) -> str:
        return self.head["X-Hermes-Run-Id"]


def test_approved_once_runs_the_command_and_shows_on_the_chat_stream(gateway: LiveGateway, tmp_path: Path) -> None:
    """W-14.3: the chat stream carries `hermes.approval.request` (chunk-shaped, Open WebUI status), the run
    waits, `approve` (= once) lets the command run, and `hermes.approval.responded` closes the status."""
    target = victim(tmp_path)
    chat = ChatStream(gateway, f"[danger] {target}")
    assert chat.wait_for("hermes.approval.request"), chat.records
    records, run_id = chat.records, chat.run_id
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
    chat.join()
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


def test_disconnect_while_waiting_denies(patient: LiveGateway, provider: ScriptedProvider, tmp_path: Path) -> None:
    """W-14.3, §14.2, §5.5: a chat stream (no key: a disconnect cancels its turn) whose client closes the
    connection while the approval waits: the turn settles `cancelled` long before Hermes' approval timeout, its
    events end the approval with `approval.responded` deny, and the command never runs."""
    target = victim(tmp_path)
    prompt = f"[danger] {target}"
    chat = ChatStream(patient, prompt, until="hermes.approval.request")
    chat.join(30)  # the client saw the request and hung up
    run_id = chat.run_id
    assert wait_for(lambda: status(patient, run_id) == "cancelled", 15), run_events(patient, run_id)
    events = run_events(patient, run_id)
    names = [e["event"] for e in events]
    assert names[-1] == "run.cancelled", names
    approvals = [e for e in events if e["event"].startswith("approval.")]
    assert [e["event"] for e in approvals] == ["approval.request", "approval.responded"]
    assert approvals[-1]["choice"] == "deny"
    time.sleep(1.0)  # a command let through late would be gone by now
    assert (target / "keep.txt").exists()
    assert len(provider.calls(marker=prompt)) == 1  # the agent did not go on after the interrupt


def test_drain_while_waiting_denies(host: str, hermes_home: HomeFactory, tmp_path: Path) -> None:
    """W-14.3, §14.2: SIGTERM (a drain) while the approval waits: the gateway exits within its drain grace —
    the waiting request is denied, not left to Hermes' approval timeout — and the command never runs. The run
    has an Idempotency-Key, so its journal outlives the process: after a restart it ends `approval.responded`
    deny, `run.cancelled`."""
    home = home_with_approvals(hermes_home, PATIENT_TIMEOUT_S)
    live = start(host, home)
    try:
        target = victim(tmp_path)
        run_id = submit_run(live, target, {"Idempotency-Key": f"drain-{uuid.uuid4().hex}"})
        started = time.monotonic()
        code = live.stop(timeout=DRAIN_GRACE_S + 20)
        took = time.monotonic() - started
    finally:
        live.stop(signal.SIGKILL)
    # hermes-agent exits 1 after a signal-initiated shutdown on purpose (so systemd's Restart=on-failure revives it)
    assert code == (1 if host == "hermes gateway" else 0), live.output()[-3000:]
    assert took < DRAIN_GRACE_S, f"the drain waited {took:.1f} s for the approval\n{live.output()[-3000:]}"
    time.sleep(1.0)
    assert (target / "keep.txt").exists()

    again = start(host, home)
    try:
        events = run_events(again, run_id)
    finally:
        again.stop()
    names = [e["event"] for e in events]
    assert names[-1] == "run.cancelled", names
    approvals = [e for e in events if e["event"].startswith("approval.")]
    assert [e["event"] for e in approvals] == ["approval.request", "approval.responded"]
    assert approvals[-1]["choice"] == "deny"
    assert (target / "keep.txt").exists()


def test_session_approval_is_scoped_by_the_session_key(patient: LiveGateway, tmp_path: Path) -> None:
    """§1.6, §14.2: X-Hermes-Session-Key is the agent's approval session key. `session` on a turn sent with key
    k1 approves the pattern for k1: a later turn on k1 runs the same dangerous command without a request, a
    turn on another key k2 asks again (tools.approval keeps session approvals per approval session key)."""
    k1, k2 = (f"approvals-{name}-{uuid.uuid4().hex[:8]}" for name in ("k1", "k2"))

    first = victim(tmp_path)
    chat = ChatStream(patient, f"[danger] {first}", {"X-Hermes-Session-Key": k1})
    assert chat.wait_for("hermes.approval.request"), chat.records
    assert chat.head["X-Hermes-Session-Key"] == k1
    decided = post(patient, f"/v1/runs/{chat.run_id}/approval", {"choice": "session"})
    assert decided == (
        200,
        {"object": "hermes.run.approval_response", "run_id": chat.run_id, "choice": "session", "resolved": 1},
    )
    chat.join()
    assert not first.exists()

    second = victim(tmp_path)
    chat = ChatStream(patient, f"[danger] {second}", {"X-Hermes-Session-Key": k1})
    assert wait_for(lambda: chat.asked or not chat.reader.is_alive(), 30), chat.records
    asked = chat.asked
    if asked:  # let the turn end before failing
        post(patient, f"/v1/runs/{chat.run_id}/approval", {"choice": "deny"})
    chat.join()
    assert not asked, "a turn on the same X-Hermes-Session-Key asked again after a `session` approval"
    assert not second.exists()  # approved for the session: ran without asking
    names = [e["event"] for e in run_events(patient, chat.run_id)]
    assert "approval.request" not in names and names[-1] == "run.completed", names

    third = victim(tmp_path)
    chat = ChatStream(patient, f"[danger] {third}", {"X-Hermes-Session-Key": k2})
    assert chat.wait_for("hermes.approval.request"), chat.records  # another key: asked again
    assert (third / "keep.txt").exists()
    assert post(patient, f"/v1/runs/{chat.run_id}/approval", {"choice": "deny"})[0] == 200
    chat.join()
    assert (third / "keep.txt").exists()


def test_a_session_stream_carries_the_approval_events(patient: LiveGateway, tmp_path: Path) -> None:
    """W-14.3, §14.2: session chat streams carry `approval.request` and `approval.responded` as named events; the
    command waits for the decision and runs after `once`."""
    target = victim(tmp_path)
    session_id = f"approvals-{uuid.uuid4().hex[:8]}"
    assert post(patient, "/api/sessions", {"id": session_id})[0] == 201
    stream = ChatStream(
        patient, "", path=f"/api/sessions/{session_id}/chat/stream", body={"message": f"[danger] {target}"}
    )
    assert stream.wait_for("approval.request"), stream.records
    asked = next(d for n, d in stream.records if n == "approval.request")
    assert f"rm -rf {target}" in asked["command"] and asked["choices"][0] == "once" and asked["description"]
    assert (target / "keep.txt").exists()
    assert post(patient, f"/v1/runs/{stream.run_id}/approval", {"choice": "once"})[0] == 200
    stream.join()
    names = [n for n, _ in stream.records]
    assert names.index("approval.request") < names.index("approval.responded")
    assert next(d for n, d in stream.records if n == "approval.responded")["choice"] == "once"
    assert not target.exists()


def test_capabilities_report_approvals_on_the_hermes_runtime(gateway: LiveGateway) -> None:
    """W-14.5: `run_approval_response` and `approval_events` are true where approvals are served."""
    features = http(gateway, "GET", "/v1/capabilities")["features"]
    assert features["run_approval_response"] is True and features["approval_events"] is True
