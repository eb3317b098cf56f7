"""Drive `hermes-agent-api-client` against a running gateway; runs under Python >= 3.13 (tests/clients/.venv313).

Not a test module: tests/clients/test_hermes_api_client.py and the keepalive run start it as a subprocess.
Environment: HERMES_BASE_URL (the server root, without /v1), HERMES_API_KEY, HERMES_PROMPTS (a JSON list of
user messages; one chat stream each). Prints one JSON line:
{"version", "capabilities" | "capabilities_error", "streams": [{"prompt", "events": [[type, fields]…],
"error"?, "elapsed_s"}]}.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

import hermes_agent_api_client as hermes


def failure(error: BaseException) -> dict[str, Any]:
    return {"type": type(error).__name__, "message": str(error), "status_code": getattr(error, "status_code", None)}


async def probe(base_url: str, key: str) -> dict[str, Any]:
    try:
        async with hermes.HermesAgentApiClient(base_url, key) as client:
            capabilities = await client.probe_capabilities()
    except Exception as error:
        return {"capabilities_error": failure(error)}
    return {"capabilities": capabilities.model_dump(mode="json")}


async def stream(base_url: str, key: str, prompt: str) -> dict[str, Any]:
    request = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": prompt}]}
    events: list[list[Any]] = []
    started = time.monotonic()
    result: dict[str, Any] = {"prompt": prompt, "events": events}
    try:
        async with hermes.HermesAgentApiClient(base_url, key) as client:
            async for event in client.stream_chat_events(request):
                events.append([type(event).__name__, event.model_dump(mode="json")])
    except Exception as error:
        result["error"] = failure(error)
    result["elapsed_s"] = round(time.monotonic() - started, 3)
    return result


async def main() -> int:
    base_url = os.environ["HERMES_BASE_URL"]
    key = os.environ["HERMES_API_KEY"]
    prompts = json.loads(os.environ.get("HERMES_PROMPTS", '["hello"]'))
    out: dict[str, Any] = {"version": hermes.__version__, "python": sys.version.split()[0]}
    out.update(await probe(base_url, key))
    out["streams"] = [await stream(base_url, key, prompt) for prompt in prompts]
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
