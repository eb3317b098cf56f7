"""A conformance checker for the Open Responses contract (WIRE.md §16), written from the spec's requirements: what a
strictly validating client demands of every Response object and every streaming event.

API (plain functions, each raising AssertionError with the path of the first violation):

- `assert_response_object(obj, strict=True)`: one Response object (a JSON reply, or an event's `response`).
- `assert_output_item(item, strict=True)`: one item of `output` (or of an `output_item.*` event).
- `assert_stream_event(event, strict=True)`: one streaming event, as its `data:` JSON (HTTP SSE or WebSocket frame).
- `assert_stream(events, strict=True) -> dict`: a whole stream, in order: every event valid, `sequence_number`
  0, 1, 2…, one opening `response.created` and exactly one terminal event last, every `output_index` /
  `content_index` / `summary_index` / `item_id` referring to an item added before, each item's `done` form equal to
  the terminal Response's `output` at its index. Returns the terminal Response object.

`strict=True` accepts only what the spec defines; `strict=False` also accepts this gateway's documented extensions
(WIRE.md §15.3: `mcp_call` / `mcp_approval_request` items and the `response.mcp_call*` events of hosted tools,
`response.cancelled`, assistant `phase`), checking their own required fields instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

RESPONSE_STATUSES = ("queued", "in_progress", "completed", "incomplete", "failed", "cancelled")
ITEM_STATUSES = ("in_progress", "completed", "incomplete")
ROLES = ("user", "assistant", "system", "developer")
EFFORTS = ("none", "low", "medium", "high", "xhigh")
SUMMARIES = ("concise", "detailed", "auto")
TRUNCATIONS = ("auto", "disabled")
TOOL_CHOICE_MODES = ("none", "auto", "required")
TEXT_FORMATS = ("text", "json_object", "json_schema")

RESPONSE_EVENTS = frozenset(
    {
        "response.created",
        "response.queued",
        "response.in_progress",
        "response.completed",
        "response.failed",
        "response.incomplete",
    }
)
TERMINAL_EVENTS = frozenset({"response.completed", "response.failed", "response.incomplete"})
# The event types the spec defines (its streaming-event union), with the fields each requires beyond
# `type` and `sequence_number`: name → JSON type ("int", "str", "list", "part", "summary_part", "item?", "error").
_ITEM = {"item_id": "str", "output_index": "int"}
_CONTENT = {**_ITEM, "content_index": "int"}  # an event of one content part of an output item
_SUMMARY = {**_ITEM, "summary_index": "int"}  # an event of one summary part of a reasoning item
SPEC_EVENTS: dict[str, dict[str, str]] = {
    **{name: {"response": "response"} for name in RESPONSE_EVENTS},
    "response.output_item.added": {"output_index": "int", "item": "item?"},
    "response.output_item.done": {"output_index": "int", "item": "item?"},
    "response.content_part.added": {**_CONTENT, "part": "part"},
    "response.content_part.done": {**_CONTENT, "part": "part"},
    "response.output_text.delta": {**_CONTENT, "delta": "str"},
    "response.output_text.done": {**_CONTENT, "text": "str"},
    "response.output_text.annotation.added": {**_CONTENT, "annotation_index": "int"},
    "response.refusal.delta": {**_CONTENT, "delta": "str"},
    "response.refusal.done": {**_CONTENT, "refusal": "str"},
    "response.function_call_arguments.delta": {**_ITEM, "delta": "str"},
    "response.function_call_arguments.done": {**_ITEM, "arguments": "str"},
    "response.reasoning_summary_part.added": {**_SUMMARY, "part": "summary_part"},
    "response.reasoning_summary_part.done": {**_SUMMARY, "part": "summary_part"},
    "response.reasoning_summary_text.delta": {**_SUMMARY, "delta": "str"},
    "response.reasoning_summary_text.done": {**_SUMMARY, "text": "str"},
    "response.reasoning.delta": {**_CONTENT, "delta": "str"},
    "response.reasoning.done": {**_CONTENT, "text": "str"},
    "error": {"error": "error"},
}
# This gateway's own events (WIRE.md §15.3 hosted tools, §4 cancellation), accepted when not strict.
EXTENSION_EVENTS: dict[str, dict[str, str]] = {
    "response.cancelled": {"response": "response"},
    "response.mcp_call.in_progress": _ITEM,
    "response.mcp_call.completed": _ITEM,
    "response.mcp_call.failed": _ITEM,
    "response.mcp_call_arguments.delta": {**_ITEM, "delta": "str"},
    "response.mcp_call_arguments.done": {**_ITEM, "arguments": "str"},
}
EXTENSION_ITEMS = frozenset({"mcp_call", "mcp_approval_request"})


# -- value checks ----------------------------------------------------------------------------------------------------
def _fail(path: str, message: str, value: Any) -> AssertionError:
    return AssertionError(f"{path}: {message} (got {value!r:.200})")


def _int(value: Any, path: str, *, null: bool = False) -> None:
    if value is None and null:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(path, "must be an integer" + (" or null" if null else ""), value)


def _number(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(path, "must be a number", value)


def _str(value: Any, path: str, *, null: bool = False, enum: Sequence[str] = ()) -> None:
    if value is None and null:
        return
    if not isinstance(value, str):
        raise _fail(path, "must be a string" + (" or null" if null else ""), value)
    if enum and value not in enum:
        raise _fail(path, f"must be one of {', '.join(enum)}", value)


def _bool(value: Any, path: str, *, null: bool = False) -> None:
    if value is None and null:
        return
    if not isinstance(value, bool):
        raise _fail(path, "must be a boolean", value)


def _obj(value: Any, path: str, *, null: bool = False) -> bool:
    """Whether `value` is an object (False for an allowed null)."""
    if value is None and null:
        return False
    if not isinstance(value, Mapping):
        raise _fail(path, "must be an object" + (" or null" if null else ""), value)
    return True


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, "must be an array", value)
    return value


def _required(obj: Mapping[str, Any], names: Sequence[str], path: str) -> None:
    missing = [name for name in names if name not in obj]
    if missing:
        raise AssertionError(f"{path}: required {', '.join(missing)} missing (keys: {sorted(obj)})")


# -- content parts ---------------------------------------------------------------------------------------------------
def assert_content_part(part: Any, path: str = "part") -> None:
    """A content part of a message (or of a content_part event): output_text needs `text` and `annotations`,
    `logprobs` an array when present; the input and reasoning parts their own text fields."""
    _obj(part, path)
    kind = part.get("type")
    if kind == "output_text":
        _str(part.get("text"), f"{path}.text")
        _list(part.get("annotations"), f"{path}.annotations")
        if "logprobs" in part:
            _list(part["logprobs"], f"{path}.logprobs")
    elif kind in ("input_text", "text", "summary_text", "reasoning_text"):
        _str(part.get("text"), f"{path}.text")
    elif kind == "refusal":
        _str(part.get("refusal"), f"{path}.refusal")
    elif kind in ("input_image", "input_file", "input_video"):
        return
    else:
        raise _fail(f"{path}.type", "is not a content part type of the spec", kind)


def _summary_part(part: Any, path: str) -> None:
    _obj(part, path)
    _str(part.get("type"), f"{path}.type", enum=("summary_text",))
    _str(part.get("text"), f"{path}.text")


# -- items -----------------------------------------------------------------------------------------------------------
def assert_output_item(item: Any, path: str = "item", *, strict: bool = True) -> None:
    """One output item: a message, function_call, function_call_output or reasoning item with every field the spec
    requires; this gateway's mcp items only when not strict."""
    _obj(item, path)
    kind = item.get("type")
    _str(item.get("id"), f"{path}.id")
    if kind == "message":
        _required(item, ("status", "role", "content"), path)
        _str(item["status"], f"{path}.status", enum=ITEM_STATUSES)
        _str(item["role"], f"{path}.role", enum=ROLES)
        for i, part in enumerate(_list(item["content"], f"{path}.content")):
            assert_content_part(part, f"{path}.content[{i}]")
        if "phase" in item:
            _str(item["phase"], f"{path}.phase", enum=("commentary", "final_answer"))
    elif kind == "function_call":
        _required(item, ("call_id", "name", "arguments", "status"), path)
        _str(item["call_id"], f"{path}.call_id")
        _str(item["name"], f"{path}.name")
        _str(item["arguments"], f"{path}.arguments")
        _str(item["status"], f"{path}.status", enum=ITEM_STATUSES)
    elif kind == "function_call_output":
        _required(item, ("call_id", "output", "status"), path)
        _str(item["call_id"], f"{path}.call_id")
        if not isinstance(item["output"], str):
            for i, part in enumerate(_list(item["output"], f"{path}.output")):
                assert_content_part(part, f"{path}.output[{i}]")
        _str(item["status"], f"{path}.status", enum=ITEM_STATUSES)
    elif kind == "reasoning":
        _required(item, ("summary",), path)
        for i, part in enumerate(_list(item["summary"], f"{path}.summary")):
            assert_content_part(part, f"{path}.summary[{i}]")
        for i, part in enumerate(_list(item.get("content", []), f"{path}.content")):
            assert_content_part(part, f"{path}.content[{i}]")
        if "encrypted_content" in item:
            _str(item["encrypted_content"], f"{path}.encrypted_content")
    elif kind in EXTENSION_ITEMS and not strict:
        _str(item.get("server_label"), f"{path}.server_label")
        _str(item.get("name"), f"{path}.name")
        _str(item.get("arguments"), f"{path}.arguments")
    else:
        raise _fail(f"{path}.type", "is not an output item type of the spec", kind)


# -- the Response object ---------------------------------------------------------------------------------------------
RESPONSE_REQUIRED = (
    "id",
    "object",
    "created_at",
    "completed_at",
    "status",
    "incomplete_details",
    "model",
    "previous_response_id",
    "instructions",
    "output",
    "error",
    "tools",
    "tool_choice",
    "truncation",
    "parallel_tool_calls",
    "text",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "top_logprobs",
    "temperature",
    "reasoning",
    "usage",
    "max_output_tokens",
    "max_tool_calls",
    "store",
    "background",
    "service_tier",
    "metadata",
    "safety_identifier",
    "prompt_cache_key",
)


def _tool(tool: Any, path: str, strict: bool) -> None:
    _obj(tool, path)
    if tool.get("type") != "function":
        if strict:
            raise _fail(f"{path}.type", "the spec's Response lists function tools only", tool.get("type"))
        return
    _required(tool, ("name", "description", "parameters", "strict"), path)
    _str(tool["name"], f"{path}.name")
    _str(tool["description"], f"{path}.description", null=True)
    _obj(tool["parameters"], f"{path}.parameters", null=True)
    _bool(tool["strict"], f"{path}.strict", null=True)


def _tool_choice(choice: Any, path: str) -> None:
    if isinstance(choice, str):
        _str(choice, path, enum=TOOL_CHOICE_MODES)
        return
    _obj(choice, path)
    if choice.get("type") == "function":
        if "name" in choice:
            _str(choice["name"], f"{path}.name")
    elif choice.get("type") == "allowed_tools":
        _list(choice.get("tools"), f"{path}.tools")
        _str(choice.get("mode"), f"{path}.mode", enum=TOOL_CHOICE_MODES)
    else:
        raise _fail(f"{path}.type", "must be function or allowed_tools", choice.get("type"))


def _usage(usage: Any, path: str) -> None:
    if not _obj(usage, path, null=True):
        return
    for name in ("input_tokens", "output_tokens", "total_tokens"):
        _int(usage.get(name), f"{path}.{name}")
    _obj(usage.get("input_tokens_details"), f"{path}.input_tokens_details")
    _int(usage["input_tokens_details"].get("cached_tokens"), f"{path}.input_tokens_details.cached_tokens")
    _obj(usage.get("output_tokens_details"), f"{path}.output_tokens_details")
    _int(usage["output_tokens_details"].get("reasoning_tokens"), f"{path}.output_tokens_details.reasoning_tokens")


def assert_response_object(obj: Any, path: str = "response", *, strict: bool = True) -> None:
    """Every field of the spec's ResponseResource, of its type; `completed_at` an integer exactly when completed."""
    _obj(obj, path)
    _required(obj, RESPONSE_REQUIRED, path)
    _str(obj["id"], f"{path}.id")
    _str(obj["object"], f"{path}.object", enum=("response",))
    _int(obj["created_at"], f"{path}.created_at")
    _str(obj["status"], f"{path}.status", enum=RESPONSE_STATUSES)
    _int(obj["completed_at"], f"{path}.completed_at", null=True)
    if (obj["completed_at"] is not None) != (obj["status"] == "completed"):
        raise _fail(f"{path}.completed_at", f"must be set exactly when completed (status {obj['status']})", obj)
    if _obj(obj["incomplete_details"], f"{path}.incomplete_details", null=True):
        _str(obj["incomplete_details"].get("reason"), f"{path}.incomplete_details.reason")
    _str(obj["model"], f"{path}.model")
    _str(obj["previous_response_id"], f"{path}.previous_response_id", null=True)
    _str(obj["instructions"], f"{path}.instructions", null=True)
    for i, item in enumerate(_list(obj["output"], f"{path}.output")):
        assert_output_item(item, f"{path}.output[{i}]", strict=strict)
    if _obj(obj["error"], f"{path}.error", null=True):
        _str(obj["error"].get("code"), f"{path}.error.code")
        _str(obj["error"].get("message"), f"{path}.error.message")
    for i, tool in enumerate(_list(obj["tools"], f"{path}.tools")):
        _tool(tool, f"{path}.tools[{i}]", strict)
    _tool_choice(obj["tool_choice"], f"{path}.tool_choice")
    _str(obj["truncation"], f"{path}.truncation", enum=TRUNCATIONS)
    _bool(obj["parallel_tool_calls"], f"{path}.parallel_tool_calls")
    _obj(obj["text"], f"{path}.text")
    _obj(obj["text"].get("format"), f"{path}.text.format")
    _str(obj["text"]["format"].get("type"), f"{path}.text.format.type", enum=TEXT_FORMATS)
    for name in ("top_p", "presence_penalty", "frequency_penalty", "temperature"):
        _number(obj[name], f"{path}.{name}")
    _int(obj["top_logprobs"], f"{path}.top_logprobs")
    if _obj(obj["reasoning"], f"{path}.reasoning", null=True):
        _required(obj["reasoning"], ("effort", "summary"), f"{path}.reasoning")
        _str(obj["reasoning"]["effort"], f"{path}.reasoning.effort", null=True, enum=EFFORTS if strict else ())
        _str(obj["reasoning"]["summary"], f"{path}.reasoning.summary", null=True, enum=SUMMARIES)
    _usage(obj["usage"], f"{path}.usage")
    _int(obj["max_output_tokens"], f"{path}.max_output_tokens", null=True)
    _int(obj["max_tool_calls"], f"{path}.max_tool_calls", null=True)
    _bool(obj["store"], f"{path}.store")
    _bool(obj["background"], f"{path}.background")
    _str(obj["service_tier"], f"{path}.service_tier")
    _str(obj["safety_identifier"], f"{path}.safety_identifier", null=True)
    _str(obj["prompt_cache_key"], f"{path}.prompt_cache_key", null=True)


# -- events ----------------------------------------------------------------------------------------------------------
def assert_stream_event(event: Any, *, strict: bool = True) -> None:
    """One event: a type the spec defines (or, not strict, one of this gateway's), an integer `sequence_number`,
    and every field its type requires."""
    _obj(event, "event")
    kind = event.get("type")
    fields = SPEC_EVENTS.get(kind) if isinstance(kind, str) else None
    if fields is None and not strict and isinstance(kind, str):
        fields = EXTENSION_EVENTS.get(kind)
    if fields is None:
        raise _fail("event.type", "is not an event type of the spec", kind)
    path = kind
    _int(event.get("sequence_number"), f"{path}.sequence_number")
    _required(event, tuple(fields), path)
    for name, shape in fields.items():
        value, where = event[name], f"{path}.{name}"
        if shape == "int":
            _int(value, where)
        elif shape == "str":
            _str(value, where)
        elif shape == "response":
            assert_response_object(value, where, strict=strict)
        elif shape == "item?":
            if value is not None:
                assert_output_item(value, where, strict=strict)
        elif shape == "part":
            assert_content_part(value, where)
        elif shape == "summary_part":
            _summary_part(value, where)
        elif shape == "error":
            _obj(value, where)
            _required(value, ("code", "message", "param"), where)
            _str(value["code"], f"{where}.code", null=True)
            _str(value["message"], f"{where}.message")
            _str(value["param"], f"{where}.param", null=True)
    if "logprobs" in event:
        _list(event["logprobs"], f"{path}.logprobs")


def assert_stream(events: Sequence[Any], *, strict: bool = True) -> dict[str, Any]:
    """A whole stream (see the module docstring); returns its terminal Response object."""
    assert events, "no events"
    terminals = TERMINAL_EVENTS if strict else TERMINAL_EVENTS | {"response.cancelled"}
    for i, event in enumerate(events):
        assert_stream_event(event, strict=strict)
        assert event["sequence_number"] == i, f"event {i} ({event['type']}): sequence_number {event['sequence_number']}"
    assert events[0]["type"] == "response.created", f"the first event is {events[0]['type']}"
    assert events[-1]["type"] in terminals, f"the last event is {events[-1]['type']}, not a terminal one"
    assert sum(e["type"] in terminals for e in events) == 1, "more than one terminal event"
    ids = {e["response"]["id"] for e in events if "response" in e}
    assert len(ids) == 1, f"events name several responses: {ids}"
    added: dict[int, dict[str, Any]] = {}
    done: dict[int, dict[str, Any]] = {}
    parts: set[tuple[int, int]] = set()
    summaries: set[tuple[int, int]] = set()
    for event in events:
        kind, where = event["type"], f"{event['type']} #{event['sequence_number']}"
        if "output_index" not in event:
            continue
        index = event["output_index"]
        if kind == "response.output_item.added":
            assert index == len(added), f"{where}: output_index {index}, expected {len(added)}"
            added[index] = event["item"]
            continue
        assert index in added, f"{where}: output_index {index} before its output_item.added"
        assert index not in done, f"{where}: after the item's output_item.done"
        if "item_id" in event:
            assert event["item_id"] == added[index]["id"], f"{where}: item_id is not the id of item {index}"
        if kind == "response.output_item.done":
            assert event["item"]["id"] == added[index]["id"] and event["item"]["type"] == added[index]["type"], where
            done[index] = event["item"]
        elif kind == "response.content_part.added":
            parts.add((index, event["content_index"]))
        elif "content_index" in event:
            assert (index, event["content_index"]) in parts, f"{where}: content_index before content_part.added"
        elif kind == "response.reasoning_summary_part.added":
            summaries.add((index, event["summary_index"]))
        elif "summary_index" in event:
            assert (index, event["summary_index"]) in summaries, f"{where}: summary_index before its part.added"
    response: dict[str, Any] = events[-1]["response"]
    assert set(done) == set(added), f"items added but never done: {sorted(set(added) - set(done))}"
    assert response["output"] == [done[i] for i in sorted(done)], "the terminal output is not the items done"
    for event in events:
        if event["type"] in RESPONSE_EVENTS and event["type"] not in terminals:
            assert event["response"]["completed_at"] is None, f"{event['type']}: completed_at before completion"
    return response
