"""The client's answers to a run's requests: POST /v1/runs/{run_id}/approval, the decision on a pending
dangerous-command approval (WIRE.md §14.2), POST /v1/runs/{run_id}/answer, the answer to a suspended run's
question, and POST /v1/runs/{run_id}/tool_outputs, the outputs of its client tool calls (§15.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import invalid_parameter, invalid_request
from .counts import MAX_TOOL_OUTPUTS
from .limits import ID_MAX, NAME_MAX, short
from .schema import Arr, Bool, Obj, Prop, Str

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


RUN_TOOL_OUTPUT = Obj(
    name="RunToolOutput",
    props=(
        Prop("call_id", short(ID_MAX, min_length=1), True, "The call_id of the run's pending client tool call"),
        Prop("output", Str(description="What the tool returned, as the agent reads it"), True),
    ),
)
RUN_TOOL_OUTPUTS_BODY = Obj(
    name="RunToolOutputsRequest",
    props=(Prop("outputs", Arr(RUN_TOOL_OUTPUT, min_items=1, max_items=MAX_TOOL_OUTPUTS), True),),
)


@dataclass(frozen=True)
class RunToolOutputs:
    outputs: tuple[tuple[str, str], ...]  # (call_id, output), in the order sent


def parse_run_tool_outputs(raw: dict[str, Any]) -> RunToolOutputs:
    """The outputs, each for its own call: a call_id given twice is 400 (which output would the agent get?)."""
    outputs = RUN_TOOL_OUTPUTS_BODY.check(raw, "")["outputs"]
    seen: set[str] = set()
    for i, item in enumerate(outputs):
        if item["call_id"] in seen:
            raise invalid_parameter(f"The call_id {item['call_id']!r} is given twice", f"outputs[{i}].call_id")
        seen.add(item["call_id"])
    return RunToolOutputs(tuple((item["call_id"], item["output"]) for item in outputs))
