"""The runs surface (WIRE.md §6.1): a run's turn plan — its session (body, header, chain or a new one) and history —
and its `RunReply`. A run answers 202 at once and delivers no journal (its events are read through
`GET /v1/runs/{id}/events`): this service is a `Planner` with a typed reply, no `Delivery`.

`stored_reply` reads back the reply any surface stored with a keyed turn: a keyed run found only through its
admission record (after a restart) names its session and model from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cluster.waits import Waiting
from ..core.content import Message
from ..core.events import TurnEvent
from ..protocol.common import new_session_id
from ..protocol.runs import RunRequest
from ..store.base import IdempotencyRecord
from ..submission.conversations import Conversations, extended
from ..submission.submit import Resume, TurnPlan
from ..turns import HistoryLoader, Journal, Turn
from ..turns.answers import ClientAnswer
from .chat import ChatReply
from .responses import ResponsesReply
from .sessions import SessionChatReply
from .surface import Posted


@dataclass(frozen=True)
class RunReply:
    """What a keyed run's retry and a later read need: the run's session and model."""

    session_id: str
    model: str

    def to_json(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "model": self.model}

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> RunReply:
        return cls(stored["session_id"], stored["model"])


StoredReplies = ChatReply | ResponsesReply | RunReply | SessionChatReply
_REPLY_TYPES: dict[str, type[StoredReplies]] = {
    "chat": ChatReply,
    "responses": ResponsesReply,
    "runs": RunReply,
    "session_chat": SessionChatReply,
}


def stored_reply(record: IdempotencyRecord) -> StoredReplies:
    """The typed reply a keyed turn's admission record stores, whichever surface admitted it."""
    return _REPLY_TYPES[record.surface].from_json(record.reply)


class RunSurface:
    """One POST /v1/runs: resolves the run's session and history (WIRE.md §6.1)."""

    name = "runs"

    def __init__(self, conversations: Conversations, model_name: str, posted: Posted[RunRequest]) -> None:
        self.conversations = conversations
        self.run = posted.body
        self.session_key = posted.hermes.session_key
        self.key = posted.key
        self.large = posted.large
        self.model = self.run.selection.model or model_name
        # §14.2: `X-Hermes-Approvals: hold` keeps an approval held (waiting_for_approval); a run suspends otherwise
        self.hold_approvals = posted.hermes.approvals == "hold"

    def identity(self) -> str:
        return self.run.identity()

    def target(self) -> Any:
        return [self.run.session_id, self.session_key]

    def headers(self) -> dict[str, str]:
        """The echoed X-Hermes-Session-Key of the 202 reply."""
        return {"X-Hermes-Session-Key": self.session_key} if self.session_key is not None else {}

    async def plan(self) -> TurnPlan:
        run, conversations = self.run, self.conversations
        previous = await conversations.previous(run.previous_response_id)
        chain = await conversations.resolve(
            explicit_session=run.session_id, previous=previous, session_key=self.session_key, new_session=new_session_id
        )
        earlier = run.messages[:-1]
        history: HistoryLoader | Sequence[Message]
        if run.conversation_history is not None:
            history = run.conversation_history
        elif previous is not None:
            history = extended(conversations.chain_history(previous), earlier)
        elif earlier:
            history = earlier
        else:
            history = conversations.session_history(chain.session_id)
        return TurnPlan(
            chain.session_id,
            run.messages[-1],
            run.selection,
            system_prompt=run.system,
            session_key=self.session_key,
            client_tools=run.client_tools,  # WIRE.md §15.4: a call suspends the run until its tool_outputs
            tool_choice=run.tool_choice,
            hold_approvals=self.hold_approvals,
            history=history,
            inputs=run.messages,
            bind_key=chain.bind_key,
        )

    def reply(self, turn: Turn | None) -> RunReply:
        assert turn is not None  # a run never resumes another
        return RunReply(turn.request.session_id, self.model)

    async def resumes(self, waiting: Sequence[Turn]) -> Resume | None:
        """A run is answered through /v1/runs/{id}/approval, /answer and /tool_outputs (WIRE.md §15.4), never by a
        new run."""
        return None

    def resuming(self, turn: Turn, start: int) -> None:
        raise AssertionError("never resumes")

    async def wait_keys(self) -> Sequence[str]:
        return ()  # never answers a turn

    def answer_from(self, events: list[TurnEvent], waiting: Waiting) -> ClientAnswer | None:
        return None

    async def resuming_remote(self, waiting: Waiting, journal: Journal, start: int) -> Mapping[str, Any] | None:
        raise AssertionError("never resumes")

    async def admitted(self, turn: Turn) -> None:
        pass
