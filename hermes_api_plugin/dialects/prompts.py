"""What a suspended turn says to a person in a chat (WIRE.md §15.2, §15.3): the approval question with the commands
that answer it, and the agent's question with its numbered options. Pure text, the same in every dialect that shows
a request as an assistant message (chat, session chat, a Responses question)."""

from __future__ import annotations

from ..core.events import ApprovalRequested, QuestionAsked

_HOW = {
    "once": "`/approve` to run it once",
    "session": "`/approve session` to allow it for the rest of this conversation",
    "always": "`/approve always` to always allow it",
    "deny": "`/deny` to refuse it",
}


def approval_prompt(asked: ApprovalRequested) -> str:
    """The approval question: the command (already redacted), Hermes' description, and how to answer."""
    offered = asked.choices or tuple(_HOW)
    ways = [_HOW[choice] for choice in _HOW if choice in offered or choice == "deny"]  # refusing is always possible
    how = f"{', '.join(ways[:-1])}, or {ways[-1]}" if len(ways) > 1 else ways[0]
    description = f"\n\n{asked.description}" if asked.description else ""
    return (
        "⚠️ The agent wants to run a command that needs your approval:\n\n"
        f"```\n{asked.command}\n```{description}\n\nReply {how}."
    )


def question_prompt(asked: QuestionAsked) -> str:
    """The agent's question and its options, numbered (an answer may be the number)."""
    options = "".join(f"\n{i}. {choice}" for i, choice in enumerate(asked.choices, 1))
    return f"{asked.question}\n{options}" if options else asked.question


def chosen(asked: QuestionAsked, answer: str) -> str:
    """The answer as the agent should read it: a number picks that option."""
    said = answer.strip()
    if said.isascii() and said.isdigit() and 1 <= int(said) <= len(asked.choices):
        return asked.choices[int(said) - 1]
    return answer
