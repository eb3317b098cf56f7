"""The gateway's log lines: `text` (the message alone, as before) or `json` (one object per line with the line's
correlation fields, log_context.py) — both with secrets masked (`core/redact.py`: the configured secret values, and
whatever looks like a credential), tracebacks included."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable

from ..core.redact import redact
from .log_context import current


class RedactingFormatter(logging.Formatter):
    """The message (and traceback) as `fmt` renders it, secrets masked."""

    def __init__(self, secrets: Iterable[str] = (), fmt: str = "%(message)s") -> None:
        super().__init__(fmt)
        # longest first: a secret that contains another is masked whole
        self.secrets = tuple(sorted((s for s in secrets if s), key=len, reverse=True))

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record), self.secrets)


class JsonFormatter(RedactingFormatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, the correlation fields of the task or
    thread that logged it (route, run_id, session_id, trace_id) and the traceback, if any; secrets masked."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "ts": _iso_utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage(), self.secrets),
            **current().as_dict(),
        }
        if record.exc_info:
            line["exception"] = redact(self.formatException(record.exc_info), self.secrets)
        elif record.exc_text:
            line["exception"] = redact(record.exc_text, self.secrets)
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def _iso_utc(created: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"


def formatter(log_format: str, secrets: Iterable[str] = ()) -> logging.Formatter:
    """The formatter of `api_server.logging.format`."""
    return JsonFormatter(secrets) if log_format == "json" else RedactingFormatter(secrets)


def configure_logging(log_format: str, *, verbose: bool = False, secrets: Iterable[str] = ()) -> None:
    """The process's logging, as the reference gateway sets it: one handler on stderr for the whole process."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(log_format, secrets))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler], force=True)
