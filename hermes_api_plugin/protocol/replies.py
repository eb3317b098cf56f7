"""The shapes of the JSON replies, as schema nodes for `/openapi.json` (WIRE.md §3.2, §4.5, §6, §7, §8).

Replies are built by the routes and dialects; these nodes describe what every reply carries (required keys and
their types) and are checked against the live server by the schemathesis run (tests/fuzz), so a reply that
loses a key or changes a type fails CI. Objects are open: a reply may carry more than is listed here.
"""

from __future__ import annotations

from ..core.errors import ERROR_TYPES
from .params import IntText
from .schema import AnyJson, Arr, Bool, Num, Obj, Prop, Str

_INT = IntText(0)
_TEXT = Str()
_OBJECT = Obj(())
_SAMPLING = ("temperature", "top_p", "presence_penalty", "frequency_penalty")


ERROR = Obj(
    name="Error",
    props=(
        Prop(
            "error",
            Obj(
                (
                    Prop("message", _TEXT, True),
                    Prop("type", Str(enum=ERROR_TYPES), True),
                    Prop("param", _TEXT, True, nullable=True),
                    Prop("code", _TEXT, True, nullable=True),
                )
            ),
            True,
        ),
    ),
    description="The one error envelope (WIRE.md §1.7)",
)
HEALTH = Obj(
    name="Health",
    props=(Prop("status", Str(enum=("ok",)), True), Prop("platform", _TEXT, True), Prop("version", _TEXT)),
)
HEALTH_DETAILED = Obj(
    name="HealthDetailed",
    props=(
        Prop("status", Str(enum=("ok", "degraded")), True),
        Prop("gateway_state", _TEXT, True),
        Prop("active_agents", _INT, True),
        Prop(
            "api_server",
            Obj(
                (
                    Prop("turns", Obj((Prop("running", _INT, True), Prop("queued", _INT, True))), True),
                    Prop("slots", _OBJECT, True),
                    Prop(
                        "streams",
                        Obj(
                            (
                                Prop("open", _INT, True, "Streaming replies whose handler still runs"),
                                Prop("buffered_bytes", _INT, True, "Bytes written that their clients have not taken"),
                            )
                        ),
                        True,
                    ),
                    Prop("store", _OBJECT, True),
                    Prop(
                        "agents",
                        Obj(tuple(Prop(n, _INT, True) for n in ("cached", "leased", "hits", "misses", "evictions"))),
                        True,
                        "The hermes runtime's warm agents (null for a runtime that keeps none)",
                        nullable=True,
                    ),
                )
            ),
            True,
            "This server's own counts: turns in the registry, admitted slots, open streams, the store, warm agents",
        ),
    ),
    description="hermes-agent's detailed health, plus this server's counts",
)
MODELS = Obj(
    name="ModelList",
    props=(
        Prop("object", Str(enum=("list",)), True),
        Prop("data", Arr(Obj((Prop("id", _TEXT, True), Prop("object", Str(enum=("model",)), True)))), True),
    ),
)
MODEL_OPTIONS = Obj(
    name="ModelOptionsReply",
    props=(
        Prop("object", Str(enum=("hermes.model_options",)), True),
        Prop("current", _OBJECT, True),
        Prop("options", Arr(_OBJECT), True),
    ),
)
_SKILL = Obj((Prop("name", _TEXT, True), Prop("description", _TEXT), Prop("category", AnyJson())))
SKILLS = Obj(
    name="SkillList",
    props=(
        Prop("object", Str(enum=("list",)), True),
        Prop("data", Arr(_SKILL), True),
    ),
    description="hermes-agent's skill entries (name, description, category), as its built-in server lists them",
)
TOOLSETS = Obj(
    name="ToolsetList",
    props=(
        Prop("object", Str(enum=("list",)), True),
        Prop("platform", _TEXT, True),
        Prop(
            "data",
            Arr(
                Obj(
                    (
                        Prop("name", _TEXT, True),
                        Prop("label", _TEXT, True),
                        Prop("description", _TEXT, True),
                        Prop("enabled", Bool(), True),
                        Prop("configured", Bool(), True),
                        Prop("tools", Arr(_TEXT), True),
                    )
                )
            ),
            True,
        ),
    ),
)
CAPABILITIES = Obj(
    name="Capabilities",
    props=(
        Prop("object", Str(enum=("hermes.api_server.capabilities",)), True),
        Prop("features", _OBJECT, True),
        Prop("endpoints", _OBJECT, True, "Every named route: {name: {method, path}}"),
    ),
)
OPENAPI = Obj((Prop("openapi", _TEXT, True), Prop("paths", _OBJECT, True)))
_USAGE = Obj(())
_TOOL_CALL = Obj(
    name="ChatToolCall",
    props=(
        Prop("id", _TEXT, True),
        Prop("type", Str(enum=("function",)), True),
        Prop("function", Obj((Prop("name", _TEXT, True), Prop("arguments", _TEXT, True))), True),
    ),
)
CHAT_COMPLETION = Obj(
    name="ChatCompletion",
    props=(
        Prop("id", _TEXT, True),
        Prop("object", Str(enum=("chat.completion",)), True),
        Prop("model", _TEXT, True),
        Prop(
            "choices",
            Arr(
                Obj(
                    (
                        Prop("index", _INT, True),
                        Prop(
                            "message",
                            Obj(
                                (
                                    Prop("role", Str(enum=("assistant",)), True),
                                    Prop("content", _TEXT, True, nullable=True),
                                    Prop("reasoning_content", _TEXT),
                                    Prop(
                                        "tool_calls",
                                        Arr(_TOOL_CALL),
                                        description="The client tools the agent called (§15.2): answer with "
                                        "role:tool messages",
                                    ),
                                )
                            ),
                            True,
                        ),
                        Prop("finish_reason", _TEXT, True, nullable=True),
                    )
                )
            ),
            True,
        ),
        Prop("usage", _USAGE),
    ),
)
_RESPONSE_USAGE = Obj(
    (
        *(Prop(name, _INT, True) for name in ("input_tokens", "output_tokens", "total_tokens")),
        Prop("input_tokens_details", Obj((Prop("cached_tokens", _INT, True),)), True),
        Prop("output_tokens_details", Obj((Prop("reasoning_tokens", _INT, True),)), True),
    ),
    name="ResponseUsage",
)
RESPONSE = Obj(
    name="Response",
    props=(
        Prop("id", _TEXT, True),
        Prop("object", Str(enum=("response",)), True),
        Prop(
            "status",
            Str(enum=("queued", "in_progress", "completed", "incomplete", "failed", "cancelled")),
            True,
        ),
        Prop("model", _TEXT, True, nullable=True),
        Prop("output", Arr(Obj((Prop("id", _TEXT, True), Prop("type", _TEXT, True)))), True),
        Prop("usage", _RESPONSE_USAGE, True, nullable=True),
        Prop("error", _OBJECT, True, nullable=True),
        Prop("previous_response_id", _TEXT, True, nullable=True),
        # WIRE.md §16: the rest of the Open Responses ResponseResource, on every object
        Prop("created_at", _INT, True),
        Prop("completed_at", _INT, True, "Epoch seconds; null until completed", nullable=True),
        Prop("incomplete_details", Obj((Prop("reason", _TEXT, True),)), True, nullable=True),
        Prop("instructions", _TEXT, True, nullable=True),
        Prop("tools", Arr(Obj((Prop("type", _TEXT, True),))), True),
        Prop("tool_choice", AnyJson(), True),
        Prop("parallel_tool_calls", Bool(), True),
        Prop("truncation", Str(enum=("auto", "disabled")), True),
        Prop("text", Obj((Prop("format", Obj((Prop("type", _TEXT, True),)), True),)), True),
        *(Prop(name, Num(), True, "Echoed as sent (the spec's default otherwise)") for name in _SAMPLING),
        Prop("top_logprobs", Num(integer=True), True),
        Prop(
            "reasoning",
            Obj((Prop("effort", _TEXT, True, nullable=True), Prop("summary", _TEXT, True, nullable=True))),
            True,
            nullable=True,
        ),
        Prop("max_output_tokens", Num(integer=True), True, nullable=True),
        Prop("max_tool_calls", Num(integer=True), True, nullable=True),
        Prop("store", Bool(), True),
        Prop("background", Bool(), True),
        Prop("service_tier", _TEXT, True),
        Prop("metadata", _OBJECT, True),
        Prop("safety_identifier", _TEXT, True, nullable=True),
        Prop("prompt_cache_key", _TEXT, True, nullable=True),
        Prop("user", _TEXT, True, nullable=True),
    ),
    description="WIRE.md §4.5; every field of the Open Responses ResponseResource (§16)",
)
RESPONSE_DELETED = Obj(
    (Prop("id", _TEXT, True), Prop("object", Str(enum=("response",)), True), Prop("deleted", Bool(), True))
)
INPUT_ITEMS = Obj(
    name="InputItemList",
    props=(
        Prop("object", Str(enum=("list",)), True),
        Prop("data", Arr(Obj((Prop("id", _TEXT, True), Prop("type", _TEXT, True)))), True),
        Prop("first_id", _TEXT, True, nullable=True),
        Prop("last_id", _TEXT, True, nullable=True),
        Prop("has_more", Bool(), True),
    ),
)
RUN_ACCEPTED = Obj(name="RunAccepted", props=(Prop("run_id", _TEXT, True), Prop("status", _TEXT, True)))
RUN = Obj(
    name="Run",
    props=(
        Prop("object", Str(enum=("hermes.run",)), True),
        Prop("run_id", _TEXT, True),
        Prop("status", _TEXT, True),
        Prop("session_id", _TEXT, True, nullable=True),
        Prop("output", _TEXT, True, nullable=True),
        Prop("error", AnyJson(), True),
        Prop("required_action", Obj((Prop("type", Str(enum=("approval", "question", "client_tool")), True),))),
    ),
    description="WIRE.md §6.2, §15.1",
)
RUN_STOPPED = Obj((Prop("run_id", _TEXT, True), Prop("status", _TEXT, True)))
RUN_APPROVAL = Obj(
    (
        Prop("object", Str(enum=("hermes.run.approval_response",)), True),
        Prop("run_id", _TEXT, True),
        Prop("choice", Str(enum=("once", "session", "always", "deny")), True),
        Prop("resolved", _INT, True),
    )
)
RUN_ANSWER = Obj(
    (
        Prop("object", Str(enum=("hermes.run.answer",)), True),
        Prop("run_id", _TEXT, True),
        Prop("answered", _INT, True),
    )
)
RUN_TOOL_OUTPUTS = Obj(
    (
        Prop("object", Str(enum=("hermes.run.tool_outputs",)), True),
        Prop("run_id", _TEXT, True),
        Prop("answered", _INT, True, "How many pending client tool calls got their output"),
    )
)
SESSION = Obj(
    name="Session",
    props=(
        Prop("id", _TEXT, True),
        Prop("source", _TEXT, True, nullable=True),
        Prop("title", _TEXT, True, nullable=True),
        Prop("message_count", _INT, True),
        Prop("pinned", Bool(), True),
        Prop("archived", Bool(), True),
    ),
)
SESSION_ENVELOPE = Obj(
    name="SessionReply", props=(Prop("object", Str(enum=("hermes.session",)), True), Prop("session", SESSION, True))
)
SESSION_LIST = Obj(
    name="SessionList",
    props=(
        Prop("object", Str(enum=("list",)), True),
        Prop("data", Arr(SESSION), True),
        Prop("limit", _INT, True),
        Prop("offset", _INT, True),
        Prop("has_more", Bool(), True),
    ),
)
SESSION_DELETED = Obj(
    (
        Prop("object", Str(enum=("hermes.session.deleted",)), True),
        Prop("id", _TEXT, True),
        Prop("deleted", Bool(), True),
    )
)
SESSION_MESSAGES = Obj(
    name="SessionMessageList",
    props=(
        Prop("object", Str(enum=("list",)), True),
        Prop("session_id", _TEXT, True),
        Prop("data", Arr(Obj((Prop("id", _TEXT, True), Prop("role", _TEXT, True)))), True),
        Prop("pagination", _OBJECT, True),
    ),
)
SESSION_CHAT = Obj(
    name="SessionChatReply",
    props=(
        Prop("object", Str(enum=("hermes.session.chat.completion",)), True),
        Prop("status", _TEXT, True),
        Prop("session_id", _TEXT, True),
        Prop("run_id", _TEXT, True),
        Prop("message", _OBJECT, True),
        Prop("required_action", _OBJECT, description="status requires_action: what the turn waits for (§15.2)"),
    ),
)
# Cron jobs (§14.3): the host's own job records, in hermes-agent's shape.
_JOB = Obj(
    name="Job",
    props=(Prop("id", _TEXT, True), Prop("name", _TEXT), Prop("schedule", AnyJson()), Prop("enabled", Bool())),
    description="A cron job as hermes-agent's store keeps it",
)
JOB = Obj(name="JobReply", props=(Prop("job", _JOB, True),))
JOB_LIST = Obj(name="JobList", props=(Prop("jobs", Arr(_JOB), True),))
JOB_DELETED = Obj((Prop("ok", Bool(), True),))
PLATFORM_EVENT = Obj((), description="What the platform adapter answers its event with ({} when nothing)")
CRON_FIRE = Obj((Prop("status", Str(enum=("accepted",)), True), Prop("job_id", _TEXT, True)))
