"""A second plugin of the gateway contract, for the tests: it implements every hook and records each call.

In `hermes_api_agent_turn_start` it also does what the contract once invited a plugin to do — install its own
callbacks on the turn, after every other implementation (`trylast`) — so a test shows that nothing a plugin does
in a turn hook reaches the turn's stream (issue 21, part 5). With `fail` its turn hooks raise after recording.

The reference gateway loads it from the `hermes_api.plugins` entry-point group when a test puts a dist-info
naming `tests.gateway.observer_plugin:plugin` on the gateway's PYTHONPATH (`install_observer`); `plugin` then
appends its records as JSON lines to $HERMES_API_OBSERVER_LOG and fails when $HERMES_API_OBSERVER_FAIL is 1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hermes_api_plugin.hookspecs import Gateway, hookimpl
from hermes_api_plugin.runtimes.base import AgentTurn, TurnResult

LOG_ENV = "HERMES_API_OBSERVER_LOG"
FAIL_ENV = "HERMES_API_OBSERVER_FAIL"
ENTRY_POINT = "observer = tests.gateway.observer_plugin:plugin"
# The callback slots AgentTurn had until issue 21: a plugin written to that contract assigns them.
LEGACY_SLOTS = (
    "reasoning_callback",
    "stream_delta_callback",
    "tool_start_callback",
    "tool_complete_callback",
    "interim_assistant_callback",
    "compaction_callback",
    "approval_callback",
)


def _ignore(*_: Any) -> None:
    """The observer's own callback: it wants to see the events, and must not take them from the stream."""


class Observer:
    """Records every hook call as a dict (`hook` plus what it saw) in `calls`, and in `log` when given."""

    def __init__(self, log: Path | None = None, *, fail: bool = False) -> None:
        self.calls: list[dict[str, Any]] = []
        self.log = log
        self.fail = fail

    def _record(self, hook: str, **seen: Any) -> None:
        call = {"hook": hook, **seen}
        self.calls.append(call)
        if self.log is not None:
            with self.log.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(call) + "\n")

    def _maybe_fail(self, hook: str, turn: AgentTurn) -> None:
        if self.fail:  # with what the turn was asked: a plugin's error may quote user data (logs mask its secrets)
            raise RuntimeError(f"observer bug in {hook} on {turn.request.input.text!r}")

    @hookimpl
    def hermes_api_gateway_startup(self, gateway: Gateway) -> None:
        self._record("hermes_api_gateway_startup")

    @hookimpl
    def hermes_api_gateway_shutdown(self, gateway: Gateway) -> None:
        self._record("hermes_api_gateway_shutdown")

    @hookimpl(trylast=True)
    def hermes_api_agent_turn_start(self, turn: AgentTurn) -> None:
        self._record("hermes_api_agent_turn_start", turn_id=turn.request.turn_id, input=turn.request.input.text)
        for slot in LEGACY_SLOTS:
            setattr(turn, slot, _ignore)
        self._maybe_fail("hermes_api_agent_turn_start", turn)

    @hookimpl
    def hermes_api_agent_turn_end(self, turn: AgentTurn, outcome: TurnResult) -> None:
        self._record("hermes_api_agent_turn_end", turn_id=turn.request.turn_id, status=outcome.status.value)
        self._maybe_fail("hermes_api_agent_turn_end", turn)


def install_observer(where: Path) -> Path:
    """A dist-info under `where` that registers `plugin` in the `hermes_api.plugins` group; put `where` on the
    gateway's PYTHONPATH (with the repository root, for `tests`)."""
    info = where / "hermes_api_observer-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-api-observer\nVersion: 0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[hermes_api.plugins]\n{ENTRY_POINT}\n", encoding="utf-8")
    return where


def observer_env(where: Path, *, fail: bool = False) -> tuple[dict[str, str], Path]:
    """The environment of a reference gateway that loads `plugin` (installed under `where`), and the log it writes."""
    from tests.helpers import ROOT  # the repository, for `tests` (not imported by the gateway that loads `plugin`)

    site = install_observer(where / "site")
    path = os.pathsep.join(p for p in (str(site), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    log = where / "observer.jsonl"
    return {"PYTHONPATH": path, LOG_ENV: str(log), FAIL_ENV: "1" if fail else "0"}, log


_log = os.environ.get(LOG_ENV)
plugin = Observer(Path(_log) if _log else None, fail=os.environ.get(FAIL_ENV) == "1")
