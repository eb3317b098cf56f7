"""The scripted runtime: script loading, matching, step kinds, timing, interrupt, execution log."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from hermes_api_plugin.core.content import Message, TextPart
from hermes_api_plugin.core.events import TurnStatus
from hermes_api_plugin.runtimes.base import AgentTurn, TurnRequest
from hermes_api_plugin.runtimes.scripted import (
    ScriptedRuntime,
    ScriptError,
    default_script_path,
    load_script,
)
from tests.helpers import RecordingSink, wait_for_async


def make_turn(text: str) -> tuple[AgentTurn, RecordingSink]:
    sink = RecordingSink()
    turn = AgentTurn(TurnRequest(turn_id="run_t", session_id="s", input=Message("user", (TextPart(text),))), sink)
    return turn, sink


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(body, encoding="utf-8")
    return path


async def test_demo_script_shows_reasoning_tool_and_text_for_use_tool() -> None:
    runtime = ScriptedRuntime(load_script(default_script_path()))
    turn, sink = make_turn("please use tool now")
    outcome = await runtime.run(turn)
    kinds = [c[0] for c in sink.calls]
    assert "reasoning" in kinds and "tool_start" in kinds and "tool_complete" in kinds and "text" in kinds
    assert kinds.index("reasoning") < kinds.index("tool_start") < kinds.index("text")
    assert outcome.status is TurnStatus.COMPLETED
    other, sink2 = make_turn("hello")
    await runtime.run(other)
    assert {c[0] for c in sink2.calls} == {"reasoning", "text"}


async def test_text_is_cut_into_chunk_chars_deltas(tmp_path: Path) -> None:
    script = load_script(
        write(tmp_path, "options: {chunk_chars: 4, delay_ms: 0}\nturns: [{steps: [{text: 'abcdefghij'}]}]\n")
    )
    turn, sink = make_turn("x")
    outcome = await ScriptedRuntime(script).run(turn)
    assert [c[1] for c in sink.calls] == ["abcd", "efgh", "ij"]
    assert outcome.final_text == "abcdefghij"


async def test_delay_between_deltas_is_real(tmp_path: Path) -> None:
    script = load_script(
        write(tmp_path, "options: {chunk_chars: 1, delay_ms: 20}\nturns: [{steps: [{text: 'abcde'}]}]\n")
    )
    turn, _ = make_turn("x")
    started = time.monotonic()
    await ScriptedRuntime(script).run(turn)
    assert time.monotonic() - started >= 0.09


async def test_first_matching_turn_wins_case_insensitively(tmp_path: Path) -> None:
    script = load_script(
        write(
            tmp_path,
            """
turns:
  - {match: "alpha", steps: [{text: A}]}
  - {match: "ALPHA|beta", steps: [{text: B}]}
  - {steps: [{text: D}]}
""",
        )
    )
    assert script.pick("say Alpha").index == 0
    assert script.pick("BETA").index == 1
    assert script.pick("gamma").index == 2


async def test_fail_and_exhaust_budget_outcomes(tmp_path: Path) -> None:
    script = load_script(
        write(
            tmp_path,
            """
options: {delay_ms: 0}
turns:
  - {match: fail, steps: [{text: "diag "}, {fail: "broke"}, {text: never}]}
  - {match: budget, steps: [{tool: {name: t, seconds: 0}}, {exhaust_budget: "summary"}, {usage: {prompt_tokens: 5, completion_tokens: 6}}]}
""",
        )
    )
    runtime = ScriptedRuntime(script)
    failed = await runtime.run(make_turn("fail")[0])
    assert failed.status is TurnStatus.FAILED and failed.error_message == "broke" and failed.error_code == "agent_error"
    turn, sink = make_turn("budget")
    incomplete = await runtime.run(turn)
    assert incomplete.status is TurnStatus.INCOMPLETE and incomplete.error_code == "iteration_budget_exhausted"
    assert incomplete.final_text == "summary" and ("text", "summa") not in sink.calls
    assert "".join(c[1] for c in sink.calls if c[0] == "text") == "summary"


async def test_tool_step_reports_args_result_and_error(tmp_path: Path) -> None:
    script = load_script(
        write(
            tmp_path,
            """
options: {delay_ms: 0}
turns: [{steps: [{tool: {name: terminal, args: {command: ls}, result: out, seconds: 0.01, is_error: true}}]}]
""",
        )
    )
    turn, sink = make_turn("x")
    await ScriptedRuntime(script).run(turn)
    assert sink.calls == [("tool_start", "terminal", {"command": "ls"}), ("tool_complete", "terminal", "out", True)]


async def test_interrupt_stops_playback_within_100ms(tmp_path: Path) -> None:
    script = load_script(write(tmp_path, "turns: [{steps: [{sleep: 30}, {text: never}]}]\n"))
    turn, sink = make_turn("x")
    task = asyncio.create_task(ScriptedRuntime(script).run(turn))
    await asyncio.sleep(0.05)
    started = time.monotonic()
    turn.interrupt()
    outcome = await asyncio.wait_for(task, 1)
    assert time.monotonic() - started < 0.1
    assert outcome.status is TurnStatus.CANCELLED
    assert sink.calls == []


async def test_interrupt_from_another_thread(tmp_path: Path) -> None:
    script = load_script(write(tmp_path, "turns: [{steps: [{tool: {name: t, seconds: 30}}]}]\n"))
    turn, sink = make_turn("x")
    task = asyncio.create_task(ScriptedRuntime(script).run(turn))
    await wait_for_async(lambda: sink.calls, what="the tool start")  # the 30 s tool runs
    await asyncio.to_thread(turn.interrupt)
    assert (await asyncio.wait_for(task, 1)).status is TurnStatus.CANCELLED


async def test_execution_log_gets_one_line_per_turn(tmp_path: Path) -> None:
    log = tmp_path / "exec.jsonl"
    script = load_script(
        write(
            tmp_path,
            f"options: {{execution_log: '{log}', delay_ms: 0}}\nturns: [{{match: a, steps: [{{text: x}}]}}, {{steps: [{{text: y}}]}}]\n",
        )
    )
    runtime = ScriptedRuntime(script)
    await runtime.run(make_turn("a")[0])
    await runtime.run(make_turn("b")[0])
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["matched_turn"] for line in lines] == [0, 1]
    assert lines[0]["turn_id"] == "run_t" and lines[0]["input"]["content"] == [{"type": "text", "text": "a"}]
    assert isinstance(lines[0]["started_at"], float)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("turns: []\n", "non-empty 'turns'"),
        ("turns: [{steps: [{dance: 1}]}]\n", "unknown step 'dance'"),
        ("turns: [{steps: [{text: 5}]}]\n", "turns[0].steps[0].text"),
        ("turns: [{match: '(', steps: []}]\n", "turns[0].match"),
        ("options: {chunk_chars: 0}\nturns: [{steps: []}]\n", "chunk_chars"),
        ("turns: [{steps: [{tool: {args: {}}}]}]\n", "tool"),
        ("turns: [{steps: [{sleep: -1}]}]\n", "sleep"),
        ("turns: [{steps: [{approval: {command: ls}}]}]\n", "turns[0].steps[0].approval: expected a string"),
        ("turns: [{steps: [{question: ' '}]}]\n", "turns[0].steps[0].question: expected a non-empty string"),
        (":\n  - [", "not valid YAML"),
    ],
)
def test_malformed_scripts_are_rejected_with_the_place(tmp_path: Path, body: str, fragment: str) -> None:
    with pytest.raises(ScriptError, match=None) as err:
        load_script(write(tmp_path, body))
    assert fragment in str(err.value)


def test_missing_script_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="missing.yaml"):
        load_script(tmp_path / "missing.yaml")


async def test_suspending_steps_resolve_negatively_without_a_client(tmp_path: Path) -> None:
    """WIRE §15.5 with no registry (nothing can answer): the approval is denied — the terminal tool reports the
    denial as its error, the command never runs — and the question's `{answer}` reads `no answer`."""
    script = load_script(
        write(
            tmp_path,
            "options: {delay_ms: 0, chunk_chars: 100}\nturns: [{steps: [{approval: 'rm -rf build/'},"
            " {question: 'Which branch?'}, {text: 'Deploying {answer}.'}]}]\n",
        )
    )
    turn, sink = make_turn("go")
    result = await ScriptedRuntime(script).run(turn)
    assert result.status is TurnStatus.COMPLETED and result.final_text == "Deploying no answer."
    assert sink.calls == [
        ("tool_start", "terminal", {"command": "rm -rf build/"}),
        ("tool_complete", "terminal", "Command denied: rm -rf build/", True),
        ("text", "Deploying no answer."),
    ]
