"""A client's answer to a suspended turn's request, as the turn's owner applies it (WIRE.md §14.2, §15.1, §15.4):
from its own `POST /v1/runs/{id}/approval` / `/answer` / `/tool_outputs`, or forwarded by another gateway through
the store's feed (cluster/remote_turns.py). Either way the same function decides, on the gateway that runs the turn,
so a forwarded decision is exactly as authorised — and a keyed one exactly as idempotent — as a local one.

An approval goes to the turn's `ApprovalGate`: its runtime's own while a Hermes turn runs (its held approvals), else
the turn's suspensions; a question's answer and client tool outputs to the suspensions. The keys live with the turn's
suspensions. Tool outputs apply all or nothing: when any of their call ids is not pending, none is returned (the
client learns of it, 409 `tool_call_not_pending`, and can send what is still pending again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .suspension import Keyed
from .turn import Turn

APPROVAL = "approval"
QUESTION = "question"
TOOL_OUTPUTS = "tool_outputs"
KINDS = (APPROVAL, QUESTION, TOOL_OUTPUTS)


@dataclass(frozen=True)
class ClientAnswer:
    """An approval decision (`kind` APPROVAL: `choice`, `resolve_all`), a question's answer (QUESTION: `text`) or the
    outputs of client tool calls (TOOL_OUTPUTS: `outputs`, (call_id, output) pairs)."""

    kind: str
    choice: str = ""
    resolve_all: bool = False
    text: str = ""
    outputs: tuple[tuple[str, str], ...] = ()
    key: str | None = None  # the request's Idempotency-Key


def apply_answer(turn: Turn, answer: ClientAnswer) -> tuple[Keyed, int]:
    """Apply `answer` to the turn once per key; how many requests it resolved (0: nothing of its kind pending)."""
    suspensions = turn.suspensions
    if answer.kind == APPROVAL:
        gate = turn.agent_turn.approvals or suspensions
        given = f"{answer.choice} {answer.resolve_all}"
        return suspensions.keyed(answer.key, given, lambda: gate.resolve(answer.choice, answer.resolve_all))
    if answer.kind == TOOL_OUTPUTS:
        given = json.dumps(answer.outputs, ensure_ascii=False, separators=(",", ":"))
        return suspensions.keyed(answer.key, given, lambda: _return_outputs(turn, answer.outputs))
    return suspensions.keyed(answer.key, answer.text, lambda: int(suspensions.answer(answer.text)))


def _return_outputs(turn: Turn, outputs: tuple[tuple[str, str], ...]) -> int:
    """Every output to its pending call, or none when one of the calls is not pending: how many were returned."""
    suspensions = turn.suspensions
    pending = set(suspensions.pending_calls())
    if not outputs or any(call_id not in pending for call_id, _ in outputs):
        return 0
    return sum(suspensions.tool_output(call_id, output) for call_id, output in outputs)
