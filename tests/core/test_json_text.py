"""core/json_text.py: the JSON text every record, row and error body is written as — the same text as `json.dumps`
with the same options, from an encoder built once (issue 25)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_api_plugin.core import json_text
from hermes_api_plugin.core.json_text import canonical, compact

VALUES: list[Any] = [
    {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "é \u2028 \U0001f600"}, "finish_reason": None}]},
    {"z": 1, "a": {"y": [1.5, -0.0, 1e300, 10**30, True, False, None], "b": ""}},
    ["\ud800 lone surrogate", 'quote " backslash \\ control \x01 \n'],
    "a bare string",
    42,
    float("inf"),
    [],
    {},
]


@pytest.mark.parametrize("value", VALUES)
def test_compact_and_canonical_write_what_json_dumps_writes(value: Any) -> None:
    assert compact(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert canonical(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def test_a_value_json_cannot_hold_is_a_type_error_as_from_json_dumps() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        compact({"when": object()})


@pytest.mark.parametrize("value", VALUES)
def test_without_the_c_accelerator_json_dumps_itself_writes_it(value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_text._encoder, "c_make_encoder", None)
    assert json_text._text(sort_keys=True)(value) == canonical(value)
    assert json_text._text(sort_keys=False)(value) == compact(value)
