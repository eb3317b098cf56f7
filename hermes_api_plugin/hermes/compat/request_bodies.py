"""The compat boundary for the chat completion bodies hermes-agent's provider clients send (issue 25): the openai
SDK's request transform, skipped where it provably returns the body it was given.

hermes-agent 0.19.0 sends every provider call through `openai`'s `Completions.create`, which runs the whole body
through the SDK's `maybe_transform` against the params TypedDict before serialising it. The transform walks the
data against the type at run time, and a message union it walks once per member: with openai 2.24 about 0.28 ms of
CPU per message per provider call — 3 ms for a ten-message conversation, 29 ms for a hundred — on the path to the
first reasoning byte of every turn and again after each tool call. For plain JSON data its result is the data: the
transform renames keys whose type carries a `PropertyInfo` alias, formats values whose type carries a `PropertyInfo`
format (dates, base64 files), dumps pydantic models, turns other iterables into lists and drops omitted parameters.

`skip_plain_transforms()` (idempotent, thread-safe) first walks the chat completion params types — every TypedDict,
union, list and mapping they reach — and installs nothing when any of them carries a `PropertyInfo` (another openai
version; the fallback is logged once). Otherwise it puts a stand-in for `maybe_transform` into the chat completions
resource module: a body of those params types whose given values are all plain data (dicts with str keys, lists,
str, int, float, bool and None) is returned as those values, in their order; every other call goes to the SDK's
transform. The bytes on the wire are the same (tests/hermes/test_request_bodies.py compares them with the SDK's own
transform). `api_server.agents.fast_request_bodies: false` leaves the SDK as it ships.
"""

from __future__ import annotations

import importlib
import typing
from collections.abc import Callable
from typing import Any

from ._core import HermesName, Installation, warn_fallback

CHAT_TRANSFORM = HermesName(
    "openai.resources.chat.completions.completions",
    "maybe_transform",
    args=("data", "expected_type"),
    fallback="the openai SDK's request transform of every chat completion body, as it ships",
)
PROPERTY_INFO = HermesName("openai._utils", "PropertyInfo", fallback=CHAT_TRANSFORM.fallback)
IS_GIVEN = HermesName("openai._utils", "is_given", args=("obj",), fallback=CHAT_TRANSFORM.fallback)
STREAMING_PARAMS = HermesName(
    "openai.types.chat.completion_create_params", "CompletionCreateParamsStreaming", fallback=CHAT_TRANSFORM.fallback
)
NON_STREAMING_PARAMS = HermesName(
    "openai.types.chat.completion_create_params", "CompletionCreateParamsNonStreaming", fallback=CHAT_TRANSFORM.fallback
)
NAMES: tuple[HermesName, ...] = (CHAT_TRANSFORM, PROPERTY_INFO, IS_GIVEN, STREAMING_PARAMS, NON_STREAMING_PARAMS)

_PLAIN_LEAVES = frozenset({str, int, float, bool, type(None)})


def is_plain(value: Any) -> bool:
    """JSON data as `json.loads` gives it: dicts with str keys, lists, str, int, float, bool, None."""
    kind = type(value)
    if kind in _PLAIN_LEAVES:
        return True
    if kind is dict:
        return all(type(key) is str and is_plain(inner) for key, inner in value.items())
    if kind is list:
        return all(is_plain(inner) for inner in value)
    return False


def property_info_in(root: Any, property_info: type) -> str | None:
    """Where `root`'s type graph carries a `property_info` annotation (the first found, as `Type.field`), or None:
    every TypedDict, `Annotated`, union, list, iterable and mapping argument it reaches is visited once."""
    seen: set[int] = set()
    pending: list[tuple[Any, str]] = [(root, getattr(root, "__name__", repr(root)))]
    while pending:
        annotation, where = pending.pop()
        if id(annotation) in seen:
            continue
        seen.add(id(annotation))
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            if any(isinstance(meta, property_info) for meta in annotation.__metadata__):
                return where
            pending.append((typing.get_args(annotation)[0], where))
        elif origin is typing.Literal:
            continue
        elif origin is not None:  # a union, Required[…], List[…], Iterable[…], Dict[…, …]
            pending.extend((arg, where) for arg in typing.get_args(annotation))
        elif isinstance(annotation, type) and issubclass(annotation, dict) and hasattr(annotation, "__required_keys__"):
            hints = typing.get_type_hints(annotation, include_extras=True)
            pending.extend((hint, f"{annotation.__name__}.{field}") for field, hint in hints.items())
    return None


def _plain_bodies(
    transform: Callable[[Any, Any], Any], is_given: Callable[[Any], bool], params: frozenset[Any]
) -> Callable[[Any, Any], Any]:
    """`maybe_transform` that returns a plain body of `params` as its given values; the SDK's for anything else."""

    def maybe_transform(data: Any, expected_type: Any) -> Any:
        # by identity: the resource module passes other types too, and not every type is hashable
        if type(data) is dict and any(expected_type is kind for kind in params):
            given = {key: value for key, value in data.items() if is_given(value)}
            if is_plain(given):
                return given
        return transform(data, expected_type)

    maybe_transform.__wrapped__ = transform  # type: ignore[attr-defined]
    return maybe_transform


_installation = Installation()


def skip_plain_transforms() -> None:
    """Install the stand-in (once per process) when the installed openai's chat params carry nothing to transform;
    otherwise log the fallback once and leave the SDK as it is."""
    _installation.once(_put)


def _put() -> bool:
    try:
        module: Any = importlib.import_module(CHAT_TRANSFORM.module)
        transform = CHAT_TRANSFORM.resolve()
        if getattr(transform, "__wrapped__", None) is not None:  # someone else's stand-in: leave it be
            raise AttributeError(f"{CHAT_TRANSFORM.qualname} is already wrapped")
        property_info, is_given = PROPERTY_INFO.resolve(), IS_GIVEN.resolve()
        params = frozenset({STREAMING_PARAMS.resolve(), NON_STREAMING_PARAMS.resolve()})
    except (ImportError, AttributeError) as exc:
        warn_fallback(CHAT_TRANSFORM, f"is unusable ({type(exc).__name__}: {exc})")
        return False
    for root in params:
        try:
            where = property_info_in(root, property_info)
        except Exception as exc:  # a type the check cannot read (an unresolvable annotation): nothing proven
            warn_fallback(CHAT_TRANSFORM, f"cannot be checked ({type(exc).__name__}: {exc})")
            return False
        if where is not None:
            warn_fallback(CHAT_TRANSFORM, f"has a field to transform ({where} carries a PropertyInfo)")
            return False
    setattr(module, CHAT_TRANSFORM.path, _plain_bodies(transform, is_given, params))
    return True


def plain_transforms_skipped() -> bool:
    """Whether `skip_plain_transforms()` is in place in this process."""
    return _installation.done
