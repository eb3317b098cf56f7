"""The approval commands a chat message may be (WIRE.md §15.2): the slash forms Hermes' messaging gateway takes —
`/approve`, `/approve session`, `/approve always`, `/approve all …`, `/deny`, `/deny all` — and the plain words it
takes while an approval is pending (`yes`, `ok`, `no`, …). Only a message sent while an approval is pending is read
as one: a conversational "yes" decides nothing otherwise."""

from __future__ import annotations

from dataclasses import dataclass

# Hermes' own word sets (gateway/run.py, the plain-text approval routing), matched on the whole message
APPROVE_WORDS = frozenset({"approve", "yes", "ok", "okay", "confirm", "y", "👍"})
DENY_WORDS = frozenset({"deny", "no", "reject", "cancel", "n", "👎"})
ALWAYS_WORDS = frozenset({"always", "approve always", "always approve"})
SESSION_WORDS = frozenset({"session", "approve session", "session approve"})
_ALWAYS_ARGS = frozenset({"always", "permanent", "permanently"})
_SESSION_ARGS = frozenset({"session", "ses"})


@dataclass(frozen=True)
class ApprovalCommand:
    """A decision typed in the chat: `choice` is once, session, always or deny; `resolve_all` decides every pending
    approval instead of the oldest."""

    choice: str
    resolve_all: bool = False


def approval_command(text: str) -> ApprovalCommand | None:
    """The decision a message states, or None when it is not an approval command."""
    said = " ".join(text.split()).lower()
    if said in APPROVE_WORDS:
        return ApprovalCommand("once")
    if said in DENY_WORDS:
        return ApprovalCommand("deny")
    if said in ALWAYS_WORDS:
        return ApprovalCommand("always")
    if said in SESSION_WORDS:
        return ApprovalCommand("session")
    verb, _, rest = said.partition(" ")
    args = rest.split()
    if verb == "/approve":
        resolve_all = "all" in args
        if any(a in _ALWAYS_ARGS for a in args):
            return ApprovalCommand("always", resolve_all)
        if any(a in _SESSION_ARGS for a in args):
            return ApprovalCommand("session", resolve_all)
        return ApprovalCommand("once", resolve_all)
    if verb == "/deny":  # what follows `all` is a reason, not a choice
        return ApprovalCommand("deny", bool(args) and args[0] == "all")
    return None


def offered(command: ApprovalCommand, choices: tuple[str, ...]) -> ApprovalCommand:
    """The command within what the request offers: a wider approval than Hermes allows (`always` where it forbids a
    permanent allow, anything but once after its smart approval refused) narrows to `once` — never wider."""
    if command.choice == "deny" or command.choice in choices or not choices:
        return command
    return ApprovalCommand("once", command.resolve_all)
