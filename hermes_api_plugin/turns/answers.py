"""A client's answer to a suspended turn's request, as the turn's owner applies it (WIRE.md §14.2, §15.1, §15.4):
from its own `POST /v1/runs/{id}/approval` / `/answer` / `/tool_outputs`, or forwarded by another gateway through
the store's feed (cluster/remote_turns.py). Either way the same function decides, on the gateway that runs the turn,
so a forwarded decision is exactly as authorised — and a keyed one exactly as idempotent — as a local one.

An approval goes to the turn's `ApprovalGate`: its runtime's own while a Hermes turn runs (its held approvals), else
the turn's suspensions; a question's answer and client tool outputs to the suspensions. The keys live with the turn's
suspensions. Tool outputs apply all or nothing: when any of their call ids is not pending, none is returned (the
client learns of it, 409 `tool_call_not_pending`, and can send what is still pending again).

Chat, session chat and Responses answer in their own dialect (WIRE.md §15.2, §15.3): the request's answer is decided
once from the turn's `required_action` and applied here alike, whether the turn runs on this gateway or another
(submission/submit.py); a request that answers nothing while its conversation's turn waits is a DECLINE.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..core.events import ApprovalRequested
from .suspension import Keyed
from .turn import Turn

APPROVAL = "approval"
QUESTION = "question"
TOOL_OUTPUTS = "tool_outputs"
DECLINE = "decline"  # the conversation moved on: every pending request resolves negatively (an approval: denied)
KINDS = (APPROVAL, QUESTION, TOOL_OUTPUTS, DECLINE)


@dataclass(frozen=True)
class ClientAnswer:
    """An approval decision (`kind` APPROVAL: `choice`, `resolve_all`), a question's answer (QUESTION: `text`), the
    outputs of client tool calls (TOOL_OUTPUTS: `outputs`, (call_id, output) pairs), or none of them: a request of the
    conversation that answers nothing the turn waits for (DECLINE: it resolves negatively, the request is a new
    turn). A chat or Responses request decides its answer once (surfaces/chat_answers.py, surfaces/responses.py), from
    the turn's `required_action`, and it is applied here — on this gateway, or forwarded to the one running it."""

    kind: str
    choice: str = ""
    resolve_all: bool = False
    text: str = ""
    outputs: tuple[tuple[str, str], ...] = ()
    key: str | None = None  # the request's Idempotency-Key
    # what the answering gateway's surface hands the turn's own with the answer (a Responses turn's new Response)
    handoff: Mapping[str, Any] | None = None


@runtime_checkable
class TakesOver(Protocol):
    """A turn's dialect state (`Turn.dialect_state`) that another gateway's delivery can take over: the gateway that
    took the answer delivers the rest of the turn as its own dialect object (a Responses turn's new Response), which the
    turn's own state then keeps — stores, ends at its next request, settles — as if the answer had come here."""

    def answered_elsewhere(self, turn: Turn, handoff: Mapping[str, Any]) -> None:
        """Make the delivery `handoff` describes the turn's current one, before the answer lets the turn go on."""
        ...


def apply_answer(turn: Turn, answer: ClientAnswer) -> tuple[Keyed, int]:
    """Apply `answer` to the turn once per key; how many requests it resolved (0: nothing of its kind pending)."""
    suspensions = turn.suspensions
    if answer.handoff is not None and isinstance(turn.dialect_state, TakesOver) and turn.required_action is not None:
        turn.dialect_state.answered_elsewhere(turn, answer.handoff)
    if answer.kind == APPROVAL:
        gate = turn.agent_turn.approvals or suspensions
        given = f"{answer.choice} {answer.resolve_all}"
        return suspensions.keyed(answer.key, given, lambda: gate.resolve(answer.choice, answer.resolve_all))
    if answer.kind == TOOL_OUTPUTS:
        given = json.dumps(answer.outputs, ensure_ascii=False, separators=(",", ":"))
        return suspensions.keyed(answer.key, given, lambda: _return_outputs(turn, answer.outputs))
    if answer.kind == DECLINE:
        return Keyed.APPLIED, _decline(turn)
    return suspensions.keyed(answer.key, answer.text, lambda: int(suspensions.answer(answer.text)))


def outputs_answer(pending: Collection[str], outputs: Mapping[str, str]) -> ClientAnswer:
    """The outputs a request returns for the calls among `pending` (its others answer no call that waits: ignored)."""
    return ClientAnswer(TOOL_OUTPUTS, outputs=tuple((c, o) for c, o in outputs.items() if c in pending))


def declined(answer: ClientAnswer) -> bool:
    """The answer resolves what the turn waits for negatively: the request that gave it is a new turn."""
    return answer.kind == DECLINE


def _decline(turn: Turn) -> int:
    """Resolve every pending request negatively: an approval the turn waits for is denied (a dangerous command never
    runs unapproved), a question gets no answer, a client tool call no output."""
    if isinstance(turn.required_action, ApprovalRequested):
        (turn.agent_turn.approvals or turn.suspensions).resolve("deny", True)
    return turn.suspensions.decline()


def _return_outputs(turn: Turn, outputs: tuple[tuple[str, str], ...]) -> int:
    """Every output to its pending call, or none when one of the calls is not pending: how many were returned."""
    suspensions = turn.suspensions
    pending = set(suspensions.pending_calls())
    if not outputs or any(call_id not in pending for call_id, _ in outputs):
        return 0
    return sum(suspensions.tool_output(call_id, output) for call_id, output in outputs)
