"""Secret redaction for text that leaves the server (error messages, tool labels) and for what it logs."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

_PATTERNS = (
    re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{12,}"),
    re.compile(r"\b(ghp|gho|ghs|ghu|ghr|github_pat)_[A-Za-z0-9_]{12,}"),
    re.compile(r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}"),  # Slack tokens: xoxb-…, xoxp-…, xoxe-… (hyphenated)
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{12,}=*"),
    # the password of a URL's user info: scheme://user:PASSWORD@host (a database URL in an error message)
    re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@]*:)[^\s/@]+(@)"),
    re.compile(r"(?i)\b([A-Z0-9_]*(?:api[_-]?key|token|secret|password|passwd))(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)"),
)
_URL_PASSWORD = _PATTERNS[-2]
MASK = "***"


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Mask known secret values and credential-looking substrings."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    for pattern in _PATTERNS[:-2]:
        text = pattern.sub(MASK, text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}{m.group(2)}", text)
    return _PATTERNS[-1].sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)


# A store URL read leniently, as a mistyped one may come (issue 20, defect 8): `scheme:` with at least one slash, or
# nothing (`user:secret@host/db`); the user info runs to the LAST `@` (a password may hold `@`, `:` or `/`).
_URL_HEAD = re.compile(r"(?i)^\s*[a-z][a-z0-9+.\-]*:/+")
# libpq key=value and URL query parameters that carry a secret: `password=…`, `sslpassword=…`, quoted or not.
_DSN_SECRET = re.compile(r"(?i)((?:^|[\s?&;])(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&#]*)")


def _lenient_password(url: str) -> tuple[int, int] | None:
    """Where the password of a (possibly malformed) URL's user info is: (start, end), None when it has none."""
    head = _URL_HEAD.match(url)
    start = head.end() if head else 0
    at = url.rfind("@")
    colon = url.find(":", start, at) if at > start else -1
    return (colon + 1, at) if colon >= 0 else None


def userinfo_password(url: str) -> str | None:
    """The password of a URL's user info read leniently (up to the last `@`), as written; None without one. One that
    holds `@`, `/`, `?` or `#` was not percent-encoded: libpq would read part of it as the host, port or database."""
    span = _lenient_password(url)
    return None if span is None else url[span[0] : span[1]]


def url_secrets(url: str) -> tuple[str, ...]:
    """The secret values a store URL or DSN holds, as written and percent-decoded, for `redact`: the user info's
    password (read leniently), and `password=` / `sslpassword=` parameters."""
    found: list[str] = []
    lenient = userinfo_password(url)
    if lenient:
        found.append(lenient)
    found.extend(m.group(2).strip("'") for m in _DSN_SECRET.finditer(url))
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    if password:
        found.append(password)
    decoded = [unquote(value) for value in found]
    return tuple(dict.fromkeys(value for value in found + decoded if value))


def mask_url(url: str) -> str:
    """A store URL or DSN as it may be logged, however it was mistyped: the user info's password (everything between
    the first `:` after the scheme and the last `@`) and every `password=` / `sslpassword=` value masked, then
    whatever else looks like a credential (`redact`)."""
    span = _lenient_password(url)
    text = url if span is None else f"{url[: span[0]]}{MASK}{url[span[1] :]}"
    text = _DSN_SECRET.sub(lambda m: f"{m.group(1)}{MASK}", text)
    return redact(text)


def mask_store_text(text: str, url: str) -> str:
    """A message about the store (a driver's error may quote the URL or DSN): the URL masked wherever it appears,
    every secret it holds masked wherever it appears, then `redact`."""
    if url:
        text = text.replace(url, mask_url(url))
    return redact(text, sorted(url_secrets(url), key=len, reverse=True))
