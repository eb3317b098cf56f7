"""A held turn: admitted, its agent work waiting until the surface that admitted it has written its response head
(issue 11); leaving its block without starting it cancels it, so it never stays queued."""

from __future__ import annotations

from types import TracebackType

from .turn import Turn


class HeldTurn:
    """An admitted turn whose agent work has not been allowed to start.

    `async with held as turn:` — inside the block the surface reserves, stores and writes its head, then
    calls `start()`. Leaving the block without `start()` (an exception, a refusal, a head that could not
    be written) cancels the turn, so it settles and frees its slot instead of staying queued for good.
    """

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self._started = False

    def start(self) -> None:
        """Let the agent run (called once the response head is written, or at once for detached work)."""
        self._started = True
        self.turn._open_gate()

    def cancel(self) -> None:
        """Give the turn up before it ran (a refusal or failure during admission)."""
        self.turn.cancel()

    async def __aenter__(self) -> Turn:
        return self.turn

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._started:
            self.turn.cancel()
