"""dialects/record.py: the wire's JSON and the templates that encode a chat delta once per stream (issue 25)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_api_plugin.dialects.record import Encoded, Template, wire_json

TEXTS = ["", "x", 'quote " and \\ backslash', "línea\nnueva\t", "emoji 😀", "\u2028\u2029", "\x00\x1f", "\ue000"]


def chunk(model: str) -> Any:
    return lambda text: {"id": "chatcmpl-1", "model": model, "choices": [{"delta": {"content": text}}]}


@pytest.mark.parametrize("text", TEXTS)
def test_a_filled_template_is_the_mapping_and_exactly_its_json(text: str) -> None:
    build = chunk("hermes-agent")
    filled = Template(build).fill(text)
    assert type(filled) is Encoded
    assert filled == build(text)
    assert wire_json(filled) == json.dumps(build(text), ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("model", [Template.MARK, f"model{Template.MARK}", f'"{Template.MARK}"'])
def test_a_payload_that_holds_the_marker_elsewhere_is_still_encoded_exactly(model: str) -> None:
    """A client names its model anything, the marker too: where the template cannot split, it fills plain mappings;
    either way the bytes are what encoding the whole payload writes."""
    build = chunk(model)
    filled = Template(build).fill("text")
    assert filled == build("text")
    assert wire_json(filled) == json.dumps(build("text"), ensure_ascii=False, separators=(",", ":"))
    if model == Template.MARK:
        assert type(filled) is dict
