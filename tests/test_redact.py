"""Secret redaction (redact.py): what it masks, and that a failed turn's error message passes it on every surface
(WIRE.md §1.7: a message never carries a key, token or credential). Tool labels: tests/routes/test_chat_stream.py."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.redact import MASK, mask_url, redact
from tests.helpers import fetch
from tests.live import TEST_KEY

LEAKED = "sk-abcdefghijklmnopqrstuv"  # what tests/scripts/chat.yaml's "fail leaking" turn puts into its error


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("key sk-abcdefghijklmn0123 used", "key *** used"),
        ("token ghp_abcdefghijklmnop0123 here", "token *** here"),
        ("slack xoxb-1234567890-0987654321-AbCdEfGhIjKl ok", "slack *** ok"),
        ("user xoxp-1234567890-0987654321-1122334455-abcdef ok", "user *** ok"),
        ("Authorization: Bearer abcdefghijklmnop.qrs", "Authorization: ***"),
        ("OPENAI_API_KEY=abc123 rest", "OPENAI_API_KEY=*** rest"),
        ('password: "two words" end', "password: *** end"),
        ("plain words stay", "plain words stay"),
        ("at postgresql://hermes:pw%40x@db:5432/h failed", "at postgresql://hermes:***@db:5432/h failed"),
        ("see https://example.org/a:b@c", "see https://example.org/a:b@c"),  # a path, no user info
    ],
)
def test_credential_shaped_strings_are_masked(text: str, masked: str) -> None:
    assert redact(text) == masked


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://hermes:s3cret@db:5432/h?sslmode=require", "postgresql://hermes:***@db:5432/h?sslmode=require"),
        ("postgres://:s3cret@db/h", "postgres://:***@db/h"),
        ("postgresql://db/h?user=hermes&password=s3cret", "postgresql://db/h?user=hermes&password=***"),
        ("postgresql://hermes@db/h", "postgresql://hermes@db/h"),
    ],
)
def test_a_url_is_logged_with_its_password_masked(url: str, masked: str) -> None:
    assert mask_url(url) == masked


def test_configured_secret_values_are_masked_wherever_they_appear() -> None:
    assert redact(f"prefix{TEST_KEY}suffix", (TEST_KEY, "")) == f"prefix{MASK}suffix"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "fail leaking"}]}),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "fail leaking"}], "stream": True}),
        ("/v1/responses", {"input": "fail leaking"}),
        ("/v1/responses", {"input": "fail leaking", "stream": True}),
    ],
)
async def test_a_failed_turns_error_message_never_carries_the_key_or_a_token(
    api: TestClient, auth: dict[str, str], path: str, body: dict[str, object]
) -> None:
    """The agent's error text names the API key and a provider token; the client gets the message with both masked."""
    reply = await fetch(api, "POST", path, json=body, headers=auth)
    assert reply.status == 200
    assert b"Provider said: Authorization: Bearer *** invalid for ***" in reply.raw
    assert LEAKED.encode() not in reply.raw and TEST_KEY.encode() not in reply.raw
