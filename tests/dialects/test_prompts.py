"""What a suspended turn says in a chat (WIRE.md §15.2): the approval question names the command, Hermes'
description and only the answers the request offers; a question numbers its options and a number picks one."""

from __future__ import annotations

from hermes_api_plugin.core.events import ApprovalRequested, QuestionAsked
from hermes_api_plugin.dialects.prompts import approval_prompt, chosen, question_prompt


def test_the_approval_question_offers_what_hermes_allows() -> None:
    every = approval_prompt(ApprovalRequested("rm -rf x/", "recursive delete", ("once", "session", "always", "deny")))
    assert "```\nrm -rf x/\n```" in every and "recursive delete" in every
    assert all(word in every for word in ("`/approve`", "`/approve session`", "`/approve always`", "`/deny`"))
    narrow = approval_prompt(ApprovalRequested("rm -rf x/", "", ("once",)))
    assert "`/approve always`" not in narrow and "`/approve session`" not in narrow
    assert "`/deny`" in narrow  # refusing is always possible


def test_a_question_numbers_its_options_and_a_number_picks_one() -> None:
    asked = QuestionAsked("Which branch?", ("main", "release"))
    assert question_prompt(asked) == "Which branch?\n\n1. main\n2. release"
    assert question_prompt(QuestionAsked("Why?")) == "Why?"
    assert chosen(asked, " 2 ") == "release"
    assert chosen(asked, "3") == "3" and chosen(asked, "main please") == "main please"
    assert chosen(asked, "²") == "²"  # only ASCII digits pick
