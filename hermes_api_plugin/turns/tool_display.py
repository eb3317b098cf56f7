"""How a tool call is shown: its display name, a one-line label of its arguments, its emoji, its call id."""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.ids import random_hex
from ..core.redact import redact

LABEL_MAX = 500
NAME_MAX = 256
VISIBLE_ASCII = re.compile(r"^[\x21-\x7e]{1,256}$")
_LABEL_KEYS = ("command", "cmd", "query", "url", "path", "file_path", "pattern", "code", "prompt", "goal")
_EMOJI = {
    "terminal": "💻",
    "process": "⚙️",
    "read_file": "📖",
    "write_file": "✍️",
    "patch": "🩹",
    "search_files": "🔎",
    "web_search": "🔍",
    "web_extract": "📄",
    "execute_code": "🐍",
    "delegate_task": "🔀",
    "memory": "🧠",
    "todo": "📋",
    "vision_analyze": "👁️",
    "image_generate": "🎨",
    "send_message": "💬",
    "clarify": "❓",
    "browser_exec": "🌐",
}
DEFAULT_EMOJI = "🔧"


def new_call_id() -> str:
    return "call_" + random_hex(12)


def display_tool_name(name: Any) -> str:
    """Visible ASCII names pass; anything else is written as `\\uXXXX` escapes and cut to 256 chars."""
    text = name if isinstance(name, str) else str(name)
    if VISIBLE_ASCII.match(text):
        return text
    out: list[str] = []
    for ch in text:
        if "\x21" <= ch <= "\x7e":
            out.append(ch)
        else:
            encoded = ch.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{int.from_bytes(encoded[i : i + 2], 'big'):04x}" for i in range(0, len(encoded), 2))
    return "".join(out)[:NAME_MAX] or "unknown"


def tool_emoji(name: str) -> str:
    return _EMOJI.get(name, DEFAULT_EMOJI)


def as_json_string(value: Any) -> str:
    """Tool arguments and results as the JSON string the wire carries (strings pass unchanged)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return json.dumps(str(value), ensure_ascii=False)


def tool_label(name: str, arguments: Any, secret_values: tuple[str, ...]) -> str:
    """The most telling argument (command, query, path, …) on one line, secrets redacted, cut to 500."""
    preview: str | None = None
    args = arguments
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            preview = args
    if preview is None and isinstance(args, dict):
        for key in _LABEL_KEYS:
            if isinstance(args.get(key), str) and args[key].strip():
                preview = args[key]
                break
        else:
            preview = as_json_string(args) if args else None
    text = " ".join((preview or name).split())
    return redact(text, secret_values)[:LABEL_MAX]
