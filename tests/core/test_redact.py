"""Secret redaction (redact.py): what it masks, and that a failed turn's error message passes it on every surface
(WIRE.md §1.7: a message never carries a key, token or credential). Tool labels: tests/routes/test_chat_stream.py."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.core.redact import MASK, mask_store_text, mask_url, redact, url_secrets
from tests.helpers import STORE_PASSWORD, fetch
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


# -- issue 20, defect 8: a mistyped store URL or DSN never reaches a log unmasked ---------------------------------

MALFORMED_STORE_URLS = [
    f"postgresql:/hermes:{STORE_PASSWORD}@db/h",  # one slash
    f"hermes:{STORE_PASSWORD}@db/h",  # no scheme
    f"postgresql:hermes:{STORE_PASSWORD}@db/h",  # no slash at all
    f"host=db password={STORE_PASSWORD}",  # a libpq key=value DSN
    f"host=db password='{STORE_PASSWORD} x' sslpassword={STORE_PASSWORD}",
    f"postgresql://hermes@db/h?sslpassword={STORE_PASSWORD}",
    f"postgresql://hermes@db/h?password={STORE_PASSWORD}&sslmode=require",
    f"postgresql://hermes:{STORE_PASSWORD}@x@db/h",  # an unencoded '@' in the password
    f"postgresql://hermes:{STORE_PASSWORD}/x:y@db/h",  # an unencoded '/' and ':'
    "postgres://hermes:s3cret%40pw@db/h",  # percent-encoded '@'
]


@pytest.mark.parametrize("url", MALFORMED_STORE_URLS)
def test_issue_20_defect_8_every_form_of_a_store_url_is_masked(url: str) -> None:
    masked = mask_url(url)
    assert STORE_PASSWORD not in masked and "s3cret%40pw" not in masked and "s3cret@pw" not in masked, masked
    assert MASK in masked


@pytest.mark.parametrize("url", MALFORMED_STORE_URLS)
def test_issue_20_defect_8_a_driver_message_quoting_the_url_or_its_password_is_masked(url: str) -> None:
    secrets = url_secrets(url)
    assert secrets, "every malformed URL here carries a password"
    for secret in secrets:
        message = mask_store_text(f'missing "=" after "{url}" in connection info string; password "{secret}"', url)
        assert STORE_PASSWORD not in message and secret not in message, message


def test_issue_20_defect_8_a_url_without_a_password_is_left_as_it_is() -> None:
    assert mask_url("postgresql://hermes@db:5432/h") == "postgresql://hermes@db:5432/h"
    assert url_secrets("postgresql://hermes@db:5432/h") == ()
