"""Secret redaction for text that leaves the server (error messages, tool labels)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_PATTERNS = (
    re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{12,}"),
    re.compile(r"\b(ghp|gho|ghs|ghu|ghr|github_pat)_[A-Za-z0-9_]{12,}"),
    re.compile(r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}"),  # Slack tokens: xoxb-…, xoxp-…, xoxe-… (hyphenated)
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{12,}=*"),
    re.compile(r"(?i)\b([A-Z0-9_]*(?:api[_-]?key|token|secret|password|passwd))(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)"),
)
MASK = "***"


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Mask known secret values and credential-looking substrings."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    for pattern in _PATTERNS[:-1]:
        text = pattern.sub(MASK, text)
    return _PATTERNS[-1].sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
