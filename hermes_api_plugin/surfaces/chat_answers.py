"""A person's chat message as the answer to what a suspended turn waits for (WIRE.md §15.2), the same for chat
completions and session chat: while an approval waits, an approval command (`/approve …`, `/deny`, Hermes' plain
words) decides it and anything else denies it; while a question waits, the message is its answer; while a client tool
call waits, a message without its output leaves it without one. A message that answers nothing is a new turn."""

from __future__ import annotations

from ..core.events import ApprovalRequested, QuestionAsked
from ..dialects.prompts import chosen
from ..protocol.approval_commands import approval_command, offered
from ..submission.submit import Resume
from ..turns import Turn


def chat_answer(turn: Turn, text: str) -> Resume | None:
    """`text` as the answer to what `turn` waits for; None — after resolving that negatively — when it is none (the
    conversation moved on: a dangerous command never runs unapproved)."""
    asked = turn.required_action
    suspensions = turn.suspensions
    if isinstance(asked, QuestionAsked):
        return Resume(turn, lambda: int(suspensions.answer(chosen(asked, text))))
    if isinstance(asked, ApprovalRequested):
        command = approval_command(text)
        gate = turn.agent_turn.approvals or suspensions
        if command is not None:
            decided = offered(command, asked.choices)
            return Resume(turn, lambda: gate.resolve(decided.choice, decided.resolve_all))
        gate.resolve("deny", True)
    suspensions.decline()
    return None
