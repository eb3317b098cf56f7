"""Input content: parts (text, image), messages, and their validation (WIRE.md §9).

Every content error names the offending part in `param` (e.g. `messages[1].content[0]`).
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from .errors import ApiError, invalid_request

MAX_PARTS = 1000
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
_FILE_TYPES = frozenset({"file", "input_file"})
_IMAGE_DATA_URL = re.compile(r"^data:image/[A-Za-z0-9.+-]+;base64,", re.IGNORECASE)
_UNSUPPORTED = (
    "Uploaded files (file_id) and this content type are not supported; send images as image_url parts and files "
    "inline as file_data"
)
_DATA_URL = re.compile(r"^data:([^;,]*)(?:;[^;,]*)*?(;base64)?,(.*)$", re.DOTALL | re.IGNORECASE)
_TEXT_MIMES = frozenset({"application/json", "application/xml", "application/x-yaml", "application/yaml"})


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ImagePart:
    url: str
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        image: dict[str, Any] = {"url": self.url}
        if self.detail is not None:
            image["detail"] = self.detail
        return {"type": "image_url", "image_url": image}


Part = Union[TextPart, ImagePart]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the agent made (history only: the server executed it)."""

    id: str
    name: str
    arguments: str  # JSON string

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True, slots=True)
class Message:
    """A conversation message as the agent receives it (OpenAI chat message semantics)."""

    role: str  # user | assistant | tool
    parts: tuple[Part, ...]
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()  # assistant messages that called tools
    tool_call_id: str | None = None  # tool messages: the call this is the result of
    # The host's own form of this message (a row of Hermes' conversation), handed back to the host's agent verbatim:
    # its api_content sidecar, tool name and reasoning details keep the provider's prompt prefix byte-stable across
    # turns. Not part of the message's value (equality, hashing, to_json).
    native: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ImagePart))

    @property
    def visible(self) -> bool:
        return bool(self.text.strip()) or bool(self.images)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"role": self.role, "content": [p.to_json() for p in self.parts]}
        if self.reasoning:
            body["reasoning"] = self.reasoning
        if self.tool_calls:
            body["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.tool_call_id is not None:
            body["tool_call_id"] = self.tool_call_id
        return body

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        parts = parse_content(data.get("content", ""), "content")
        calls = tuple(
            ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in data.get("tool_calls") or ()
        )
        return cls(
            role=str(data.get("role", "user")),
            parts=parts,
            reasoning=data.get("reasoning"),
            tool_calls=calls,
            tool_call_id=data.get("tool_call_id"),
        )


def text_message(role: str, text: str, **fields: Any) -> Message:
    return Message(role, (TextPart(text),) if text else (), **fields)


def _unsupported(param: str) -> ApiError:
    return invalid_request("unsupported_content_type", _UNSUPPORTED, param)


def _image(url: Any, detail: Any, param: str) -> ImagePart:
    if not isinstance(url, str) or not url.strip():
        raise invalid_request("invalid_image_url", "Image URL must be a non-empty http(s) or data:image URL", param)
    url = url.strip()
    lowered = url.lower()
    if lowered.startswith("data:"):
        if not lowered.startswith("data:image/"):
            raise _unsupported(param)
        if not _IMAGE_DATA_URL.match(url):
            raise invalid_request(
                "invalid_image_url", "Image data URLs must be base64: data:image/<type>;base64,<data>", param
            )
    elif not (lowered.startswith("http://") or lowered.startswith("https://")):
        raise invalid_request("invalid_image_url", "Image URL must use http, https or a data:image URL", param)
    if detail is not None and (not isinstance(detail, str) or not detail.strip()):
        raise invalid_request("invalid_content_part", "Image 'detail' must be a non-empty string", param)
    return ImagePart(url=url, detail=detail)


def _inline_file(data: Any, filename: Any, param: str) -> TextPart:
    """A file sent inline (`file_data`: a data URL or bare base64, WIRE.md §16): the agent reads text, so a text file
    is given as its text and any other file (a PDF, an archive…) as a note naming it — the agent can say it cannot
    read it, the request is never refused for it."""
    if not isinstance(data, str) or not data.strip():
        raise invalid_request("invalid_content_part", "'file_data' must be a data URL or base64 text", param)
    name = filename.strip() if isinstance(filename, str) and filename.strip() else "file"
    found = _DATA_URL.match(data)
    mime = (found.group(1) if found else "").lower() or (mimetypes.guess_type(name)[0] or "application/octet-stream")
    if found and not found.group(2):  # a data URL without ;base64: percent-encoded
        raw = urllib.parse.unquote_to_bytes(found.group(3))
    else:
        try:
            raw = base64.b64decode("".join((found.group(3) if found else data).split()), validate=True)
        except (binascii.Error, ValueError):
            message = "'file_data' must be base64 (or a data URL)"
            raise invalid_request("invalid_content_part", message, param) from None
    if mime.startswith("text/") or mime in _TEXT_MIMES:
        try:
            return TextPart(f"[File {name}]\n{raw.decode('utf-8')}\n[End of file {name}]")
        except UnicodeDecodeError:
            pass
    return TextPart(f"[Attached file {name} ({mime}, {len(raw)} bytes): its content cannot be read here]")


def parse_part(part: Any, param: str) -> Part:
    if isinstance(part, str):
        return TextPart(part)
    if not isinstance(part, dict):
        raise invalid_request("invalid_content_part", "A content part must be a string or an object", param)
    kind = part.get("type")
    if not isinstance(kind, (str, type(None))):  # e.g. a list, which a set lookup cannot even hash
        raise invalid_request("invalid_content_part", "A content part needs a string 'type'", param)
    if kind in _FILE_TYPES and "file_id" not in part:
        inline = part.get("file") if kind == "file" else part
        if isinstance(inline, dict) and "file_id" not in inline and inline.get("file_data") is not None:
            return _inline_file(inline.get("file_data"), inline.get("filename"), param)
    if "file_id" in part or kind in _FILE_TYPES:
        raise _unsupported(param)
    if kind in _TEXT_TYPES:
        text = part.get("text")
        if not isinstance(text, str):
            raise invalid_request("invalid_content_part", f"A '{kind}' part needs a string 'text'", param)
        return TextPart(text)
    if kind == "image_url":
        image = part.get("image_url")
        if isinstance(image, str):
            return _image(image, part.get("detail"), param)
        if not isinstance(image, dict):
            raise invalid_request(
                "invalid_content_part", "An 'image_url' part needs an 'image_url' object or string", param
            )
        return _image(image.get("url"), image.get("detail"), param)
    if kind == "input_image":
        if part.get("image_url") is None:
            raise invalid_request("invalid_content_part", "An 'input_image' part needs an 'image_url' string", param)
        return _image(part.get("image_url"), part.get("detail"), param)
    if not isinstance(kind, str):
        raise invalid_request("invalid_content_part", "A content part needs a string 'type'", param)
    raise _unsupported(param)


def parse_content(content: Any, param: str) -> tuple[Part, ...]:
    """Validate a content value (string, list of parts, or null) into parts."""
    if content is None:
        return ()
    if isinstance(content, str):
        return (TextPart(content),) if content else ()
    if not isinstance(content, list):
        raise invalid_request("invalid_content_part", "Content must be a string or a list of parts", param)
    if len(content) > MAX_PARTS:
        raise invalid_request("invalid_content_part", f"A content list holds at most {MAX_PARTS} parts", param)
    return tuple(parse_part(part, f"{param}[{i}]") for i, part in enumerate(content))
