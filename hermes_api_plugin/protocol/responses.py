"""POST /v1/responses: the request (WIRE.md §4.1), its §5.2 identity, how it renders the server's own tools (§15.3),
and its input items resolved into messages (item references looked up, stored tool outputs substituted, §4.7; the
result of a server-executed call sent back by an agent loop ignored, §15.3).

Turn-taking (§15.3): the items after the request's last user message may answer a suspended turn —
`mcp_approval_response` items by `approval_request_id`, `function_call_output` items by `call_id` (`trailing_answers`).
As history, `mcp_approval_request` and `mcp_approval_response` items are kept with the input and never reach the
agent. Outputs of the client's own calls that no suspended turn takes are the turn's input (`results_input`): the agent
continues with them, as a model continues after tool results.

Long because the input item vocabulary (§4.1, §15.3) and its resolution are one contract."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol

from ..core.client_tools import CHOOSE_AUTO, ClientTool, ToolChoice
from ..core.content import Message, TextPart, ToolCall, parse_content, text_message
from ..core.errors import invalid_parameter, invalid_request
from ..core.offload import LARGE_MESSAGES, off_loop
from .chat import MAX_TOOLS, ToolResult, results_input
from .client_tools import TOOL_CHOICE, parse_client_tools, parse_tool_choice
from .common import (
    CONTENT,
    CONVERSATION_HISTORY,
    EFFORT,
    MODEL_SELECTION,
    ModelSelection,
    conversation_history,
    identity_hash,
    parse_model_selection,
)
from .compaction_item import COMPACTION_ITEM, decode_summary, summary_message
from .counts import MAX_INPUT_ITEMS
from .limits import ID_MAX, METADATA, NAME_MAX, short
from .params import IntText, Param
from .response_settings import SETTINGS_PROPS, ResponseSettings, parse_settings
from .schema import AnyJson, Arr, Bool, Either, Obj, Prop, Str, Tagged


class ItemLookup(Protocol):
    """What input resolution reads from the store."""

    async def find_item(self, scope: str, item_id: str) -> dict[str, Any] | None: ...

    async def find_tool_output(self, scope: str, call_id: str) -> str | None: ...


def _input_item_id(response_id: str, index: int) -> str:
    return "msg_" + hashlib.sha256(f"{response_id}:input:{index}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class ResponsesRequest:
    """A validated POST /v1/responses body (input items not yet resolved)."""

    input: list[Any]
    instructions: str | None
    previous_response_id: str | None
    conversation: str | None
    conversation_history: list[Message] | None
    store: bool
    stream: bool
    background: bool
    selection: ModelSelection
    tools: list[Any]  # as sent: echoed on the Response object
    tool_choice: Any  # as sent: echoed
    parallel_tool_calls: bool
    metadata: dict[str, Any]
    identity: Callable[[], str]  # the §5.2 identity hash, computed when a key asks for it
    client_tools: tuple[ClientTool, ...] = ()  # the declared function tools, lent to the agent (§15.3)
    choice: ToolChoice = CHOOSE_AUTO
    settings: ResponseSettings = field(default_factory=ResponseSettings)  # what the Response object echoes (§16)

    @property
    def declares_function_tools(self) -> bool:
        """Whether the client declared function tools of its own (`tools` entries with type `function`)."""
        return bool(self.client_tools)


def hosted_tools(request: ResponsesRequest, header_mode: str, configured: str) -> bool:
    """WIRE.md §15.3: a new Response renders the server's own tools as `mcp_call` items (so that no agent loop runs
    them) when the request declares client function tools, sends `X-Hermes-Tool-Items: hosted`, or the gateway is
    configured `api_server.responses.tool_items: hosted`; otherwise as the §4.2 function_call pairs."""
    return header_mode == "hosted" or configured == "hosted" or request.declares_function_tools


_ID = short(ID_MAX, min_length=1)
# A tool definition is echoed on the Response object: its type (required: every echoed tool has one, as OpenAI and
# Open Responses require) and its name are short strings, the rest (its JSON Schema `parameters`, …) is kept as sent;
# a function tool is then checked as OpenAI checks it (parse_client_tools). Tools of other types (`custom`, the
# built-ins) are only echoed, so the function rules (client_tools.RESPONSES_TOOL) are not theirs.
_TOOL = Obj(
    (Prop("type", short(NAME_MAX), True), Prop("name", short(NAME_MAX))),
    name="ResponsesTool",
    description="A tool definition, echoed as sent; function tools are lent to the agent for this turn (§15.3)",
)
APPROVAL_SCOPES = ("session", "always")
_CALL_ID = short(ID_MAX)
_MESSAGE_ITEM = Obj(
    name="InputMessageItem",
    props=(
        Prop("type", Str(enum=("message",))),
        Prop("role", Str(enum=("user", "assistant", "system", "developer")), True),
        Prop("content", CONTENT),
    ),
)
_ITEM = Tagged(
    "type",
    {
        "message": _MESSAGE_ITEM,
        "item_reference": Obj(
            name="ItemReference",
            props=(Prop("type", Str(enum=("item_reference",)), True), Prop("id", _ID, True)),
            description="A stored item of an earlier response of this credential (§4.1)",
        ),
        "function_call": Obj(
            name="FunctionCallItem",
            props=(
                Prop("type", Str(enum=("function_call",)), True),
                Prop("call_id", _CALL_ID, True),
                Prop("name", short(NAME_MAX), True),
                Prop("arguments", Str(), description="JSON string; `{}` when absent"),
            ),
        ),
        "function_call_output": Obj(
            name="FunctionCallOutputItem",
            props=(
                Prop("type", Str(enum=("function_call_output",)), True),
                Prop("call_id", _CALL_ID, True),
                Prop("output", AnyJson(description="String or list of text parts")),
            ),
        ),
        "mcp_call": Obj(
            name="McpCallItem",
            props=(
                Prop("type", Str(enum=("mcp_call",)), True),
                Prop("id", _CALL_ID),
                Prop("name", short(NAME_MAX), True),
                Prop("arguments", Str(), description="JSON string; `{}` when absent"),
                Prop("output", AnyJson(description="The tool's result")),
            ),
            description="An earlier server tool as a hosted Response rendered it (§15.3): history, never executed",
        ),
        "mcp_approval_request": Obj(
            name="McpApprovalRequestItem",
            props=(
                Prop("type", Str(enum=("mcp_approval_request",)), True),
                Prop("id", _CALL_ID),
                Prop("server_label", short(NAME_MAX)),
                Prop("name", short(NAME_MAX)),
                Prop("arguments", Str()),
            ),
            description="An approval a suspended Response asked for (§15.3): history, never sent to the agent",
        ),
        "mcp_approval_response": Obj(
            name="McpApprovalResponseItem",
            props=(
                Prop("type", Str(enum=("mcp_approval_response",)), True),
                Prop("approval_request_id", _CALL_ID, True),
                Prop("approve", Bool(), True),
                Prop("scope", Str(enum=APPROVAL_SCOPES), description="Extension: approve for the session or always"),
                Prop("id", _CALL_ID),
            ),
            description="The decision on an mcp_approval_request (§15.3): resumes the turn that waits for it",
        ),
        "compaction": COMPACTION_ITEM,
        "reasoning": Obj(
            name="ReasoningItem",
            props=(Prop("type", Str(enum=("reasoning",)), True),),
            description="Accepted and skipped: reasoning is not sent back to the model",
        ),
    },
    default="message",
)
# `input` as POST /v1/responses and POST /v1/responses/compact check it
INPUT = Either(
    (Str(), Arr(Either((Str(), _ITEM)), max_items=MAX_INPUT_ITEMS)),
    expected="a string or an array of items",
)
RESPONSES_BODY = Obj(
    name="ResponseCreateRequest",
    props=(
        Prop("input", INPUT, True),
        Prop("instructions", Str(), description="System prompt for this turn"),
        Prop("previous_response_id", short(ID_MAX), description="Continue a stored response's chain (§4.7)"),
        Prop(
            "conversation",
            Either((_ID, Obj((Prop("id", _ID, True),))), expected='a string or {"id"}'),
            description="A named conversation (§4.7); not with previous_response_id",
        ),
        CONVERSATION_HISTORY,
        Prop("store", Bool(), description="Store the response (default true)"),
        Prop("stream", Bool(), description="Stream the §4.2 events"),
        Prop("background", Bool(), description="Run detached; poll GET /v1/responses/{id} (needs store)"),
        Prop("truncation", Str(enum=("auto", "disabled"))),
        *MODEL_SELECTION,
        Prop(
            "reasoning", Obj((Prop("effort", EFFORT), Prop("summary", AnyJson()))), description="`effort` is an alias"
        ),
        Prop("metadata", METADATA),
        Prop(
            "tools",
            Arr(_TOOL, max_items=MAX_TOOLS),
            description="Function tools lent to the agent (§15.3); other types are echoed, not offered",
        ),
        Prop("tool_choice", TOOL_CHOICE),
        Prop("parallel_tool_calls", Bool()),
        *SETTINGS_PROPS,
    ),
    description="The sampling and output settings (temperature, top_p, max_output_tokens, text, …) are checked and "
    "echoed on the Response object, not applied: the agent's model settings are its own (§16)",
)


RESPONSE_PATH = (Param("response_id", _ID, "path"),)
GET_QUERY = (
    Param("stream", Bool(), default=False, description="Re-stream the stored events (§4.6)"),
    Param("starting_after", IntText(-1, 1_000_000_000), default=-1, description="Resume after this sequence_number"),
)
INPUT_ITEMS_QUERY = (
    Param("limit", IntText(1, 100), default=20),
    Param("order", Str(enum=("asc", "desc")), default="desc"),
    Param("after", short(ID_MAX), description="An item id of this response: the page starts after it"),
)


def parse_responses_request(raw: dict[str, Any], providers: frozenset[str]) -> ResponsesRequest:
    body = RESPONSES_BODY.check(raw, "")
    value = raw["input"]  # items as sent: resolve_input reads them (and stored ones) itself
    items: list[Any] = [value] if isinstance(value, str) else value
    if not items or (isinstance(value, str) and not value.strip()):
        raise invalid_request("missing_user_message", "'input' must contain a user message", "input")
    previous = body.get("previous_response_id")
    conversation = body.get("conversation")
    if isinstance(conversation, dict):
        conversation = conversation["id"]
    if previous is not None and conversation is not None:
        raise invalid_request(
            "conflicting_parameters", "Send either 'previous_response_id' or 'conversation', not both", "conversation"
        )
    store = body.get("store", True)
    background = body.get("background", False)
    if background and not store:
        raise invalid_parameter("'background' requires 'store': true", "background")
    instructions = body.get("instructions")
    selection = parse_model_selection(body, providers, alias_effort=body.get("reasoning", {}).get("effort"))
    tools = parse_client_tools(body.get("tools"))
    choice = parse_tool_choice(raw.get("tool_choice"), tools)
    return ResponsesRequest(
        input=items,
        instructions=instructions,
        previous_response_id=previous,
        conversation=conversation,
        conversation_history=conversation_history(body),
        store=store,
        stream=body.get("stream", False),
        background=background,
        selection=selection,
        tools=body.get("tools") or [],
        tool_choice=raw.get("tool_choice", "auto"),
        parallel_tool_calls=body.get("parallel_tool_calls", True),
        metadata=body.get("metadata") or {},
        identity=partial(_identity, raw, previous, conversation, instructions, selection),
        client_tools=tools,
        choice=choice,
        settings=parse_settings(body, selection.reasoning_effort if selection.reasoning_enabled else "none"),
    )


@dataclass(frozen=True)
class ApprovalAnswer:
    """An `mcp_approval_response` input item: the decision on the approval request `request_id` (§15.3)."""

    request_id: str
    approve: bool
    scope: str | None = None  # session | always: the extension's wider approvals

    @property
    def choice(self) -> str:
        """The decision as Hermes names it: once, session, always or deny."""
        return (self.scope or "once") if self.approve else "deny"


@dataclass(frozen=True)
class TrailingAnswers:
    """What the items after a request's last user message answer (§15.3), and that message's text (a question's
    answer), as sent: item references are not looked up."""

    approvals: tuple[ApprovalAnswer, ...] = ()
    outputs: tuple[ToolResult, ...] = ()
    text: str | None = None  # the last user message's text, when it is the last item that is a message

    @property
    def any(self) -> bool:
        return bool(self.approvals or self.outputs)


def trailing_answers(items: Sequence[Any]) -> TrailingAnswers:
    """The approval decisions and tool outputs after the last user message of a checked `input` (§15.3)."""
    approvals: list[ApprovalAnswer] = []
    outputs: list[ToolResult] = []
    text: str | None = None
    for item in reversed(items):
        if isinstance(item, str):
            text = item
            break
        if not isinstance(item, dict):
            break
        kind = item.get("type") or "message"
        if kind == "mcp_approval_response":
            approvals.append(ApprovalAnswer(item["approval_request_id"], bool(item["approve"]), item.get("scope")))
        elif kind == "function_call_output":
            outputs.append(ToolResult(item["call_id"], _output_text(item.get("output"))))
        elif kind == "message" and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                text = content
            elif isinstance(content, list):
                text = "".join(
                    p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
                )
            break
        elif kind == "message":
            break
    return TrailingAnswers(tuple(reversed(approvals)), tuple(reversed(outputs)), text)


# The turn input of a request that brought nothing new but results of calls the server already ran (§15.3): the
# agent continues the conversation instead of the request being refused with missing_user_message.
NOTHING_NEW = (
    "[The client sent back results of tool calls you already ran and saw; there is no new message from the user.]"
)


@dataclass(frozen=True)
class ResolvedInput:
    messages: list[Message]  # history items first, the turn input last
    system: list[str]
    stored_items: list[dict[str, Any]]
    # call ids of outputs of the client's own calls whose function_call is not in this input: it must be in the
    # conversation the request continues, or the output answers nothing (`unanswerable_outputs`)
    unpaired_outputs: tuple[str, ...] = ()


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(p.get("text", "") for p in output if isinstance(p, dict))
    return "" if output is None else str(output)


async def resolve_input(
    items: Sequence[Any], store: ItemLookup, scope: str, response_id: str, *, turn: bool = True
) -> ResolvedInput:
    """Input items → messages (item references resolved, stored tool outputs substituted). The store is read first;
    the conversion of thousands of items then runs off the event loop (issue 20, defect 3). `turn`: the last message
    is a turn's input (False: a conversation to compact, §16)."""
    found: dict[int, Any] = {}
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("type") == "item_reference":
            ref = item.get("id")
            found[i] = await store.find_item(scope, ref) if isinstance(ref, str) else None
            if found[i] is None:
                raise invalid_request("item_reference_not_found", f"No stored item with id {ref!r}", f"input[{i}]")
    resolved = [found.get(i, item) for i, item in enumerate(items)]
    outputs: dict[str, str | None] = {}
    for item in resolved:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            call_id = item.get("call_id")
            if isinstance(call_id, str) and call_id not in outputs:
                outputs[call_id] = await store.find_tool_output(scope, call_id)  # a tool this server ran: its output
    return await off_loop(lambda: _convert(resolved, outputs, response_id, turn), len(items) > LARGE_MESSAGES)


def _convert(items: Sequence[Any], outputs: dict[str, str | None], response_id: str, turn: bool) -> ResolvedInput:
    messages: list[Message] = []
    system: list[str] = []
    stored: list[dict[str, Any]] = []
    calls: set[str] = set()  # call ids of this input's function_call items
    answered: set[str] = set()  # call ids whose output this input already gave the agent
    ignored = False
    server_result_last = False  # the last message so far is the result of a tool the server ran (its stored output)
    client_results: list[ToolResult] = []  # the trailing outputs of the client's own calls (none the server ran)
    client_outputs: list[str] = []  # the call ids of every output of the client's own calls
    summary_last = False  # the last message so far is a compaction's summary (§16): context, never a turn's input
    for i, item in enumerate(items):
        param = f"input[{i}]"
        own_id = _input_item_id(response_id, i)
        if isinstance(item, str):
            item = {"type": "message", "role": "user", "content": item}
        if not isinstance(item, dict):
            raise invalid_parameter(f"'{param}' must be a string or an object", param)
        kind = item.get("type")
        kind = "message" if kind is None else kind  # `type` absent or null
        if kind == "reasoning":
            continue
        if kind in ("mcp_approval_request", "mcp_approval_response"):
            # §15.3: the approval exchange of a suspended Response — kept with the input, never given to the agent
            stored.append(
                {**item, "id": own_id.replace("msg_", "mcpr_" if kind == "mcp_approval_request" else "mcpa_", 1)}
            )
            continue
        server_result_last = summary_last = False
        if kind != "function_call_output":
            client_results.clear()
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise invalid_parameter(f"'{param}.role' must be user, assistant, system or developer", param)
            parts = parse_content(item.get("content"), f"{param}.content")
            if role in ("system", "developer"):
                system.append("".join(p.text for p in parts if isinstance(p, TextPart)))
            else:
                messages.append(Message(role, parts))
            content = item.get("content")
            if isinstance(content, str):
                content = [{"type": "input_text" if role != "assistant" else "output_text", "text": content}]
            stored.append({"id": own_id, "type": "message", "role": role, "status": "completed", "content": content})
        elif kind == "function_call":
            call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments") or "{}"
            if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(arguments, str):
                raise invalid_parameter(f"'{param}' needs string 'call_id', 'name' and 'arguments'", param)
            messages.append(Message("assistant", (), tool_calls=(ToolCall(call_id, name, arguments),)))
            stored.append({**item, "id": own_id.replace("msg_", "fc_", 1)})
            calls.add(call_id)
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise invalid_parameter(f"'{param}' needs a string 'call_id'", param)
            stored.append({**item, "id": own_id.replace("msg_", "fco_", 1)})
            output = outputs.get(call_id)
            if output is not None and (call_id not in calls or call_id in answered):
                # §15.3: the result of a call the server ran, sent back by an agent loop (after previous_response_id,
                # or again after the pair): the agent already has it. Given to it, it would be a tool result
                # without its call, which providers refuse.
                ignored = True
                continue
            answered.add(call_id)
            text = output if output is not None else _output_text(item.get("output"))
            messages.append(text_message("tool", text, tool_call_id=call_id))
            server_result_last = output is not None
            if output is None:
                client_results.append(ToolResult(call_id, text))
                client_outputs.append(call_id)
        elif kind == "compaction":
            summary = decode_summary(item.get("encrypted_content"), f"{param}.encrypted_content")
            messages.append(summary_message(summary))
            stored.append({**item, "id": own_id.replace("msg_", "ci_", 1)})
            summary_last = True
        elif kind == "mcp_call":
            name, arguments = item.get("name"), item.get("arguments") or "{}"
            if not isinstance(name, str) or not isinstance(arguments, str):
                raise invalid_parameter(f"'{param}' needs string 'name' and 'arguments'", param)
            # The item's own id stands for the call id (an mcp_call has none): the pair stays together.
            sent_id = item.get("id")
            call_id = sent_id if isinstance(sent_id, str) else own_id.replace("msg_", "mcp_", 1)
            messages.append(Message("assistant", (), tool_calls=(ToolCall(call_id, name, arguments),)))
            messages.append(text_message("tool", _output_text(item.get("output")), tool_call_id=call_id))
            stored.append({**item, "id": own_id.replace("msg_", "mcp_", 1)})
        else:
            raise invalid_parameter(f"'{param}' has an unsupported type {kind!r}", param)
    if not turn:
        return ResolvedInput(messages, system, stored)
    if client_results and messages and messages[-1].role == "tool":
        # §15.3: the outputs of the client's own calls that no suspended turn took (it timed out, the gateway
        # restarted): the agent continues with them as its input, their calls and results out of the history.
        messages = _without_calls(messages, {r.call_id for r in client_results})
        messages.append(results_input(tuple(client_results)))
    if (ignored or server_result_last) and not (messages and messages[-1].role == "user"):
        # Nothing new but results of the server's own calls — ignored, or a resent call + output pair (the Vercel AI
        # SDK's agent loop resends the whole history with its tool error last): never 400 (§15.3).
        messages.append(text_message("user", NOTHING_NEW))
    if not messages or messages[-1].role != "user" or not messages[-1].visible or summary_last:
        raise invalid_request(
            "missing_user_message", "The last input item must be a user message with text or an image", "input"
        )
    unpaired = tuple(dict.fromkeys(c for c in client_outputs if c not in calls))
    return ResolvedInput(messages, system, stored, unpaired)


def unanswerable_outputs(unpaired: Sequence[str], history: Sequence[Message], previous_output: Sequence[Any]) -> None:
    """WIRE.md §15.3, as OpenAI answers it: an output of the client's own call needs that call — a function_call of
    the input, of the Response it continues (`previous_output`) or of the conversation's history; an output whose
    call_id none of them made is 400."""
    known = {i.get("call_id") for i in previous_output if isinstance(i, dict) and i.get("type") == "function_call"}
    known.update(call.id for message in history for call in message.tool_calls)
    for call_id in unpaired:
        if call_id not in known:
            raise invalid_request(
                "tool_call_not_found", f"No tool call found for function call output with call_id {call_id}.", "input"
            )


_STORED_PREFIX = {
    "function_call": "fc_",
    "function_call_output": "fco_",
    "mcp_call": "mcp_",
    "mcp_approval_request": "mcpr_",
    "mcp_approval_response": "mcpa_",
    "compaction": "ci_",
}


def stored_item(item: Any, response_id: str, index: int) -> dict[str, Any]:
    """An input item as a Response stores it (WIRE.md §4.8): a string becomes a user message item, every item gets
    its own id derived from the response id and its place."""
    own_id = _input_item_id(response_id, index)
    if isinstance(item, str):
        item = {"type": "message", "role": "user", "content": item}
    kind = item.get("type") or "message"
    if kind == "message":
        role, content = item.get("role"), item.get("content")
        if isinstance(content, str):
            content = [{"type": "input_text" if role != "assistant" else "output_text", "text": content}]
        return {"id": own_id, "type": "message", "role": role, "status": "completed", "content": content}
    return {**item, "id": own_id.replace("msg_", _STORED_PREFIX.get(kind, "msg_"), 1)}


def stored_input_items(items: Sequence[Any], response_id: str) -> list[dict[str, Any]]:
    """The input items of a request that answered a suspended turn, as stored with its Response (no item is resolved:
    its turn was planned by the request it answered)."""
    return [stored_item(item, response_id, i) for i, item in enumerate(items) if not _skipped(item)]


def _skipped(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "reasoning"


def _without_calls(messages: list[Message], call_ids: set[str]) -> list[Message]:
    """The messages without the tool calls `call_ids` and their results (an assistant message left with neither text
    nor calls is dropped)."""
    kept: list[Message] = []
    for message in messages:
        if message.role == "tool" and message.tool_call_id in call_ids:
            continue
        if message.tool_calls and any(c.id in call_ids for c in message.tool_calls):
            calls = tuple(c for c in message.tool_calls if c.id not in call_ids)
            if not calls and not message.parts:
                continue
            message = replace(message, tool_calls=calls)
        kept.append(message)
    return kept


def _identity(
    raw: dict[str, Any],
    previous: str | None,
    conversation: str | None,
    instructions: str | None,
    selection: ModelSelection,
) -> str:
    """WIRE.md §5.2: the identity fields as sent, string input and effort spellings folded."""
    value = raw.get("input")
    fields: dict[str, Any] = {
        "input": [{"role": "user", "content": value}] if isinstance(value, str) else value,
        "instructions": instructions,
        "previous_response_id": previous,
        "conversation": conversation,
        "conversation_history": raw.get("conversation_history"),
        "model": selection.model,
        "provider": selection.provider,
        "model_options": selection.identity_options(),
        "tools": raw.get("tools"),
    }
    if "truncation" in raw:
        fields["truncation"] = raw["truncation"]
    return identity_hash(fields)
