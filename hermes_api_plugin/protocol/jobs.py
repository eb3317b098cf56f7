"""Cron job requests (WIRE §14.3, `/api/jobs…` and the `/api/cron/fire` webhook): hermes-agent 0.19.0's built-in
api_server is the reference for the fields, the update whitelist and the limits; errors are this project's (§1.7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import invalid_request, missing_parameter
from .limits import ID_MAX, NAME_MAX
from .params import Param
from .schema import Arr, Bool, Checked, Defs, Node, Obj, Prop, Str

MAX_NAME_LENGTH = 200
MAX_PROMPT_LENGTH = 5000
JOB_ID = Str(
    max_length=12,
    pattern=r"^[a-f0-9]{12}$",
    code="invalid_job_id",
    message="Invalid job ID format (12 lowercase hex digits)",
    description="A cron job id",
)
JOB_PATH = (Param("job_id", JOB_ID, "path"),)
LIST_QUERY = (Param("include_disabled", Bool(), default=False, description="List disabled jobs too"),)


@dataclass(frozen=True)
class PositiveInt(Node):
    """A JSON integer (not a boolean) of at least 1."""

    description: str = ""
    types = ("integer",)
    expected = "a positive integer"

    def check(self, value: Any, param: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.fail(param)
        return value

    def render(self, defs: Defs) -> dict[str, Any]:
        return self._described({"type": "integer", "minimum": 1})


def _stripped(node: Str, value: Any, param: str) -> str:
    """Upstream strips a create's name and schedule before it requires and measures them: blank is missing."""
    text = Str(message=f"'{param}' must be a string").check(value, param).strip()
    if not text:
        raise missing_parameter(param)
    checked: str = node.check(text, param)
    return checked


def _job_name(value: Any, param: str) -> str:
    return _stripped(_NAME, value, param)


def _job_schedule(value: Any, param: str) -> str:
    return _stripped(_SCHEDULE, value, param)


_NAME = Str(max_length=MAX_NAME_LENGTH)
_PROMPT = Str(max_length=MAX_PROMPT_LENGTH, description="The job's self-contained prompt (scanned for injection)")
_SCHEDULE = Str(max_length=NAME_MAX, description="'30m', 'every 2h', '0 9 * * *' or an ISO timestamp")
_DELIVER = Str(max_length=NAME_MAX, description="Where the output goes: 'local', 'origin' or a platform")
_SKILLS = Arr(Str(max_length=NAME_MAX), description="Skills loaded before the prompt, in order")
_REPEAT = PositiveInt(description="How many times to run (absent: forever)")

JOB_CREATE_BODY = Obj(
    name="JobCreate",
    props=(
        Prop("name", Checked(Str(min_length=1, max_length=MAX_NAME_LENGTH), _job_name), True),
        Prop(
            "schedule",
            Checked(Str(min_length=1, max_length=NAME_MAX, description=_SCHEDULE.description), _job_schedule),
            True,
        ),
        Prop("prompt", _PROMPT),
        Prop("deliver", _DELIVER),
        Prop("skills", _SKILLS),
        Prop("repeat", _REPEAT),
    ),
)
# The fields a PATCH may change (upstream's `_UPDATE_ALLOWED_FIELDS`); any other field is ignored, as upstream.
JOB_UPDATE_BODY = Obj(
    name="JobUpdate",
    props=(
        Prop("name", _NAME),
        Prop("schedule", _SCHEDULE),
        Prop("prompt", _PROMPT),
        Prop("deliver", _DELIVER),
        Prop("skills", _SKILLS),
        Prop("skill", Str(max_length=NAME_MAX, description="A single skill (legacy)")),
        Prop("repeat", _REPEAT),
        Prop("enabled", Bool()),
    ),
)
UPDATE_FIELDS = tuple(prop.name for prop in JOB_UPDATE_BODY.props)
# What the scheduler fires: any non-empty string, as upstream takes it (not held to the 12-hex form of the /api/jobs
# paths, so a job the store holds under another id still fires); an id the store does not hold is accepted, not run.
CRON_FIRE_BODY = Obj(
    name="CronFire",
    props=(
        Prop("job_id", Str(min_length=1, max_length=ID_MAX, description="The id of the cron job that is due"), True),
    ),
)


def parse_create(body: dict[str, Any]) -> dict[str, Any]:
    """The create call's fields (origin added by the route): upstream's defaults, skills only when non-empty."""
    checked = JOB_CREATE_BODY.check(body, "")
    fields = {
        "prompt": checked.get("prompt", ""),
        "schedule": checked["schedule"],
        "name": checked["name"],
        "deliver": checked.get("deliver", "local"),
    }
    if checked.get("skills"):
        fields["skills"] = checked["skills"]
    if "repeat" in checked:
        fields["repeat"] = checked["repeat"]
    return fields


def parse_update(body: dict[str, Any]) -> dict[str, Any]:
    """The whitelisted fields sent; none of them is 400."""
    checked = JOB_UPDATE_BODY.check(body, "")
    fields = {name: checked[name] for name in UPDATE_FIELDS if name in checked}
    if not fields:
        raise invalid_request(
            "missing_required_parameter", "No valid fields to update; send one of " + ", ".join(UPDATE_FIELDS)
        )
    return fields


def parse_fire(body: dict[str, Any]) -> str:
    """The job id of a fire: absent or null is 400 `missing_required_parameter`, not a non-empty string 400
    `invalid_parameter` (upstream answers both with a bare 400)."""
    job_id: str = CRON_FIRE_BODY.check(body, "")["job_id"]
    return job_id
