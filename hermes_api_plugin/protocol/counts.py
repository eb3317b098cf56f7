"""How many messages and input items one request may carry (issue 20, defect 3; WIRE.md §1.8).

Chat clients resend the whole visible history with every message (Open WebUI, LobeChat, LibreChat): a long chat is a
few hundred messages, an agent's history with its tool calls a few thousand. Every message costs parsing, hashing and
storing; past these counts a request is 400 `invalid_parameter` naming the field (the 10 MB body limit, 413, bounds
the bytes). The schema nodes carry them as `maxItems`, so `/openapi.json` states them.
"""

from __future__ import annotations

MAX_MESSAGES = 10_000  # chat `messages`, runs `input`, `conversation_history`
MAX_INPUT_ITEMS = 10_000  # Responses `input` items
MAX_TOOLS = 128  # runs `tools`, as OpenAI caps a request's tools
MAX_TOOL_OUTPUTS = 128  # `POST /v1/runs/{id}/tool_outputs` outputs: one per pending call at most
