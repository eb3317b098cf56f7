"""The contract checks every schemathesis request is held to (used in-process and, as `SCHEMATHESIS_HOOKS`, by the
CLI's stateful phase). Each call appends one line to $FUZZ_COUNT_FILE when set, so the run's cost is counted.

- `error_envelope`: nothing reaches 500; every non-2xx answer is the one JSON error envelope (WIRE.md §1.7).
- `schema_valid_data_passes_the_parsers`: for data generated as valid, a 400 only for a rule a JSON Schema cannot
  state — otherwise /openapi.json and the parsers disagree (they are rendered from one definition: this checks it).
- `nothing_left_behind`: once answered, the request leaves no turn running or queued, no slot admitted and no
  stream open on the gateway (`/health/detailed`, issue 20); the gateway to ask is set by `watch` (in-process) or by
  $FUZZ_HEALTH_URL and $FUZZ_HEALTH_AUTHORIZATION (the CLI).
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from typing import Any

import schemathesis

from tests.helpers import ERROR_KEYS

# Rules a JSON Schema cannot state: the last message is the user's, `background` needs `store`, a provider configured
# on this host, an `after` id of that response, references to stored ids, a compaction item this server made, a
# conversation to compact that has a message, a part that names an uploaded file (`file_id`: an extra field the open
# part schemas allow, refused because this server keeps no uploads, §9).
SEMANTIC_REJECTIONS = {
    ("unsupported_content_type", None),
    ("invalid_encrypted_content", None),
    ("nothing_to_compact", None),
    ("missing_user_message", None),
    ("conflicting_parameters", None),
    ("item_reference_not_found", None),
    ("tool_call_not_found", None),  # an output of a call the conversation never made (§16)
    ("invalid_parameter", "provider"),
    ("invalid_parameter", "background"),
    ("invalid_parameter", "after"),
}


LEFT_BEHIND_WAIT_S = 10.0  # a detached turn of the fuzz script settles in milliseconds
HEALTH: dict[str, str] = {}


def watch(url: str, authorization: str) -> None:
    """Check `nothing_left_behind` against this gateway (its base URL and Authorization value)."""
    HEALTH.update(url=url.rstrip("/") + "/health/detailed", authorization=authorization)


def _count() -> None:
    path = os.environ.get("FUZZ_COUNT_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(".")


def error_envelope(ctx: Any, response: Any, case: Any) -> bool | None:
    _count()
    if response.status_code >= 500:
        raise AssertionError(f"{response.status_code} for {case.method} {case.formatted_path}: {response.text[:300]}")
    if response.status_code >= 300:
        content_type = response.headers.get("content-type", [""])[0]
        assert content_type.startswith("application/json"), (case.method, case.formatted_path, content_type)
        body = json.loads(response.text)
        assert list(body) == ["error"] and set(body["error"]) == ERROR_KEYS, body
    return None


def schema_valid_data_passes_the_parsers(ctx: Any, response: Any, case: Any) -> bool | None:
    if response.status_code == 400 and not case.meta.generation.mode.is_negative:
        error = json.loads(response.text)["error"]
        code, param = error["code"], error["param"]
        if (code, None) not in SEMANTIC_REJECTIONS and (code, param) not in SEMANTIC_REJECTIONS:
            raise AssertionError(f"schema-valid data rejected by {case.method} {case.path}: {error}")
    return None


def _held() -> dict[str, int]:
    request = urllib.request.Request(HEALTH["url"], headers={"Authorization": HEALTH["authorization"]})
    with urllib.request.urlopen(request, timeout=10) as reply:
        api = json.loads(reply.read())["api_server"]
    return {**api["turns"], "admitted": api["slots"]["admitted"], "streams": api["streams"]["open"]}


def nothing_left_behind(ctx: Any, response: Any, case: Any) -> bool | None:
    if not HEALTH:
        return None
    deadline = time.monotonic() + LEFT_BEHIND_WAIT_S
    while any((held := _held()).values()):
        if time.monotonic() > deadline:
            raise AssertionError(f"left behind by {case.method} {case.formatted_path}: {held}")
        time.sleep(0.005)
    return None


if os.environ.get("FUZZ_HEALTH_URL"):
    watch(os.environ["FUZZ_HEALTH_URL"], os.environ.get("FUZZ_HEALTH_AUTHORIZATION", ""))
if os.environ.get("FUZZ_REGISTER_CHECKS"):  # loaded by the CLI as SCHEMATHESIS_HOOKS
    schemathesis.check(error_envelope)
    schemathesis.check(schema_valid_data_passes_the_parsers)
    schemathesis.check(nothing_left_behind)
