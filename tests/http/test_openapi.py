"""openapi.py + protocol/operations.py: the document is rendered from the nodes the parsers check with (issue 12)."""

from __future__ import annotations

import dataclasses
from typing import Any

import jsonschema_rs
import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.protocol import approvals, chat, compaction, jobs, responses, runs, sessions
from hermes_api_plugin.protocol.operations import OPERATIONS
from hermes_api_plugin.protocol.schema import AnyJson, Obj

PROVIDERS = frozenset({"openrouter"})
# Each body schema with its parser and the smallest body it accepts.
PARSERS: dict[str, tuple[Any, dict[str, Any]]] = {
    "chat_completions": (
        lambda b: chat.parse_chat_request(b, PROVIDERS),
        {"messages": [{"role": "user", "content": "hi"}]},
    ),
    "responses": (lambda b: responses.parse_responses_request(b, PROVIDERS), {"input": "hi"}),
    "responses_compact": (lambda b: compaction.parse_compact_request(b, PROVIDERS), {"model": "m", "input": "hi"}),
    "runs": (lambda b: runs.parse_run_request(b, None, PROVIDERS), {"input": "hi"}),
    "session_create": (sessions.parse_session_create, {}),
    "session_update": (sessions.parse_session_update, {}),
    "session_fork": (sessions.parse_session_fork, {}),
    "session_chat": (lambda b: sessions.parse_session_chat(b, PROVIDERS), {"message": "hi"}),
    "run_approval": (approvals.parse_run_approval, {"choice": "once"}),
    "run_answer": (approvals.parse_run_answer, {"text": "main"}),
    "run_tool_outputs": (approvals.parse_run_tool_outputs, {"outputs": [{"call_id": "call_1", "output": "42"}]}),
    "job_create": (jobs.parse_create, {"name": "n", "schedule": "30m"}),
    "job_update": (jobs.parse_update, {"enabled": False}),
    "cron_fire": (jobs.parse_fire, {"job_id": "0123456789ab"}),
}
# A value of each JSON type: the test sends the first one whose type the field does not allow.
_VALUES = (("integer", 7), ("string", "x"), ("array", [1]), ("object", {"a": 1}), ("boolean", True))


async def _document(api: TestClient, auth: dict[str, str]) -> dict[str, Any]:
    async with api.get("/openapi.json", headers=auth) as resp:
        assert resp.status == 200
        doc: dict[str, Any] = await resp.json()
        return doc


def test_every_operation_with_a_body_has_its_parser_here() -> None:
    assert {name for name, op in OPERATIONS.items() if op.body is not None} == set(PARSERS) | {"session_chat_stream"}


def _named_objects(value: Any, seen: dict[int, None], found: dict[str, list[Obj]]) -> None:
    """Every named object node reachable from `value` (nodes, props, tuples, lists and dicts of them)."""
    if id(value) in seen or isinstance(value, (str, int, float, bool, type(None))):
        return
    seen[id(value)] = None
    if isinstance(value, Obj) and value.name is not None:
        nodes = found.setdefault(value.name, [])
        if value not in nodes:  # equal nodes render equally
            nodes.append(value)
    children: Any
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        children = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, (tuple, list)):
        children = value
    else:
        return
    for child in children:
        _named_objects(child, seen, found)


def test_a_schema_name_is_one_node() -> None:
    """The document renders a named node once under components/schemas: two different nodes with one name would
    document one of them for both (protocol/responses.py's echoed tool and client_tools.py's function tool once
    shared the name `ResponsesTool`)."""
    found: dict[str, list[Obj]] = {}
    _named_objects(list(OPERATIONS.values()), {}, found)
    assert "ResponsesTool" in found
    assert {name: len(nodes) for name, nodes in found.items() if len(nodes) > 1} == {}


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_documented_body_field_is_checked_by_the_parser(name: str) -> None:
    """A value of a type the document does not allow, in any documented field, is a 400 naming that field: what
    /openapi.json says is what the parser enforces."""
    parse, minimal = PARSERS[name]
    parse(dict(minimal))  # the minimal body is accepted
    body = OPERATIONS[name].body
    assert isinstance(body, Obj) and body.props
    for prop in body.props:
        if isinstance(prop.node, AnyJson):
            continue
        wrong = next(value for kind, value in _VALUES if kind not in prop.node.types)
        with pytest.raises(ApiError) as caught:
            parse({**minimal, prop.name: wrong})
        assert caught.value.status == 400, prop.name
        assert caught.value.param is not None and caught.value.param.startswith(prop.name), (
            prop.name,
            caught.value.param,
        )


async def test_the_document_is_valid_and_its_schemas_are_valid_json_schema(
    api: TestClient, auth: dict[str, str]
) -> None:
    doc = await _document(api, auth)
    schemas = doc["components"]["schemas"]
    operations = [(method, path, op) for path, item in doc["paths"].items() for method, op in item.items()]
    params = [(method, path, param) for method, path, op in operations for param in op.get("parameters", [])]
    bodies = [op["requestBody"] for _, _, op in operations if "requestBody" in op]
    # each list is checked whole, so an empty document cannot pass
    assert schemas and params and bodies, (len(schemas), len(params), len(bodies))
    assert [name for name, schema in schemas.items() if not jsonschema_rs.meta.is_valid(schema)] == []
    assert [(m, p, q["name"]) for m, p, q in params if not jsonschema_rs.meta.is_valid(q["schema"])] == []
    refs = [body["content"]["application/json"]["schema"]["$ref"] for body in bodies]
    assert [ref for ref in refs if ref.removeprefix("#/components/schemas/") not in schemas] == []


async def test_links_name_served_operations_and_their_parameters(api: TestClient, auth: dict[str, str]) -> None:
    """Create → read links (§8.4): every link targets a documented operation and one of its parameters."""
    doc = await _document(api, auth)
    operations = {op["operationId"]: op for item in doc["paths"].values() for op in item.values()}
    links = [
        link
        for op in operations.values()
        for response in op["responses"].values()
        for link in response.get("links", {}).values()
    ]
    assert len(links) >= 10
    for link in links:
        target = operations[link["operationId"]]
        names = {p["name"] for p in target.get("parameters", [])}
        assert set(link["parameters"]) <= names, link


async def test_capabilities_endpoints_are_documented_paths(api: TestClient, auth: dict[str, str]) -> None:
    doc = await _document(api, auth)
    async with api.get("/v1/capabilities", headers=auth) as resp:
        endpoints = (await resp.json())["endpoints"]
    documented = {(method.upper(), path) for path, item in doc["paths"].items() for method in item}
    assert {(e["method"], e["path"]) for e in endpoints.values()} <= documented


async def test_query_parameters_are_documented_with_their_bounds(api: TestClient, auth: dict[str, str]) -> None:
    doc = await _document(api, auth)
    listing = {p["name"]: p for p in doc["paths"]["/api/sessions"]["get"]["parameters"]}
    assert listing["limit"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}
    messages = {p["name"]: p for p in doc["paths"]["/api/sessions/{session_id}/messages"]["get"]["parameters"]}
    assert messages["order"]["schema"]["enum"] == ["latest", "oldest"]
    chat_params = {p["name"]: p["in"] for p in doc["paths"]["/v1/chat/completions"]["post"]["parameters"]}
    assert chat_params["Idempotency-Key"] == "header" and chat_params["X-Hermes-Session-Id"] == "header"


async def test_the_tool_items_header_is_documented_with_its_values(api: TestClient, auth: dict[str, str]) -> None:
    """§1.6, §15.3: X-Hermes-Tool-Items on create and GET documents on, off and hosted as an open enum (any other
    value is `on`, never a 400)."""
    doc = await _document(api, auth)
    for path, method in (("/v1/responses", "post"), ("/v1/responses/{response_id}", "get")):
        header = next(p for p in doc["paths"][path][method]["parameters"] if p["name"] == "X-Hermes-Tool-Items")
        assert header["in"] == "header"
        known, other = header["schema"]["anyOf"]
        assert known == {"type": "string", "enum": ["on", "off", "hosted"]}
        assert other["type"] == "string"
