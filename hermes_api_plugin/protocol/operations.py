"""Every operation of the API in one table: its request body, parameters, success reply, streams and links.

`http/openapi.py` renders this table for the served routes; the routes parse with the same nodes (bodies in the
`parse_*` functions, query parameters through `schema.parse_params`), so what is documented is what is checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import approvals, chat, compaction, jobs, replies, responses, responses_socket, runs, sessions
from .common import (
    APPROVALS_HEADER,
    IDEMPOTENCY_HEADER,
    LAST_EVENT_ID_HEADER,
    SESSION_ID_HEADER,
    SESSION_KEY_HEADER,
    TOOL_ITEMS_HEADER,
    TOOL_PROGRESS_HEADER,
)
from .limits import NAME_MAX
from .params import Param
from .schema import Bool, Node, Obj, Str

MODEL_OPTIONS_QUERY = (Param("refresh", Bool(), default=False, description="Probe the providers again"),)


@dataclass(frozen=True)
class Operation:
    summary: str
    body: Obj | None = None
    params: tuple[Param, ...] = ()
    status: int = 200
    reply: Node | None = None  # None: no JSON body on success (a stream only)
    sse: bool = False  # the success reply may be (or is) text/event-stream
    links: dict[str, dict[str, Any]] = field(default_factory=dict)  # name → {operationId, parameters}
    public: bool = False  # no API_SERVER_KEY: unauthenticated, or authenticated by the handler itself (§14.3)
    host: bool = False  # the host agent's own data: undocumented (and answered 501) on a host without it (§14.3)
    socket: Obj | None = None  # a WebSocket upgrade (101): the client's message; the server's are the stream's events
    text: tuple[str, ...] = ()  # media types of a success body that is text, not JSON (GET /metrics)


def _link(operation: str, parameter: str, expression: str) -> dict[str, Any]:
    return {"operationId": operation, "parameters": {parameter: expression}}


_RESPONSE_ID = "$response.body#/id"
_RUN_ID = "$response.body#/run_id"
_SESSION_ID = "$response.body#/session/id"
_RESPONSE_LINKS = {
    "GetResponse": _link("response", "response_id", _RESPONSE_ID),
    "GetInputItems": _link("response_input_items", "response_id", _RESPONSE_ID),
    "CancelResponse": _link("response_cancel", "response_id", _RESPONSE_ID),
    "DeleteResponse": _link("response_delete", "response_id", _RESPONSE_ID),
}
_TURN_HEADERS = (IDEMPOTENCY_HEADER, SESSION_KEY_HEADER)
_JOB_ID = "$response.body#/job/id"
_JOB_LINKS = {
    "GetJob": _link("job", "job_id", _JOB_ID),
    "UpdateJob": _link("job_update", "job_id", _JOB_ID),
    "PauseJob": _link("job_pause", "job_id", _JOB_ID),
    "ResumeJob": _link("job_resume", "job_id", _JOB_ID),
    "RunJob": _link("job_run", "job_id", _JOB_ID),
    "DeleteJob": _link("job_delete", "job_id", _JOB_ID),
}
_RUN_OF_TURN = {"GetRun": _link("run_status", "run_id", "$response.header.X-Hermes-Run-Id")}

OPERATIONS: dict[str, Operation] = {
    "health": Operation("Liveness (no authentication)", reply=replies.HEALTH, public=True),
    "health_v1": Operation("Liveness (no authentication)", reply=replies.HEALTH, public=True),
    "health_detailed": Operation(
        "Readiness and this server's turn, slot and stream counts", reply=replies.HEALTH_DETAILED
    ),
    "models": Operation("The advertised model", reply=replies.MODELS),
    "model_options": Operation(
        "Curated model list with capability hints and pricing", params=MODEL_OPTIONS_QUERY, reply=replies.MODEL_OPTIONS
    ),
    "capabilities": Operation("Machine-readable feature document", reply=replies.CAPABILITIES),
    "openapi": Operation("This document", reply=replies.OPENAPI),
    "metrics": Operation(
        "Prometheus metrics (text format; OpenMetrics when Accept asks for application/openmetrics-text): turns, "
        "first-token times, tools, admissions, streams, agents, store (API key unless api_server.metrics.auth: none)",
        text=("text/plain", "application/openmetrics-text"),
    ),
    "skills": Operation("The host agent's installed skills (hermes-agent's shape)", reply=replies.SKILLS, host=True),
    "toolsets": Operation("The host agent's toolsets for this platform", reply=replies.TOOLSETS, host=True),
    "chat_completions": Operation(
        "Chat Completions (JSON, or SSE with reasoning_content and hermes.tool.progress)",
        body=chat.CHAT_BODY,
        params=(*_TURN_HEADERS, SESSION_ID_HEADER, TOOL_PROGRESS_HEADER, APPROVALS_HEADER),
        reply=replies.CHAT_COMPLETION,
        sse=True,
        links=_RUN_OF_TURN,
    ),
    "responses": Operation(
        "Create a Response (JSON, SSE or background)",
        body=responses.RESPONSES_BODY,
        params=(*_TURN_HEADERS, TOOL_ITEMS_HEADER),
        reply=replies.RESPONSE,
        sse=True,
        links={**_RESPONSE_LINKS, **_RUN_OF_TURN},
    ),
    "responses_compact": Operation(
        "Compact a conversation (§16): its summary as a `compaction` item to send as the next response's input",
        body=compaction.COMPACT_BODY,
        reply=compaction.COMPACTED,
    ),
    "responses_socket": Operation(
        "Responses in WebSocket mode (Upgrade: websocket): send response.create messages, receive each response's "
        "§4.2 events as JSON text frames, one response after another (WIRE.md §16)",
        params=(SESSION_KEY_HEADER, TOOL_ITEMS_HEADER),
        status=101,
        socket=responses_socket.SOCKET_MESSAGE,
    ),
    "response": Operation(
        "Read a stored Response (?stream=true&starting_after=N re-streams it)",
        params=(*responses.RESPONSE_PATH, *responses.GET_QUERY, TOOL_ITEMS_HEADER),
        reply=replies.RESPONSE,
        sse=True,
    ),
    "response_delete": Operation(
        "Delete a stored Response", params=responses.RESPONSE_PATH, reply=replies.RESPONSE_DELETED
    ),
    "response_cancel": Operation(
        "Cancel a background or detached Response", params=responses.RESPONSE_PATH, reply=replies.RESPONSE
    ),
    "response_input_items": Operation(
        "The input items of a Response",
        params=(*responses.RESPONSE_PATH, *responses.INPUT_ITEMS_QUERY),
        reply=replies.INPUT_ITEMS,
    ),
    "runs": Operation(
        "Submit a run (202)",
        body=runs.RUN_BODY,
        params=(*_TURN_HEADERS, SESSION_ID_HEADER, APPROVALS_HEADER),
        status=202,
        reply=replies.RUN_ACCEPTED,
        links={
            "GetRun": _link("run_status", "run_id", _RUN_ID),
            "GetRunEvents": _link("run_events", "run_id", _RUN_ID),
            "StopRun": _link("run_stop", "run_id", _RUN_ID),
        },
    ),
    "run_status": Operation("A run's status", params=runs.RUN_PATH, reply=replies.RUN),
    "run_events": Operation(
        "A run's events (SSE with id: lines, Last-Event-ID resume)",
        params=(*runs.RUN_PATH, LAST_EVENT_ID_HEADER),
        sse=True,
    ),
    "run_stop": Operation("Stop a run", params=runs.RUN_PATH, reply=replies.RUN_STOPPED),
    "run_approval": Operation(
        "Decide a run's pending dangerous-command approval",
        body=approvals.RUN_APPROVAL_BODY,
        params=(*runs.RUN_PATH, IDEMPOTENCY_HEADER),
        reply=replies.RUN_APPROVAL,
    ),
    "run_answer": Operation(
        "Answer a suspended run's pending question",
        body=approvals.RUN_ANSWER_BODY,
        params=(*runs.RUN_PATH, IDEMPOTENCY_HEADER),
        reply=replies.RUN_ANSWER,
    ),
    "run_tool_outputs": Operation(
        "Return the outputs of a suspended run's client tool calls",
        body=approvals.RUN_TOOL_OUTPUTS_BODY,
        params=(*runs.RUN_PATH, IDEMPOTENCY_HEADER),
        reply=replies.RUN_TOOL_OUTPUTS,
    ),
    "sessions": Operation("List sessions", params=sessions.LIST_QUERY, reply=replies.SESSION_LIST),
    "session_create": Operation(
        "Create a session",
        body=sessions.SESSION_CREATE_BODY,
        status=201,
        reply=replies.SESSION_ENVELOPE,
        links={
            "GetSession": _link("session", "session_id", _SESSION_ID),
            "UpdateSession": _link("session_update", "session_id", _SESSION_ID),
            "GetMessages": _link("session_messages", "session_id", _SESSION_ID),
            "Chat": _link("session_chat", "session_id", _SESSION_ID),
            "ChatStream": _link("session_chat_stream", "session_id", _SESSION_ID),
            "DeleteSession": _link("session_delete", "session_id", _SESSION_ID),
        },
    ),
    "session": Operation("A session", params=sessions.SESSION_PATH, reply=replies.SESSION_ENVELOPE),
    "session_update": Operation(
        "Set title, pinned, archived",
        body=sessions.SESSION_UPDATE_BODY,
        params=sessions.SESSION_PATH,
        reply=replies.SESSION_ENVELOPE,
    ),
    "session_delete": Operation("Delete a session", params=sessions.SESSION_PATH, reply=replies.SESSION_DELETED),
    "session_messages": Operation(
        "A session's messages",
        params=(*sessions.SESSION_PATH, *sessions.MESSAGES_QUERY),
        reply=replies.SESSION_MESSAGES,
    ),
    "session_fork": Operation(
        "Fork a session (its messages copied, the original as parent)",
        body=sessions.SESSION_FORK_BODY,
        params=sessions.SESSION_PATH,
        status=201,
        reply=replies.SESSION_ENVELOPE,
        links={
            "GetSession": _link("session", "session_id", _SESSION_ID),
            "GetMessages": _link("session_messages", "session_id", _SESSION_ID),
        },
    ),
    "session_chat": Operation(
        "Chat on a session (JSON)",
        body=sessions.SESSION_CHAT_BODY,
        params=(*sessions.SESSION_PATH, *_TURN_HEADERS, APPROVALS_HEADER),
        reply=replies.SESSION_CHAT,
        links=_RUN_OF_TURN,
    ),
    "session_chat_stream": Operation(
        "Chat on a session (SSE with named events)",
        body=sessions.SESSION_CHAT_BODY,
        params=(*sessions.SESSION_PATH, *_TURN_HEADERS, LAST_EVENT_ID_HEADER, APPROVALS_HEADER),
        sse=True,
    ),
    # Hermes' cron jobs (§14.3)
    "jobs": Operation("List cron jobs", params=jobs.LIST_QUERY, reply=replies.JOB_LIST, host=True),
    "job_create": Operation(
        "Create a cron job", body=jobs.JOB_CREATE_BODY, reply=replies.JOB, links=_JOB_LINKS, host=True
    ),
    "job": Operation("A cron job", params=jobs.JOB_PATH, reply=replies.JOB, host=True),
    "job_update": Operation(
        "Change a cron job's name, schedule, prompt, delivery, skills, repeat or enabled",
        body=jobs.JOB_UPDATE_BODY,
        params=jobs.JOB_PATH,
        reply=replies.JOB,
        host=True,
    ),
    "job_delete": Operation("Delete a cron job", params=jobs.JOB_PATH, reply=replies.JOB_DELETED, host=True),
    "job_pause": Operation("Pause a cron job", params=jobs.JOB_PATH, reply=replies.JOB, host=True),
    "job_resume": Operation("Resume a paused cron job", params=jobs.JOB_PATH, reply=replies.JOB, host=True),
    "job_run": Operation("Run a cron job now", params=jobs.JOB_PATH, reply=replies.JOB, host=True),
    # Authenticated by the target adapter's own verifier, never API_SERVER_KEY (§14.3)
    "platform_events": Operation(
        "A messaging platform's HTTP event (e.g. Google Chat), verified by that platform's adapter",
        params=(Param("platform", Str(max_length=NAME_MAX, pattern=r"^[A-Za-z0-9_-]+$"), "path"),),
        reply=replies.PLATFORM_EVENT,
        public=True,
        host=True,
    ),
    # Authenticated by the scheduler's fire token (the host's verifier), never API_SERVER_KEY (§14.3)
    "cron_fire": Operation(
        "Managed-cron fire webhook: run a due cron job (202 at once), authorised by the scheduler's signed fire token",
        body=jobs.CRON_FIRE_BODY,
        status=202,
        reply=replies.CRON_FIRE,
        public=True,
        host=True,
    ),
}
