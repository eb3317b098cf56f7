"""The client compatibility table of README.md ("## Client compatibility"), as data.

Each client test asserts its observations against its row (`ROWS[key].<column>.works`), and
tests/clients/test_readme_compat.py checks that the README table is exactly `render_table()` with the
versions the suite pins (pyproject's dev extra, tests/clients/node/package.json,
tests/clients/requirements-py313.txt). Print the table with `python -m tests.clients.compat`.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass

from tests.helpers import ROOT

NODE_DIR = ROOT / "tests" / "clients" / "node"
PY313_REQUIREMENTS = ROOT / "tests" / "clients" / "requirements-py313.txt"
README = ROOT / "README.md"
SECTION = "## Client compatibility"


@dataclass(frozen=True)
class Cell:
    works: bool | None  # None: the client has no such surface
    note: str = ""

    def render(self) -> str:
        mark = {True: "yes", False: "no", None: "—"}[self.works]
        return f"{mark}: {self.note}" if self.note else mark


@dataclass(frozen=True)
class Row:
    key: str  # the pytest id part naming the client
    client: str  # markdown
    packages: tuple[tuple[str, str], ...]  # (ecosystem, package name): "pypi" | "npm" | "py313"
    chat: Cell
    responses: Cell
    reasoning: Cell
    tool_progress: Cell
    client_tools: Cell  # WIRE §15: a tool the client lends the agent, and the server's own tools beside it


ROWS: dict[str, Row] = {
    row.key: row
    for row in (
        Row(
            key="openai-python",
            client="OpenAI Python SDK",
            packages=(("pypi", "openai"),),
            chat=Cell(True, "raw stream, `.stream()` final completion, JSON"),
            responses=Cell(True, "`.stream()` final response, `create()`"),
            reasoning=Cell(
                True, "`reasoning_content` in `model_extra` (concatenated by `.stream()`); Responses summaries"
            ),
            tool_progress=Cell(
                True, "chat: empty-delta chunks with the progress fields in `model_extra`; Responses: tool items"
            ),
            client_tools=Cell(
                True,
                "Responses: `function_call` and `mcp_approval_request` items, answered with `previous_response_id`",
            ),
        ),
        Row(
            key="openai-python-websocket",
            client="OpenAI Python SDK, Responses WebSocket mode",
            packages=(("pypi", "openai"),),
            chat=Cell(None),
            responses=Cell(
                True,
                "`responses.connect()` sync and async: sequential responses on one socket, `store: false` continued "
                "there, errors as `ResponseWsError` events, `on_reconnecting` after a gateway restart",
            ),
            reasoning=Cell(True, "summary deltas and items, as over SSE"),
            tool_progress=Cell(True, "tool items; `mcp_call` with a client tool or `X-Hermes-Tool-Items: hosted`"),
            client_tools=Cell(True, "`function_call` answered on the same socket with `previous_response_id`"),
        ),
        Row(
            key="openai-node",
            client="OpenAI Node SDK",
            packages=(("npm", "openai"),),
            chat=Cell(True, "raw stream, `.stream().finalChatCompletion()`"),
            responses=Cell(True, "`.stream().finalResponse()`"),
            reasoning=Cell(
                True,
                "raw `delta.reasoning_content`; `finalChatCompletion()` keeps only the last delta; Responses summaries",
            ),
            tool_progress=Cell(
                True, "chat: empty-delta chunks with the progress fields at the chunk root; Responses: tool items"
            ),
            client_tools=Cell(None, "not exercised by the suite"),
        ),
        Row(
            key="vercel-openai-compatible",
            client="Vercel AI SDK + `@ai-sdk/openai-compatible`",
            packages=(("npm", "ai"), ("npm", "@ai-sdk/openai-compatible")),
            chat=Cell(True, "`streamText`, finish `stop`"),
            responses=Cell(None),
            reasoning=Cell(True, "`reasoning` parts"),
            tool_progress=Cell(False, "progress chunks are ignored"),
            client_tools=Cell(True, "`generateText` / `streamText` with a `tool()` and `stopWhen`: runs it once"),
        ),
        Row(
            key="vercel-openai-responses",
            client="Vercel AI SDK + `@ai-sdk/openai` `.responses()`",
            packages=(("npm", "ai"), ("npm", "@ai-sdk/openai")),
            chat=Cell(None),
            responses=Cell(True, "`streamText` (one step); commentary arrives as an empty text block"),
            reasoning=Cell(True, "`reasoning` parts from the summaries"),
            tool_progress=Cell(True, "each server tool as a `tool-call` + `tool-error` part, finish `tool-calls`"),
            client_tools=Cell(
                True, "a `tool()` runs once; with it declared, server tools are provider-executed `mcp.*` calls"
            ),
        ),
        Row(
            key="hermes-agent-api-client",
            client="`hermes-agent-api-client`",
            packages=(("py313", "hermes-agent-api-client"),),
            chat=Cell(True, "`stream_chat_events()`, one `TerminalEvent(success)`"),
            responses=Cell(None),
            reasoning=Cell(False, "not surfaced"),
            tool_progress=Cell(True, "`ToolProgressEvent` running / completed"),
            client_tools=Cell(None),
        ),
        Row(
            key="openai-agents",
            client="OpenAI Agents SDK",
            packages=(("pypi", "openai-agents"),),
            chat=Cell(True, "`OpenAIChatCompletionsModel`, `Runner.run` / `run_streamed`"),
            responses=Cell(True, "`OpenAIResponsesModel`"),
            reasoning=Cell(None, "not checked"),
            tool_progress=Cell(None, "not checked"),
            client_tools=Cell(
                True, "a `@function_tool` runs once; server tools arrive as `mcp_call` items it never runs"
            ),
        ),
        Row(
            key="openai-agents-websocket",
            client="OpenAI Agents SDK, Responses WebSocket mode",
            packages=(("pypi", "openai-agents"),),
            chat=Cell(None),
            responses=Cell(True, "`OpenAIResponsesWSModel`, `Runner.run` / `run_streamed`, one socket per model"),
            reasoning=Cell(None, "not checked"),
            tool_progress=Cell(None, "not checked"),
            client_tools=Cell(
                True, "a `@function_tool` runs once over the socket; server tools arrive as `mcp_call` items"
            ),
        ),
        Row(
            key="pydantic-ai",
            client="Pydantic AI",
            packages=(("pypi", "pydantic-ai-slim"),),
            chat=Cell(True, "`OpenAIChatModel`, `run` / `run_stream`"),
            responses=Cell(None, "not checked"),
            reasoning=Cell(None, "not checked"),
            tool_progress=Cell(None, "not checked"),
            client_tools=Cell(True, "a `tool_plain` runs once; server tools never reach it"),
        ),
        Row(
            key="langchain-openai",
            client="LangChain `ChatOpenAI`",
            packages=(("pypi", "langchain-openai"),),
            chat=Cell(True, "`bind_tools` in a tool loop, `invoke` streaming and not"),
            responses=Cell(None, "not checked"),
            reasoning=Cell(None, "not checked"),
            tool_progress=Cell(None, "not checked"),
            client_tools=Cell(True, "the bound tool runs once; `AIMessage.tool_calls` never holds a server tool"),
        ),
        Row(
            key="llm",
            client="`llm`",
            packages=(("pypi", "llm"),),
            chat=Cell(True, "`model.chain(..., tools=[...])` JSON and stream, `llm prompt --functions`"),
            responses=Cell(None),
            reasoning=Cell(None, "not checked"),
            tool_progress=Cell(None, "not checked"),
            client_tools=Cell(True, "the function runs once; server tools never reach it"),
        ),
    )
}

HEADER = (
    "Client",
    "Version",
    "Chat Completions",
    "Responses",
    "Reasoning shown",
    "Tool progress shown",
    "Client tools (§15)",
)


def _requirement_pin(lines: list[str], name: str) -> str:
    for line in lines:
        match = re.fullmatch(rf"\s*{re.escape(name)}(?:\[[^\]]*\])?\s*==\s*([^\s;#]+).*", line, flags=re.IGNORECASE)
        if match:  # extras (`pydantic-ai-slim[openai]`) are part of the requirement, not of the name
            return match.group(1)
    raise LookupError(f"{name} is not pinned with == ")


def pyproject_pin(name: str) -> str:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return _requirement_pin(data["project"]["optional-dependencies"]["dev"], name)


def npm_pin(name: str) -> str:
    data = json.loads((NODE_DIR / "package.json").read_text(encoding="utf-8"))
    version = data["dependencies"][name]
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise LookupError(f"{name} is not pinned to an exact version in package.json: {version}")
    return version


def py313_pin(name: str) -> str:
    return _requirement_pin(PY313_REQUIREMENTS.read_text(encoding="utf-8").splitlines(), name)


def pinned_version(ecosystem: str, name: str) -> str:
    return {"pypi": pyproject_pin, "npm": npm_pin, "py313": py313_pin}[ecosystem](name)


def version_cell(row: Row) -> str:
    return " + ".join(f"`{name}` {pinned_version(eco, name)}" for eco, name in row.packages)


def render_table() -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for row in ROWS.values():
        cells = (
            row.client,
            version_cell(row),
            row.chat.render(),
            row.responses.render(),
            row.reasoning.render(),
            row.tool_progress.render(),
            row.client_tools.render(),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def readme_table() -> str:
    """The first markdown table after the README's compatibility heading, as text."""
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION + "\n")
    lines = text[start:].splitlines()[1:]
    table: list[str] = []
    for line in lines:
        if line.startswith("|"):
            table.append(line)
        elif table or line.startswith("## "):
            break
    return "\n".join(table) + "\n"


if __name__ == "__main__":
    print(render_table(), end="")
