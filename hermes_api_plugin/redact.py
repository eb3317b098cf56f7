"""Secret redaction for text that leaves the server (error messages, tool labels) and for what it logs."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

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


def mask_url(url: str) -> str:
    """A URL as it may be logged: its password (user info, or a `password=` query parameter) masked."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL at all: mask what looks like a credential anyway
        return redact(url)
    return redact(url, (password,) if password else ())
