"""The approval commands a chat message may be (WIRE.md §15.2): Hermes' slash forms and plain words, and a choice
narrowed to what the request offers."""

from __future__ import annotations

import pytest

from hermes_api_plugin.protocol.approval_commands import ApprovalCommand, approval_command, offered


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/approve", ApprovalCommand("once")),
        ("  /APPROVE  ", ApprovalCommand("once")),
        ("/approve session", ApprovalCommand("session")),
        ("/approve always", ApprovalCommand("always")),
        ("/approve all", ApprovalCommand("once", True)),
        ("/approve all session", ApprovalCommand("session", True)),
        ("/approve permanently", ApprovalCommand("always")),
        ("/deny", ApprovalCommand("deny")),
        ("/deny all too risky", ApprovalCommand("deny", True)),
        ("/deny not now", ApprovalCommand("deny")),
        ("yes", ApprovalCommand("once")),
        ("OK", ApprovalCommand("once")),
        ("👍", ApprovalCommand("once")),
        ("no", ApprovalCommand("deny")),
        ("Cancel", ApprovalCommand("deny")),
        ("approve   always", ApprovalCommand("always")),
        ("session approve", ApprovalCommand("session")),
    ],
)
def test_hermes_commands_and_plain_words_decide(text: str, expected: ApprovalCommand) -> None:
    assert approval_command(text) == expected


@pytest.mark.parametrize("text", ["yes please delete it", "hello", "/approved", "", "/denyall", "no way"])
def test_anything_else_is_no_command(text: str) -> None:
    assert approval_command(text) is None


def test_a_wider_choice_than_offered_narrows_to_once_never_widens() -> None:
    after_smart_deny = ("once", "deny")
    assert offered(ApprovalCommand("always", True), after_smart_deny) == ApprovalCommand("once", True)
    assert offered(ApprovalCommand("session"), ("once", "session", "deny")) == ApprovalCommand("session")
    assert offered(ApprovalCommand("deny"), ("once",)) == ApprovalCommand("deny")
    assert offered(ApprovalCommand("always"), ()) == ApprovalCommand("always")  # nothing stated: as asked
