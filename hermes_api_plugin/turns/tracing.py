"""A turn, as the tracing sees it: the registry calls `trace_turn` when the turn starts running (only when tracing is
on), and the turn's journal drives the rest (telemetry/turn_spans.py)."""

from __future__ import annotations

import logging

from ..telemetry.trace_api import Tracing, TurnInfo
from .turn import Turn

log = logging.getLogger("hermes_api_plugin")


def trace_turn(tracing: Tracing, turn: Turn) -> None:
    """Open the turn's `invoke_agent` span in its task (the child of the request that created the turn) and follow its
    journal from the start."""
    request = turn.request
    info = TurnInfo(
        run_id=turn.run_id,
        session_id=request.session_id,
        model=request.model,
        provider=request.provider,
        input_text=request.input.text,
        system_prompt=request.system_prompt,
    )
    try:
        tracing.start_turn(info, turn.journal.follow(0))
    except Exception:  # a trace is never worth a turn
        log.warning("[API Server] could not trace turn %s", turn.run_id, exc_info=True)
