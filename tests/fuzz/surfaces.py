"""The POST (and PATCH) surfaces the fuzz tests hit: each route, a body it accepts, and every field path (at any
depth) a fuzzer replaces with a hostile value."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

CONTENT_PATHS: list[tuple[Any, ...]] = [
    (),
    (0,),
    (0, "type"),
    (0, "text"),
    (0, "image_url"),
    (0, "image_url", "url"),
    (0, "image_url", "detail"),
    (0, "file_id"),
    (1,),
]
SELECTION_PATHS: list[tuple[Any, ...]] = [
    ("model",),
    ("provider",),
    ("model_options",),
    ("model_options", "reasoning"),
    ("model_options", "reasoning", "effort"),
    ("model_options", "reasoning", "enabled"),
    ("model_options", "x"),
]
HISTORY_PATHS: list[tuple[Any, ...]] = [
    ("conversation_history",),
    ("conversation_history", 0),
    ("conversation_history", 0, "role"),
    ("conversation_history", 0, "content"),
]
SAMPLING_PATHS: list[tuple[Any, ...]] = [
    ("temperature",),
    ("max_tokens",),
    ("max_output_tokens",),
    ("n",),
    ("stop",),
    ("user",),
    ("seed",),
    ("metadata",),
    ("metadata", "k"),
]


@dataclass(frozen=True)
class Surface:
    """A POST (or PATCH) route, a body it accepts, and the field paths a fuzzer replaces."""

    method: str
    path: str
    base: dict[str, Any]
    fields: tuple[tuple[Any, ...], ...]


SURFACES = {
    "chat": Surface(
        "POST",
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hello"}]},
        (
            ("messages",),
            ("messages", 0),
            ("messages", 0, "role"),
            ("messages", 1),
            ("messages", 0, "tool_calls"),
            ("messages", 0, "reasoning_content"),
            ("messages", 0, "tool_call_id"),
            ("stream",),
            ("stream_options",),
            ("reasoning_effort",),
            ("tools",),
            ("tool_choice",),
            *[("messages", 0, "content", *p) for p in CONTENT_PATHS],
            *SELECTION_PATHS,
            *SAMPLING_PATHS,
        ),
    ),
    "responses": Surface(
        "POST",
        "/v1/responses",
        {"input": "hello"},
        (
            ("input",),
            ("input", 0),
            ("input", 0, "type"),
            ("input", 0, "role"),
            ("input", 0, "id"),
            ("input", 0, "call_id"),
            ("input", 0, "name"),
            ("input", 0, "arguments"),
            ("input", 0, "output"),
            *[("input", 0, "content", *p) for p in CONTENT_PATHS],
            ("instructions",),
            ("previous_response_id",),
            ("conversation",),
            ("conversation", "id"),
            ("reasoning",),
            ("reasoning", "effort"),
            ("tools",),
            ("tools", 0),
            ("tools", 0, "parameters"),
            ("tool_choice",),
            ("truncation",),
            ("stream",),
            ("background",),
            ("store",),
            ("parallel_tool_calls",),
            *HISTORY_PATHS,
            *SELECTION_PATHS,
            *SAMPLING_PATHS,
        ),
    ),
    "runs": Surface(
        "POST",
        "/v1/runs",
        {"input": "hello"},
        (
            ("input",),
            ("input", 0),
            ("input", 0, "role"),
            ("input", 0, "content"),
            ("instructions",),
            ("session_id",),
            ("previous_response_id",),
            ("reasoning_effort",),
            *HISTORY_PATHS,
            *SELECTION_PATHS,
            *SAMPLING_PATHS,
        ),
    ),
    "session_create": Surface("POST", "/api/sessions", {"title": "fuzz"}, (("id",), ("title",), ("x",))),
    "session_update": Surface(
        "PATCH", "/api/sessions/fuzz-session", {"title": "fuzz"}, (("title",), ("pinned",), ("archived",), ("x",))
    ),
    "session_chat": Surface(
        "POST",
        "/api/sessions/fuzz-session/chat",
        {"message": "hello"},
        (
            ("message",),
            ("input",),
            *[("message", *p) for p in CONTENT_PATHS],
            ("instructions",),
            ("system_message",),
            *SELECTION_PATHS,
        ),
    ),
    "session_stream": Surface(
        "POST",
        "/api/sessions/fuzz-session/chat/stream",
        {"message": "hello"},
        (("message",), ("instructions",), *SELECTION_PATHS),
    ),
}


def set_path(body: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A copy of `body` with `value` at `path`, containers created (or replaced) on the way."""
    if not path:
        return body
    root: Any = json.loads(json.dumps(body))
    node = root
    for step, following in zip(path, [*path[1:], None]):
        want: Any = [] if isinstance(following, int) else {}
        if isinstance(step, int):
            while len(node) <= step:
                node.append([] if isinstance(following, int) else {})
        if following is None:
            node[step] = value
        else:
            child = node[step] if (isinstance(step, int) or step in node) else None
            if not isinstance(child, type(want)):
                node[step] = child = want
            node = child
    return root  # type: ignore[no-any-return]
