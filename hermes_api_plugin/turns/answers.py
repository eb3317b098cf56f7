"""A client's answer to a suspended turn's request, as the turn's owner applies it (WIRE.md §14.2, §15.1, §15.4):
from its own `POST /v1/runs/{id}/approval` / `/answer`, or forwarded by another gateway through the store's feed
(cluster/remote_turns.py). Either way the same function decides, on the gateway that runs the turn, so a forwarded
decision is exactly as authorised — and a keyed one exactly as idempotent — as a local one.

An approval goes to the turn's `ApprovalGate`: its runtime's own while a Hermes turn runs (its held approvals), else
the turn's suspensions; a question's answer to the suspensions. The keys live with the turn's suspensions.
"""

from __future__ import annotations

from dataclasses import dataclass

from .suspension import Keyed
from .turn import Turn

APPROVAL = "approval"
QUESTION = "question"


@dataclass(frozen=True)
class ClientAnswer:
    """An approval decision (`kind` APPROVAL: `choice`, `resolve_all`) or a question's answer (QUESTION: `text`)."""

    kind: str
    choice: str = ""
    resolve_all: bool = False
    text: str = ""
    key: str | None = None  # the request's Idempotency-Key


def apply_answer(turn: Turn, answer: ClientAnswer) -> tuple[Keyed, int]:
    """Apply `answer` to the turn once per key; how many requests it resolved (0: nothing of its kind pending)."""
    suspensions = turn.suspensions
    if answer.kind == APPROVAL:
        gate = turn.agent_turn.approvals or suspensions
        given = f"{answer.choice} {answer.resolve_all}"
        return suspensions.keyed(answer.key, given, lambda: gate.resolve(answer.choice, answer.resolve_all))
    return suspensions.keyed(answer.key, answer.text, lambda: int(suspensions.answer(answer.text)))
