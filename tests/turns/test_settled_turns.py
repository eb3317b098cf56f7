"""What a settled turn keeps in memory (issue 20, defect 2): the request's history and inputs are released at settle,
and the settled turns kept readable are bounded by count, by estimated bytes and by age, oldest out first."""

from __future__ import annotations

import asyncio
import gc
import weakref
from dataclasses import replace

from hermes_api_plugin.core.content import Message, TextPart
from hermes_api_plugin.core.events import ReasoningDelta, StatusChanged, TextDelta, TurnFinished, TurnStatus
from hermes_api_plugin.runtimes.base import AgentTurn, TurnResult
from hermes_api_plugin.runtimes.scripted import ScriptedRuntime, load_script
from hermes_api_plugin.turns import SettledTurn, Turn, TurnRegistry
from hermes_api_plugin.turns.journal import EVENT_BYTES, journal_bytes
from hermes_api_plugin.turns.recent import RECENT_S, RecentTurns
from hermes_api_plugin.turns.settled import SETTLED_TURN_BYTES
from hermes_api_plugin.turns.transcripts import session_transcripts
from tests.helpers import kept_record, wait_for_async
from tests.turns.support import SCRIPT, gateway_hooks, open_store, request, started


class Clock:
    """An injected monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Answering(ScriptedRuntime):
    """Answers every turn with `answer` (its journal's size is known), without the script's pauses."""

    def __init__(self, answer: str = "ok") -> None:
        super().__init__(load_script(SCRIPT))
        self.answer = answer

    async def run(self, turn: AgentTurn) -> TurnResult:
        turn.callbacks.text(self.answer)
        return TurnResult(TurnStatus.COMPLETED, self.answer)


async def _registry(runtime: ScriptedRuntime, clock: Clock, **bounds: int) -> TurnRegistry:
    return TurnRegistry(
        runtime,
        session_transcripts(await open_store()),
        gateway_hooks(),
        max_concurrent=10,
        recent=RecentTurns(**bounds, clock=clock),
    )


async def _settle(reg: TurnRegistry, run: str, **admit: object) -> SettledTurn:
    turn = started(reg.admit(request("hello", run=run), **admit))  # type: ignore[arg-type]
    await asyncio.wait_for(turn.wait(), 5)
    return await kept_record(reg, run)


async def test_issue20_defect2_a_settled_turn_lets_go_of_the_request_history_inputs_and_persister() -> None:
    """The client's history, the turn's input messages and the surface's persister (whose closure holds the parsed
    request) are released once the turn settled and its settlement is stored; ids, session, model and the journal
    stay for the runs that read it."""

    class Heavy:
        """Something only the persistence of the turn holds (a stored Response's input items, a chat's history)."""

    heavy = Heavy()
    held_by_closure = weakref.ref(heavy)
    history = tuple(
        Message("user" if i % 2 == 0 else "assistant", (TextPart(f"m{i} " + "x" * 100),)) for i in range(500)
    )
    persisted: list[str] = []

    async def persist(turn: Turn, finished: TurnFinished, kept: Heavy = heavy) -> None:
        persisted.append(turn.run_id)

    reg = await _registry(Answering(), Clock())
    base = request("hello", run="run_h")
    held = reg.admit(replace(base, history=history, model="m1"), inputs=(*history, base.input), persist=persist)
    del heavy, persist  # only the turn holds them now
    turn = started(held)
    await asyncio.wait_for(turn.wait(), 5)
    await wait_for_async(lambda: reg.get("run_h") is None, what="the turn leaving the registry")
    assert persisted == ["run_h"]
    kept = await kept_record(reg, "run_h")
    assert kept.journal is turn.journal and kept.unstored is None, "a settled run stays readable"
    assert (kept.session_id, kept.model, kept.run_id, kept.status) == ("s1", "m1", "run_h", TurnStatus.COMPLETED)
    assert turn.request.history == () and turn.inputs == () and turn.history is None and turn.persist is None
    assert turn.request.input.parts == ()
    assert (turn.request.session_id, turn.request.model, turn.run_id) == ("s1", "m1", "run_h")
    assert turn.status is TurnStatus.COMPLETED and any(isinstance(e, TextDelta) for e in turn.journal.events)
    gc.collect()
    assert held_by_closure() is None, "the settled turn still holds its persister's request"


async def test_issue20_defect2_settled_turns_are_bounded_by_count_oldest_out_first() -> None:
    clock = Clock()
    reg = await _registry(Answering(), clock, max_count=2)
    for n in range(3):
        await _settle(reg, f"run_{n}")
        clock.now += 1
    assert reg.find("run_0") is None, "the oldest settled turn is evicted past the count"
    assert reg.find("run_1") is not None and reg.find("run_2") is not None
    assert reg.recent.usage()[0] == 2


async def test_issue20_defect2_settled_turns_are_bounded_by_their_journals_bytes() -> None:
    answer = "y" * 10_000
    clock = Clock()
    one = await _registry(Answering(answer), clock)
    weight = (await _settle(one, "run_w")).weight()
    assert weight >= SETTLED_TURN_BYTES + len(answer) + EVENT_BYTES, "the journal's text is counted"
    reg = await _registry(Answering(answer), clock, max_bytes=weight * 3)
    for n in range(5):
        await _settle(reg, f"run_{n}")
    kept, size = reg.recent.usage()
    assert kept == 3 and size <= weight * 3
    assert [reg.find(f"run_{n}") is not None for n in range(5)] == [False, False, True, True, True]


async def test_issue20_defect2_settled_turns_expire_after_an_hour() -> None:
    clock = Clock()
    reg = await _registry(Answering(), clock)
    await _settle(reg, "run_old")
    clock.now += RECENT_S - 1
    assert reg.find("run_old") is not None
    clock.now += 2
    assert reg.find("run_old") is None and reg.recent.usage() == (0, 0)


def test_journal_bytes_counts_each_event_and_its_text() -> None:
    events = [TextDelta("abc"), ReasoningDelta("boom"), StatusChanged(TurnStatus.RUNNING)]
    assert journal_bytes(events) == 3 * EVENT_BYTES + len("abc") + len("boom") + len("running")
