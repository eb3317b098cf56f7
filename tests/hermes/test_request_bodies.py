"""Chat completion bodies without the openai SDK's transform (`hermes/compat/request_bodies.py`, issue 25).

hermes-agent sends every provider call through `openai`'s `Completions.create`, which runs the body through the
SDK's `maybe_transform`; for plain JSON data that returns the data, at ~0.28 ms per message. What must hold with the
stand-in: the bytes a real `openai.OpenAI` client puts on a real socket are the bytes it sent with the SDK's own
transform, for every kind of message, content part, tool and option; anything not plain (a tuple of messages, an
omitted parameter) still gets what the SDK makes of it; the check finds a `PropertyInfo` anywhere in a params type,
and a type that has one leaves the SDK as it ships, with one warning.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Annotated, Any, Required, Union

import openai
import pytest
from openai._utils import PropertyInfo
from openai.types.chat import completion_create_params
from typing_extensions import TypedDict

from hermes_api_plugin.hermes import compat
from hermes_api_plugin.hermes.compat import _core, request_bodies
from hermes_api_plugin.hermes.compat._core import Installation
from hermes_api_plugin.hermes.compat.request_bodies import CHAT_TRANSFORM, is_plain, property_info_in

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": "Run a shell command.",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command."},
                    "timeout": {"type": ["integer", "null"], "minimum": 1},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                    "steps": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}},
                },
                "required": ["command"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    },
    {"type": "custom", "custom": {"name": "grammar", "format": {"type": "text"}}},
]

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are Hermes. " * 50},
    {"role": "developer", "content": [{"type": "text", "text": "Be brief."}], "name": "ops"},
    {"role": "user", "content": "Run `ls` please — ünïcödé ✓"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "I should list the folder.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\nb.txt"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "And this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "file", "file": {"file_data": "JVBERi0=", "filename": "a.pdf"}},
        ],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "A picture."}], "refusal": None, "audio": None},
    {"role": "function", "name": "legacy", "content": "{}"},
    {"role": "user", "content": "", "extra_key_hermes_adds": {"nested": [1, 2.5, True, None]}},
]

OPTIONS: list[dict[str, Any]] = [
    {"stream": True, "stream_options": {"include_usage": True}},
    {"tools": TOOLS, "tool_choice": "auto", "parallel_tool_calls": False, "max_tokens": 4096, "temperature": 0.3},
    {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": {"type": "object", "properties": {}}, "strict": True},
        },
        "reasoning_effort": "low",
        "metadata": {"session": "s1"},
        "seed": 7,
        "stop": ["\n\n"],
        "logit_bias": {"50256": -100},
        "extra_body": {"provider": {"order": ["a"]}},
    },
    {"tool_choice": {"type": "function", "function": {"name": "terminal"}}, "tools": TOOLS[:1], "n": 1, "user": "u"},
]


class _Capture(BaseHTTPRequestHandler):
    bodies: list[bytes]

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        if b'"stream":true' in self.bodies[-1]:
            payload = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}\n\n'
            payload += b"data: [DONE]\n\n"
            kind = "text/event-stream"
        else:
            payload, kind = json.dumps(COMPLETION).encode(), "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def capture() -> Iterator[tuple[openai.OpenAI, list[bytes]]]:
    """A real openai client against a loopback server that keeps each request body's bytes."""
    bodies: list[bytes] = []
    handler = type("Handler", (_Capture,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="k", max_retries=0)
    try:
        yield client, bodies
    finally:
        client.close()
        server.shutdown()
        server.server_close()


def _sent(client: openai.OpenAI, bodies: list[bytes], **kwargs: Any) -> bytes:
    response = client.chat.completions.create(model="m", **kwargs)
    if kwargs.get("stream"):
        list(response)  # type: ignore[arg-type]
    return bodies[-1]


@pytest.mark.parametrize("options", OPTIONS, ids=["stream", "tools", "formats", "tool-choice"])
@pytest.mark.parametrize("count", [1, 3, len(MESSAGES)])
def test_the_bytes_on_the_wire_are_the_sdks(
    capture: tuple[openai.OpenAI, list[bytes]], monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], count: int
) -> None:
    client, bodies = capture
    compat.request_bodies.skip_plain_transforms()
    assert compat.request_bodies.plain_transforms_skipped()
    import openai.resources.chat.completions.completions as resource

    stand_in = resource.maybe_transform
    sdk = stand_in.__wrapped__
    messages = MESSAGES[-count:]
    fast = _sent(client, bodies, messages=messages, **options)
    with monkeypatch.context() as patch:
        patch.setattr(resource, "maybe_transform", sdk)
        shipped = _sent(client, bodies, messages=messages, **options)
    assert fast == shipped
    assert json.loads(fast)["messages"] == messages


def test_only_plain_bodies_of_the_chat_params_skip_the_transform() -> None:
    calls: list[Any] = []

    def sdk(data: Any, expected_type: Any) -> Any:
        calls.append(data)
        return {"transformed": True}

    is_given = request_bodies.IS_GIVEN.resolve()
    streaming = completion_create_params.CompletionCreateParamsStreaming
    stand_in = request_bodies._plain_bodies(sdk, is_given, frozenset({streaming}))
    omitted = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "seed": openai.omit}
    assert stand_in(omitted, streaming) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    }
    assert list(stand_in(omitted, streaming)) == ["model", "messages", "stream"] and calls == []
    not_plain = [
        {"model": "m", "messages": ({"role": "user", "content": "hi"},)},  # a tuple: the SDK makes it a list
        {"model": "m", "messages": [{"role": "user", "content": b"bytes"}]},
        {"model": "m", "messages": [{1: "a non-str key"}]},
        {"model": "m", "messages": [{"role": "user", "content": "hi", "when": object()}]},
    ]
    for body in not_plain:
        assert stand_in(body, streaming) == {"transformed": True}
    assert stand_in(omitted, completion_create_params.CompletionCreateParamsNonStreaming) == {"transformed": True}
    assert stand_in(None, streaming) == {"transformed": True}
    assert len(calls) == len(not_plain) + 2


def test_plain_is_json_data() -> None:
    assert is_plain({"a": [1, 2.5, "s", True, None, {"b": []}]})
    for value in [(1,), {1: "a"}, b"x", {"a": {1, 2}}, [object()], {"a": openai.omit}]:
        assert not is_plain(value), value


class _Aliased(TypedDict, total=False):
    when: Annotated[str, PropertyInfo(format="iso8601")]


class _Part(TypedDict, total=False):
    kind: Required[str]
    inner: list[Union[str, _Aliased]]


class _Body(TypedDict, total=False):
    model: Required[str]
    parts: list[_Part]
    meta: dict[str, object]


def test_the_check_finds_a_property_info_anywhere_in_the_graph() -> None:
    assert property_info_in(_Body, PropertyInfo) == "_Aliased.when"
    for params in (
        completion_create_params.CompletionCreateParamsStreaming,
        completion_create_params.CompletionCreateParamsNonStreaming,
    ):
        assert property_info_in(params, PropertyInfo) is None


class _Unreadable(TypedDict, total=False):
    model: Required[str]
    parts: list[NoSuchType]  # type: ignore[name-defined]  # noqa: F821 (an annotation the check cannot resolve)


@pytest.mark.parametrize(
    ("params", "said"),
    [(_Body, "_Aliased.when carries a PropertyInfo"), (_Unreadable, "cannot be checked (NameError")],
    ids=["property-info", "unreadable"],
)
def test_params_with_something_to_transform_leave_the_sdk_alone(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, params: type, said: str
) -> None:
    import openai.resources.chat.completions.completions as resource

    sdk = getattr(resource.maybe_transform, "__wrapped__", resource.maybe_transform)
    monkeypatch.setattr(resource, "maybe_transform", sdk)
    monkeypatch.setattr(completion_create_params, "CompletionCreateParamsStreaming", params)
    monkeypatch.setattr(request_bodies, "_installation", Installation())
    monkeypatch.setattr(_core, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="hermes_api_plugin"):
        request_bodies.skip_plain_transforms()
    assert resource.maybe_transform is sdk and not request_bodies.plain_transforms_skipped()
    warnings = [r.getMessage() for r in caplog.records if CHAT_TRANSFORM.qualname in r.getMessage()]
    assert len(warnings) == 1 and said in warnings[0], warnings
