"""The compat boundary for Hermes' context compressor (`agent.context_compressor.ContextCompressor`) as the summariser
of POST /v1/responses/compact (WIRE.md §16): the same structured checkpoint summary, made by the same model call
(Hermes' auxiliary `compression` task: `auxiliary.compression` of config.yaml, else the main provider), that Hermes
writes when it compacts a session's context itself.

A compressor is built for each compaction — its failure cooldown and iterative-update state are per conversation in
Hermes, and a compaction here has none to carry — and only its summariser is called: the endpoint compacts the whole
conversation it is given, where Hermes' own `compress()` keeps a head and a tail and decides by token thresholds.

Blocking (a provider call): the hermes runtime calls it from a worker thread, inside the profile's scope.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from ._core import HermesName

COMPRESSOR = HermesName(
    "agent.context_compressor",
    "ContextCompressor.__init__",
    args=("model",),
    kwargs=("quiet_mode", "base_url", "api_key", "provider", "api_mode"),
    attrs=("_last_summary_error",),
)
GENERATE_SUMMARY = HermesName("agent.context_compressor", "ContextCompressor._generate_summary", args=("turns",))
NAMES: tuple[HermesName, ...] = (COMPRESSOR, GENERATE_SUMMARY)

# What a compressor is built with, of the keyword arguments the runtime resolved for an AIAgent.
_RUNTIME_KEYS = ("base_url", "api_key", "provider", "api_mode")


class SummaryFailed(Exception):
    """Hermes' summariser gave no summary; the message is Hermes' own reason (its last summary error)."""


def summarize(model: str, runtime: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> str:
    """Hermes' checkpoint summary of `messages` (OpenAI chat messages), with its handoff prefix; `runtime`: the
    provider settings an AIAgent of this request would get. SummaryFailed when the model call fails."""
    compressor_class = _owner(COMPRESSOR)
    settings = {key: runtime[key] for key in _RUNTIME_KEYS if isinstance(runtime.get(key), str)}
    compressor = compressor_class(model, quiet_mode=True, **settings)
    summary = compressor._generate_summary(list(messages))
    if not isinstance(summary, str) or not summary.strip():
        reason = getattr(compressor, "_last_summary_error", None)
        raise SummaryFailed(str(reason) if reason else "the summary model returned no summary")
    return summary


def _owner(name: HermesName) -> Any:
    """The class whose method `name` is (ImportError / AttributeError when hermes-agent moved either)."""
    name.resolve()
    owner: Any = importlib.import_module(name.module)
    for part in name.path.split(".")[:-1]:
        owner = getattr(owner, part)
    return owner
