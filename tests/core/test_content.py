"""Content parts and images (WIRE.md §9): through POST /v1/chat/completions and parse_content directly."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.core.content import ImagePart, TextPart, parse_content
from hermes_api_plugin.core.errors import ApiError
from tests.helpers import CHAT, DEFAULT_ANSWER, PNG

from ..helpers import assert_error_envelope, read_reply
from ..live import executions

SYSTEM = {"role": "system", "content": "Be brief."}
UNSUPPORTED_MESSAGE = (
    "Uploaded files (file_id) and this content type are not supported; send images as image_url parts and files "
    "inline as file_data"
)


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


async def chat(api: TestClient, auth: dict[str, str], *messages: dict[str, Any], **headers: str) -> Any:
    return await api.post(CHAT, json={"model": "hermes-agent", "messages": list(messages)}, headers={**auth, **headers})


async def completion(resp: Any) -> dict[str, Any]:
    raw = await resp.read()
    assert resp.status == 200, raw[:500]
    body = json.loads(raw)
    assert body["object"] == "chat.completion"
    return body


async def content_error(resp: Any, code: str, param: str) -> dict[str, Any]:
    """W-9.2: 400 with the §1.7 envelope, type invalid_request_error, the code and the offending part's param."""
    return assert_error_envelope(await read_reply(resp), 400, code, param=param, type="invalid_request_error")


def last_input(api: TestClient) -> dict[str, Any]:
    runs = executions(api.home)  # type: ignore[attr-defined]
    assert runs, "the agent was not executed"
    return runs[-1]["input"]


# -- W-9.1 images reach the agent ---------------------------------------------------------------


@pytest.mark.parametrize(
    "url,detail",
    [
        ("https://example.com/cat.png", "high"),
        (PNG, "low"),
        ("http://example.com/a.jpg?x=1", "auto"),
        ("data:image/jpeg;base64,/9j/4AAQSkZJRg==", "high"),
    ],
    ids=["https", "data_png", "http", "data_jpeg"],
)
async def test_image_url_part_reaches_agent_with_detail(
    api: TestClient, auth: dict[str, str], url: str, detail: str
) -> None:
    """W-9.1: a chat image_url part (https or data:image/…;base64) reaches the agent as an image, detail kept."""
    parts = [
        {"type": "text", "text": "What is in this image?"},
        {"type": "image_url", "image_url": {"url": url, "detail": detail}},
    ]
    body = await completion(await chat(api, auth, SYSTEM, user(parts)))
    assert body["choices"][0]["message"]["content"] == DEFAULT_ANSWER
    assert last_input(api) == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this image?"},
            {"type": "image_url", "image_url": {"url": url, "detail": detail}},
        ],
    }


async def test_image_without_detail_reaches_agent_without_detail(api: TestClient, auth: dict[str, str]) -> None:
    """W-9.1: detail is optional; an image_url given as a string is accepted too (§9 table)."""
    parts = [
        {"type": "text", "text": "Describe"},
        {"type": "image_url", "image_url": "https://example.com/dog.webp"},
        {"type": "image_url", "image_url": {"url": PNG}},
    ]
    await completion(await chat(api, auth, user(parts)))
    assert last_input(api)["content"] == [
        {"type": "text", "text": "Describe"},
        {"type": "image_url", "image_url": {"url": "https://example.com/dog.webp"}},
        {"type": "image_url", "image_url": {"url": PNG}},
    ]


async def test_input_image_part_reaches_agent_with_detail(api: TestClient, auth: dict[str, str]) -> None:
    """W-9.1: the Responses-style input_image part is an image too, detail preserved."""
    parts = [
        {"type": "input_text", "text": "What is it?"},
        {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "low"},
    ]
    await completion(await chat(api, auth, user(parts)))
    assert last_input(api)["content"] == [
        {"type": "text", "text": "What is it?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
    ]


async def test_image_only_user_message_is_a_visible_turn(api: TestClient, auth: dict[str, str]) -> None:
    """§9 / W-3.9: a turn with an image and no text is visible, not missing_user_message."""
    await completion(await chat(api, auth, user([{"type": "image_url", "image_url": {"url": PNG}}])))
    assert last_input(api) == {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PNG}}]}


async def test_system_message_images_are_dropped(api: TestClient, auth: dict[str, str]) -> None:
    """§9: system/developer content is text only; image parts there are dropped, not an error."""
    system = {
        "role": "system",
        "content": [
            {"type": "text", "text": "Be brief."},
            {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}},
        ],
    }
    await completion(await chat(api, auth, system, user("hello")))
    run = executions(api.home)[-1]  # type: ignore[attr-defined]
    assert run["system_prompt"] == "Be brief."
    assert run["input"] == {"role": "user", "content": [{"type": "text", "text": "hello"}]}


# -- W-9.2 unsupported content ------------------------------------------------------------------

UNSUPPORTED_PARTS: dict[str, Any] = {
    "file": {"type": "file", "file": {"file_id": "file-abc123"}},
    "input_file": {"type": "input_file", "file_id": "file-abc123"},
    "file_data_with_file_id": {"type": "input_file", "file_id": "f", "file_data": "aGk="},
    "file_id_only": {"file_id": "file-abc123"},
    "image_with_file_id": {"type": "input_image", "file_id": "file-abc123"},
    "text_with_file_id": {"type": "text", "text": "hi", "file_id": "file-abc123"},
    "input_audio": {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    "refusal": {"type": "refusal", "refusal": "no"},
    "unknown_type": {"type": "video_url", "video_url": {"url": "https://example.com/v.mp4"}},
    "pdf_data_url": {"type": "image_url", "image_url": {"url": "data:application/pdf;base64,JVBERi0xLjQK"}},
    "text_data_url": {"type": "image_url", "image_url": {"url": "data:text/plain,hi"}},
    "pdf_data_url_input_image": {"type": "input_image", "image_url": "data:application/pdf;base64,JVBERi0xLjQK"},
}


@pytest.mark.parametrize("part", list(UNSUPPORTED_PARTS.values()), ids=list(UNSUPPORTED_PARTS))
async def test_unsupported_part_gets_400_naming_the_part(api: TestClient, auth: dict[str, str], part: Any) -> None:
    """W-9.2: file, input_file, file_id, input_audio, unknown types and non-image data: URLs → unsupported_content_type."""
    err = await content_error(
        await chat(api, auth, SYSTEM, user([part])), "unsupported_content_type", "messages[1].content[0]"
    )
    assert err["message"] == UNSUPPORTED_MESSAGE
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_unsupported_part_param_names_its_index(api: TestClient, auth: dict[str, str]) -> None:
    """W-9.2: param points at the offending part, not the first one."""
    parts = [{"type": "text", "text": "Summarise this"}, {"type": "input_file", "file_id": "file-1"}]
    await content_error(
        await chat(api, auth, SYSTEM, user(parts)), "unsupported_content_type", "messages[1].content[1]"
    )


async def test_unsupported_part_in_history_is_rejected(api: TestClient, auth: dict[str, str]) -> None:
    """W-9.2: content errors are found in any message, with that message's index."""
    history = [
        SYSTEM,
        user("hi"),
        {"role": "assistant", "content": "hello"},
        user([{"type": "file", "file": {"file_id": "f"}}]),
        {"role": "assistant", "content": "ok"},
        user("next"),
    ]
    await content_error(await chat(api, auth, *history), "unsupported_content_type", "messages[3].content[0]")


# -- invalid image URLs and malformed parts ------------------------------------------------------

INVALID_URLS = {
    "empty": "",
    "blank": "   ",
    "ftp": "ftp://example.com/cat.png",
    "file_scheme": "file:///etc/passwd",
    "javascript": "javascript:alert(1)",
    "no_scheme": "example.com/cat.png",
    "data_image_not_base64": "data:image/png,abc",
}


@pytest.mark.parametrize("url", list(INVALID_URLS.values()), ids=list(INVALID_URLS))
@pytest.mark.parametrize("shape", ["image_url_object", "image_url_string", "input_image"])
async def test_invalid_image_url_gets_400(api: TestClient, auth: dict[str, str], url: str, shape: str) -> None:
    """W-9.1 / §9: empty URL, another scheme, or an image data URL without ;base64, → invalid_image_url."""
    part = {
        "image_url_object": {"type": "image_url", "image_url": {"url": url}},
        "image_url_string": {"type": "image_url", "image_url": url},
        "input_image": {"type": "input_image", "image_url": url},
    }[shape]
    await content_error(await chat(api, auth, SYSTEM, user([part])), "invalid_image_url", "messages[1].content[0]")
    assert executions(api.home) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("detail", ["", 5, ["high"]], ids=["empty", "number", "list"])
async def test_invalid_detail_gets_invalid_content_part(api: TestClient, auth: dict[str, str], detail: Any) -> None:
    """§9: detail, when present, must be a non-empty string, else invalid_content_part."""
    parts = [{"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": detail}}]
    await content_error(await chat(api, auth, SYSTEM, user(parts)), "invalid_content_part", "messages[1].content[0]")


MALFORMED_PARTS: dict[str, Any] = {
    "number": 42,
    "null": None,
    "boolean": True,
    "nested_list": [{"type": "text", "text": "hi"}],
    "no_type": {"text": "hi"},
    "text_without_text": {"type": "text"},
    "text_not_string": {"type": "text", "text": 5},
    "image_url_missing": {"type": "image_url"},
    "image_url_number": {"type": "image_url", "image_url": 5},
    "input_image_missing_url": {"type": "input_image"},
    # found by tests/fuzz: an unhashable type used to be a 500
    "type_is_a_list": {"type": ["text"], "text": "hi"},
    "type_is_an_object": {"type": {"text": 1}, "text": "hi"},
}


@pytest.mark.parametrize("part", list(MALFORMED_PARTS.values()), ids=list(MALFORMED_PARTS))
async def test_malformed_part_gets_invalid_content_part(api: TestClient, auth: dict[str, str], part: Any) -> None:
    """§9: a part that is neither string nor object, or lacks its required field → invalid_content_part."""
    parts = [{"type": "text", "text": "look:"}, part]
    await content_error(await chat(api, auth, SYSTEM, user(parts)), "invalid_content_part", "messages[1].content[1]")
    assert executions(api.home) == []  # type: ignore[attr-defined]


# -- W-9.3 structured content is never a slash command -------------------------------------------


async def test_structured_reset_reaches_agent_as_text(api: TestClient, auth: dict[str, str]) -> None:
    """W-9.3: a content list whose text is /reset reaches the agent as text and gets a normal reply."""
    body = await completion(await chat(api, auth, user([{"type": "text", "text": "/reset"}])))
    assert body["choices"][0]["message"]["content"] == DEFAULT_ANSWER
    assert body["choices"][0]["finish_reason"] == "stop"
    assert last_input(api) == {"role": "user", "content": [{"type": "text", "text": "/reset"}]}


async def test_plain_string_reset_reaches_agent_as_text(api: TestClient, auth: dict[str, str]) -> None:
    """§9 / W-9.3: plain string input is not a slash command on this endpoint either."""
    body = await completion(await chat(api, auth, user("/reset")))
    assert body["choices"][0]["message"]["content"] == DEFAULT_ANSWER
    assert last_input(api) == {"role": "user", "content": [{"type": "text", "text": "/reset"}]}


async def test_structured_reset_resets_nothing_in_the_session(api: TestClient, auth: dict[str, str]) -> None:
    """W-9.3: after a structured /reset on a session, the next turn still receives the whole history."""
    sid = "content-reset-session"
    await completion(await chat(api, auth, user("first question"), **{"X-Hermes-Session-Id": sid}))
    await completion(await chat(api, auth, user([{"type": "text", "text": "/reset"}]), **{"X-Hermes-Session-Id": sid}))
    await completion(await chat(api, auth, user("third question"), **{"X-Hermes-Session-Id": sid}))
    runs = executions(api.home)  # type: ignore[attr-defined]
    assert len(runs) == 3
    history = runs[-1]["history"]
    user_texts = [m["content"][0]["text"] for m in history if m["role"] == "user"]
    assert user_texts == ["first question", "/reset"]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]


# -- parse_content unit tests (W-9.1, W-9.2, W-1.13) -------------------------------------------------


def expect_error(content: Any, code: str, param: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_content(content, "messages[1].content")
    err = info.value
    assert (err.status, err.code, err.param, err.type) == (400, code, param, "invalid_request_error")


def test_parse_content_string_and_none() -> None:
    """§9: content is a string, a list, or null (no parts)."""
    assert parse_content("hello", "content") == (TextPart("hello"),)
    assert parse_content("", "content") == ()
    assert parse_content(None, "content") == ()
    assert parse_content([], "content") == ()


def test_parse_content_text_part_types_and_bare_strings() -> None:
    """§9 table: text / input_text / output_text parts and bare strings in a list are text."""
    parts = parse_content(
        ["a", {"type": "text", "text": "b"}, {"type": "input_text", "text": "c"}, {"type": "output_text", "text": "d"}],
        "content",
    )
    assert parts == (TextPart("a"), TextPart("b"), TextPart("c"), TextPart("d"))


def test_parse_content_images_keep_url_and_detail() -> None:
    """W-9.1: image_url (object or string) and input_image become ImagePart with detail preserved."""
    parts = parse_content(
        [
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}},
            {"type": "image_url", "image_url": PNG},
            {"type": "input_image", "image_url": "https://example.com/b.png", "detail": "low"},
            {"type": "image_url", "image_url": {"url": "data:image/svg+xml;base64,PHN2Zy8+"}},
        ],
        "content",
    )
    assert parts == (
        ImagePart("https://example.com/a.png", "high"),
        ImagePart(PNG, None),
        ImagePart("https://example.com/b.png", "low"),
        ImagePart("data:image/svg+xml;base64,PHN2Zy8+", None),
    )
    assert parts[0].to_json() == {
        "type": "image_url",
        "image_url": {"url": "https://example.com/a.png", "detail": "high"},
    }
    assert parts[1].to_json() == {"type": "image_url", "image_url": {"url": PNG}}


@pytest.mark.parametrize("part", list(UNSUPPORTED_PARTS.values()), ids=list(UNSUPPORTED_PARTS))
def test_parse_content_rejects_unsupported_parts(part: Any) -> None:
    """W-9.2: unsupported_content_type with the part's path."""
    expect_error([{"type": "text", "text": "x"}, part], "unsupported_content_type", "messages[1].content[1]")


def test_an_inline_file_the_agent_cannot_read_is_a_note_naming_it() -> None:
    """§16 (Open Responses `input_file`): a PDF sent as file_data is accepted; the agent reads a note naming it."""
    pdf = {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}
    chat_shape = {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}}
    for part in (pdf, chat_shape):
        (note,) = parse_content([part], "content")
        assert note == TextPart("[Attached file a.pdf (application/pdf, 5 bytes): its content cannot be read here]")


def test_an_inline_text_file_is_given_as_its_text() -> None:
    """§16: a text file (by MIME type, or guessed from its name for bare base64) reaches the agent as its text."""
    (csv,) = parse_content([{"type": "input_file", "filename": "t.csv", "file_data": "data:text/csv;base64,YSxi"}], "c")
    (bare,) = parse_content([{"type": "input_file", "filename": "n.txt", "file_data": "aGVsbG8="}], "c")
    assert csv == TextPart("[File t.csv]\na,b\n[End of file t.csv]")
    assert bare == TextPart("[File n.txt]\nhello\n[End of file n.txt]")


def test_file_data_that_is_not_base64_is_400_naming_the_part() -> None:
    expect_error(["x", {"type": "input_file", "file_data": "!!"}], "invalid_content_part", "messages[1].content[1]")


@pytest.mark.parametrize("url", list(INVALID_URLS.values()), ids=list(INVALID_URLS))
def test_parse_content_rejects_invalid_image_urls(url: str) -> None:
    """§9: invalid_image_url with the part's path."""
    expect_error([{"type": "image_url", "image_url": {"url": url}}], "invalid_image_url", "messages[1].content[0]")


@pytest.mark.parametrize("part", list(MALFORMED_PARTS.values()), ids=list(MALFORMED_PARTS))
def test_parse_content_rejects_malformed_parts(part: Any) -> None:
    """§9: invalid_content_part with the part's path."""
    expect_error(["ok", part], "invalid_content_part", "messages[1].content[1]")


def test_parse_content_rejects_empty_detail() -> None:
    """§9: detail "" → invalid_content_part."""
    expect_error(
        [{"type": "image_url", "image_url": {"url": "https://e.com/a.png", "detail": ""}}],
        "invalid_content_part",
        "messages[1].content[0]",
    )


def test_parse_content_part_limit() -> None:
    """W-1.13: at most 1000 parts per content list; 1001 → invalid_content_part."""
    assert len(parse_content(["a"] * 1000, "content")) == 1000
    with pytest.raises(ApiError) as info:
        parse_content(["a"] * 1001, "messages[0].content")
    assert info.value.code == "invalid_content_part"
    assert info.value.status == 400
    assert info.value.param is not None and info.value.param.startswith("messages[0].content")
