"""The scripted runtime: replays a YAML script of reasoning / tool / text / commentary steps in real time.

Two steps suspend the turn for its client (WIRE.md §15.5): `approval: <command>` runs the `terminal` tool on a
dangerous command — approved, it "runs" (its result `Ran terminal: <command>`); denied or unanswered, it reports the
denial as the tool's error — and `question: <text>` asks; its answer (or `no answer`) replaces `{answer}` in the
text, final and commentary steps after it. A request that lends the agent function tools (and a `tool_choice` other
than `none`) makes the default turn — or any turn, when the choice requires a tool — call the first tool offered with
arguments valid for its schema (schema_example.py), then answer with the tool's output.

Offline default of the reference gateway, fixture of the tests, load generator of the benchmarks. It is
labelled `scripted` everywhere and never pretends to be a model.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..core.client_tools import AUTO, ClientTool
from ..core.events import TurnStatus, Usage
from .base import AgentTurn, Compaction, CompactionRequest, TurnResult
from .host_data import HostData
from .schema_example import example_arguments
from .scripted_summary import scripted_summary

STEP_KINDS = (
    "reasoning",
    "text",
    "commentary",
    "tool",
    "sleep",
    "fail",
    "exhaust_budget",
    "usage",
    "final",
    "compact",
    "approval",
    "question",
)
_TEXT_STEPS = ("reasoning", "text", "commentary", "fail", "exhaust_budget", "final", "compact", "approval", "question")
APPROVAL_CHOICES = ("once", "session", "always", "deny")
APPROVAL_DESCRIPTION = "dangerous command (scripted)"
NO_ANSWER = "no answer"  # what a question's answer reads as when none came (WIRE.md §15.1)


class ScriptError(ValueError):
    """The script file is missing or malformed; the message names the file and the step."""


@dataclass(frozen=True)
class ScriptTurn:
    match: re.Pattern[str] | None
    steps: tuple[Mapping[str, Any], ...]
    index: int


@dataclass(frozen=True)
class Script:
    path: Path
    chunk_chars: int
    delay_s: float
    execution_log: Path | None
    turns: tuple[ScriptTurn, ...]

    def pick(self, text: str) -> ScriptTurn | None:
        for turn in self.turns:
            if turn.match is None or turn.match.search(text):
                return turn
        return None


def default_script_path() -> Path:
    """The bundled demo script: packaged copy in a wheel, `config/` in a source checkout."""
    packaged = resources.files("hermes_api_plugin").joinpath("_data/demo-script.yaml")
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "config" / "demo-script.yaml"


def _check_step(step: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(step, Mapping) or len(step) != 1:
        raise ScriptError(f"{where}: a step is a mapping with exactly one of {', '.join(STEP_KINDS)}")
    kind, value = next(iter(step.items()))
    if kind not in STEP_KINDS:
        raise ScriptError(f"{where}: unknown step {kind!r}; expected one of {', '.join(STEP_KINDS)}")
    if kind in _TEXT_STEPS and not isinstance(value, str):
        raise ScriptError(f"{where}.{kind}: expected a string")
    if kind in ("approval", "question") and not value.strip():
        raise ScriptError(f"{where}.{kind}: expected a non-empty string")
    if kind == "sleep" and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
        raise ScriptError(f"{where}.sleep: expected a non-negative number of seconds")
    if kind == "tool":
        if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
            raise ScriptError(f"{where}.tool: needs at least a string 'name'")
        seconds = value.get("seconds", 0)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ScriptError(f"{where}.tool.seconds: expected a non-negative number")
    if kind == "usage" and not isinstance(value, Mapping):
        raise ScriptError(f"{where}.usage: expected a mapping of prompt_tokens / completion_tokens")
    return step


def load_script(path: Path) -> Script:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read the script ({exc.strerror})") from exc
    except yaml.YAMLError as exc:
        raise ScriptError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(doc, Mapping) or not isinstance(doc.get("turns"), list) or not doc["turns"]:
        raise ScriptError(f"{path}: expected a mapping with a non-empty 'turns' list")
    options = doc.get("options") or {}
    if not isinstance(options, Mapping):
        raise ScriptError(f"{path}: 'options' must be a mapping")
    chunk = options.get("chunk_chars", 8)
    delay = options.get("delay_ms", 15)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ScriptError(f"{path}: options.chunk_chars must be a positive integer")
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or delay < 0:
        raise ScriptError(f"{path}: options.delay_ms must be a non-negative number")
    log = options.get("execution_log")
    turns: list[ScriptTurn] = []
    for i, raw in enumerate(doc["turns"]):
        where = f"{path}: turns[{i}]"
        if not isinstance(raw, Mapping) or not isinstance(raw.get("steps"), list):
            raise ScriptError(f"{where}: needs a 'steps' list")
        pattern = raw.get("match")
        try:
            compiled = re.compile(pattern, re.IGNORECASE) if pattern is not None else None
        except (re.error, TypeError) as exc:
            raise ScriptError(f"{where}.match: not a valid regular expression ({exc})") from exc
        steps = tuple(_check_step(step, f"{where}.steps[{j}]") for j, step in enumerate(raw["steps"]))
        turns.append(ScriptTurn(compiled, steps, i))
    return Script(
        path=path,
        chunk_chars=chunk,
        delay_s=float(delay) / 1000.0,
        execution_log=Path(log).expanduser() if isinstance(log, str) and log else None,
        turns=tuple(turns),
    )


class _Budget(Exception):
    """Internal: the script ended the turn early (fail / exhaust_budget)."""

    def __init__(self, outcome: TurnResult) -> None:
        self.outcome = outcome


class ScriptedRuntime:
    """Plays the first matching script turn; interrupt cancels the playback within one event-loop tick."""

    name = "scripted"
    host_data: HostData | None = None  # a script has no skills, toolsets or inventory of its own

    def __init__(self, script: Script) -> None:
        self.script = script

    def providers(self) -> frozenset[str]:
        return frozenset()

    def session_store(self, profile_home: Path | None = None) -> None:
        return None  # no host: the plugin's own session tables

    def forget_conversation(self, session_id: str, profile_home: Path | None = None) -> None:
        return None  # a script keeps nothing per conversation

    def warm_agents(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def compact(self, request: CompactionRequest) -> Compaction:
        return scripted_summary(request.messages, request.system_prompt)  # no model: pure, instant

    async def model_inventory(self, refresh: bool) -> list[dict[str, Any]] | None:
        return None  # no host inventory: api_server.model_options from config.yaml is the list

    async def run(self, turn: AgentTurn) -> TurnResult:
        loop = asyncio.get_running_loop()
        playback = asyncio.ensure_future(self._play(turn))

        def stop() -> None:
            loop.call_soon_threadsafe(playback.cancel)

        turn.on_interrupt(stop)
        try:
            return await playback
        except asyncio.CancelledError:
            if playback.cancelled() and turn.interrupted:
                return TurnResult(TurnStatus.CANCELLED, error_code="cancelled")
            raise

    async def _play(self, turn: AgentTurn) -> TurnResult:
        request = turn.request
        script_turn = self.script.pick(request.input.text)
        if self.script.execution_log is not None:
            await asyncio.to_thread(self._log_execution, turn, script_turn)
        offered = request.tool_choice.offered(request.client_tools)
        if offered and (script_turn is None or script_turn.match is None or request.tool_choice.mode != AUTO):
            return await self._client_tool(turn, offered[0])
        if script_turn is None:
            return TurnResult(
                TurnStatus.FAILED, error_code="agent_error", error_message="The script has no turn for this input"
            )
        usage = Usage()
        answer: list[str] = []  # text since the last tool: the final answer
        replied: str | None = None  # the last question's answer: replaces {answer} in the steps after it
        try:
            for step in script_turn.steps:
                kind, value = next(iter(step.items()))
                if replied is not None and kind in ("text", "final", "commentary"):
                    value = value.replace("{answer}", replied)
                if kind == "usage":
                    usage = Usage(int(value.get("prompt_tokens", 0)), int(value.get("completion_tokens", 0)))
                elif kind == "reasoning":
                    await self.stream(value, turn.callbacks.reasoning)
                elif kind == "text":
                    await self.stream(value, turn.callbacks.text)
                    answer.append(value)
                elif kind == "final":
                    answer.append(value)  # returned as the final response, never streamed
                elif kind == "compact":
                    turn.callbacks.compaction(value)
                elif kind == "commentary":
                    if turn.callbacks.commentary is not None:
                        turn.callbacks.commentary(value, False)
                elif kind == "tool":
                    answer.clear()
                    await self._tool(turn, value)
                elif kind == "approval":
                    answer.clear()
                    await self._approval(turn, value)
                elif kind == "question":
                    given = await turn.suspensions.question(value)
                    replied = given if given is not None else NO_ANSWER
                elif kind == "sleep":
                    await asyncio.sleep(float(value))
                elif kind == "fail":
                    raise _Budget(TurnResult(TurnStatus.FAILED, "".join(answer) or None, usage, "agent_error", value))
                elif kind == "exhaust_budget":
                    await self.stream(value, turn.callbacks.text)
                    answer.append(value)
                    raise _Budget(
                        TurnResult(TurnStatus.INCOMPLETE, "".join(answer), usage, "iteration_budget_exhausted")
                    )
        except _Budget as stop:
            return stop.outcome
        return TurnResult(TurnStatus.COMPLETED, "".join(answer), usage)

    async def stream(self, text: str, callback: Any) -> None:
        """Play `text` to `callback` in the script's chunks, at its pace: after each chunk the script's delay, and a
        turn of the event loop even when that is 0 (other streams and the turn's own delivery run between chunks)."""
        size = self.script.chunk_chars
        for start in range(0, len(text), size):
            if callback is not None:
                callback(text[start : start + size])
            await asyncio.sleep(self.script.delay_s)
        if callback is not None and text:
            await asyncio.sleep(0)

    async def _tool(self, turn: AgentTurn, spec: Mapping[str, Any]) -> None:
        call_id = spec.get("id", f"call_{uuid.uuid4().hex[:24]}")
        name = spec["name"]
        args = spec.get("args", {})
        turn.callbacks.tool_start(call_id, name, args)
        if spec.get("unfinished"):
            return  # still running when the next steps (e.g. fail, exhaust_budget) end the turn
        await asyncio.sleep(float(spec.get("seconds", 0)))
        turn.callbacks.tool_complete(call_id, name, spec.get("result", ""), bool(spec.get("is_error", False)))

    async def _client_tool(self, turn: AgentTurn, tool: ClientTool) -> TurnResult:
        """Call a tool the client lent the agent and answer with its output (WIRE.md §15.5)."""
        await self.stream(f"The client lent me {tool.name}; calling it.", turn.callbacks.reasoning)
        arguments = json.dumps(example_arguments(tool.parameters), ensure_ascii=False, separators=(",", ":"))
        output = await turn.suspensions.tool_call(f"call_{uuid.uuid4().hex[:24]}", tool.name, arguments)
        answer = f"{tool.name} returned: {output}" if output is not None else f"{tool.name} gave no output."
        await self.stream(answer, turn.callbacks.text)
        return TurnResult(TurnStatus.COMPLETED, answer)

    async def _approval(self, turn: AgentTurn, command: str) -> None:
        """A dangerous command: the terminal tool waits for its approval, as Hermes' guard does inside the tool."""
        call_id = f"call_{uuid.uuid4().hex[:24]}"
        turn.callbacks.tool_start(call_id, "terminal", {"command": command})
        choice = await turn.suspensions.approval(command, APPROVAL_DESCRIPTION, APPROVAL_CHOICES)
        if choice == "deny":
            turn.callbacks.tool_complete(call_id, "terminal", f"Command denied: {command}", True)
        else:
            turn.callbacks.tool_complete(call_id, "terminal", f"Ran terminal: {command}", False)

    def _log_execution(self, turn: AgentTurn, script_turn: ScriptTurn | None) -> None:
        request = turn.request
        record = {
            "turn_id": request.turn_id,
            "matched_turn": None if script_turn is None else script_turn.index,
            "started_at": time.time(),
            "session_id": request.session_id,
            "input": request.input.to_json(),
            "history": [m.to_json() for m in request.history],
            "system_prompt": request.system_prompt,
            "model": request.model,
            "provider": request.provider,
            "reasoning_enabled": request.reasoning_enabled,
            "reasoning_effort": request.reasoning_effort,
            "max_iterations": request.max_iterations,
        }
        assert self.script.execution_log is not None
        self.script.execution_log.parent.mkdir(parents=True, exist_ok=True)
        with self.script.execution_log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
