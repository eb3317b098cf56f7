"""Start-up migration of config.yaml: drop the obsolete `browser.extension_control` section (WIRE.md §11).

Line-based on purpose: every other byte of the file (keys, comments, order, indentation) stays as it
was, which a YAML round trip would not guarantee.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from pathlib import Path

log = logging.getLogger("hermes_api_plugin")

_BROWSER = re.compile(r"^browser\s*:\s*(#.*)?$")
_CHILD = re.compile(r"^(\s+)extension_control\s*:")
MIGRATED = (
    "[API Server] Removed obsolete browser.extension_control from config.yaml (use browser.cdp_url / browser_exec)"
)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def without_extension_control(text: str) -> str | None:
    """`text` without the `browser.extension_control` block, or None when the file has none."""
    lines = text.splitlines(keepends=True)
    for top, line in enumerate(lines):
        if not _BROWSER.match(line.rstrip("\r\n")):
            continue
        child_level: int | None = None  # the indentation of browser's direct children
        for i in range(top + 1, len(lines)):
            candidate = lines[i]
            if not _content(candidate):
                continue
            if _indent(candidate) == 0:
                break  # the browser mapping ended without the key
            if child_level is None:
                child_level = _indent(candidate)
            match = _CHILD.match(candidate)
            if match is None or len(match.group(1)) != child_level:
                continue  # not a direct child (e.g. browser.profiles.work.extension_control)
            level = child_level
            end = i + 1
            while end < len(lines):
                following = lines[end]
                if _content(following):
                    if _indent(following) <= level:
                        break
                elif not following.strip() or _indent(following) <= level:
                    # A blank line or a shallow comment belongs to the section only if the section goes on.
                    rest = next((ln for ln in lines[end + 1 :] if _content(ln)), None)
                    if rest is None or _indent(rest) <= level:
                        break
                end += 1
            return "".join(lines[:i] + lines[end:])
        return None
    return None


def migrate_config(path: Path) -> bool:
    """Rewrite `path` without the obsolete section; True when it changed. Never raises for I/O."""
    try:
        text = path.read_bytes().decode("utf-8")  # bytes: CRLF line ends stay as they are
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("[API Server] Could not read %s to remove browser.extension_control: %s", path, exc)
        return False
    updated = without_extension_control(text)
    if updated is None:
        return False
    tmp: str | None = None
    try:
        mode = path.stat().st_mode & 0o777
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config.", suffix=".yaml")
        with os.fdopen(fd, "wb") as fh:
            fh.write(updated.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        log.warning("[API Server] Could not rewrite %s (%s); ignoring browser.extension_control", path, exc)
        return False
    log.info(MIGRATED)
    return True
