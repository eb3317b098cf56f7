"""A person's chat message as the answer to what a suspended turn waits for (WIRE.md §15.2), the same for chat
completions and session chat: while an approval waits, an approval command (`/approve …`, `/deny`, Hermes' plain
words) decides it and anything else denies it; while a question waits, the message is its answer; while a client tool
call waits, a message without its output leaves it without one. A message that answers nothing is a new turn.

The answer is decided from the turn's `required_action` alone — its journal's — so that a gateway that does not run
the turn decides it exactly as the owner would, then forwards it (W-15.4)."""

from __future__ import annotations

from ..core.events import ApprovalRequested, ClientRequest, QuestionAsked
from ..dialects.prompts import chosen
from ..protocol.approval_commands import approval_command, offered
from ..turns.answers import APPROVAL, DECLINE, QUESTION, ClientAnswer


def chat_answer(asked: ClientRequest | None, text: str) -> ClientAnswer:
    """`text` as the answer to `asked`, what a suspended turn waits for; DECLINE when it is none (the conversation
    moved on: the request resolves negatively and a dangerous command never runs unapproved)."""
    if isinstance(asked, QuestionAsked):
        return ClientAnswer(QUESTION, text=chosen(asked, text))
    if isinstance(asked, ApprovalRequested):
        command = approval_command(text)
        if command is not None:
            decided = offered(command, asked.choices)
            return ClientAnswer(APPROVAL, choice=decided.choice, resolve_all=decided.resolve_all)
    return ClientAnswer(DECLINE)
