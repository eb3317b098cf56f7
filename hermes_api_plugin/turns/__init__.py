"""Turns: one agent execution each — its journal, the callback sink into it, the registry that runs it."""

from .callback_sink import COALESCE_S, CallbackSink
from .held import HeldTurn
from .journal import Journal, decode_journal, encode_events
from .registry import TurnCounts, TurnRegistry
from .settled import SettledTurn
from .tool_display import display_tool_name
from .turn import HistoryLoader, Persister, Turn

__all__ = [
    "COALESCE_S",
    "CallbackSink",
    "HeldTurn",
    "HistoryLoader",
    "Journal",
    "Persister",
    "SettledTurn",
    "Turn",
    "TurnCounts",
    "TurnRegistry",
    "decode_journal",
    "display_tool_name",
    "encode_events",
]
