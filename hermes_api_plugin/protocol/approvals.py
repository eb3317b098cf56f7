"""The client's answers to a run's requests: POST /v1/runs/{run_id}/approval, the decision on a pending
dangerous-command approval (WIRE.md §14.2), and POST /v1/runs/{run_id}/answer, the answer to a suspended run's
question (§15.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import invalid_request
from .limits import NAME_MAX
from .schema import Bool, Obj, Prop, Str

CHOICES = ("once", "session", "always", "deny")
ALIASES = {"approve": "once", "approved": "once", "allow": "once"}  # as Hermes' own server accepts them

_CHOICE = Str(
    max_length=NAME_MAX,
    description="once | session | always | deny (approve, approved, allow mean once)",
    code="invalid_approval_choice",
    message="Invalid approval choice; expected one of: once, session, always, deny",
)
RUN_APPROVAL_BODY = Obj(
    name="RunApprovalRequest",
    props=(
        Prop("choice", _CHOICE, True),
        Prop("all", Bool(), description="Decide every pending request of the run, not only the oldest"),
        Prop("resolve_all", Bool(), description="Alias of `all`"),
    ),
)


@dataclass(frozen=True)
class RunApproval:
    choice: str
    resolve_all: bool


def invalid_approval_choice() -> Any:
    return invalid_request("invalid_approval_choice", _CHOICE.message or "", "choice")


def parse_run_approval(raw: dict[str, Any]) -> RunApproval:
    body = RUN_APPROVAL_BODY.check(raw, "")
    folded = body["choice"].strip().lower()
    choice = ALIASES.get(folded, folded)
    if choice not in CHOICES:
        raise invalid_approval_choice()
    return RunApproval(choice, bool(body.get("all")) or bool(body.get("resolve_all")))


RUN_ANSWER_BODY = Obj(
    name="RunAnswerRequest",
    props=(Prop("text", Str(description="The answer to the run's pending question"), True),),
)


@dataclass(frozen=True)
class RunAnswer:
    text: str


def parse_run_answer(raw: dict[str, Any]) -> RunAnswer:
    return RunAnswer(RUN_ANSWER_BODY.check(raw, "")["text"])
