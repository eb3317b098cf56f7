"""Every typed application key: the app's state lives here, never in module globals."""

from __future__ import annotations

from aiohttp import web

from ..cluster.background import BackgroundWork
from ..cluster.leases import LeaseKeeper
from ..cluster.recovery import Recovery
from ..cluster.remote_turns import RemoteTurns
from ..config.settings import Settings
from ..core.metrics import Metrics
from ..runtimes.base import AgentRuntime
from ..runtimes.model_options import ModelOptionsCache
from ..store.roles import SessionStore, Store
from ..submission.continuity import ConversationIndex
from ..submission.conversations import Conversations
from ..submission.idempotency import Idempotency
from ..submission.submit import Submitter
from ..telemetry.trace_api import Tracing
from ..turns import TurnRegistry
from ..turns.durable import JournalSaver
from .stream_gauge import StreamGauge
from .websocket import OpenSockets

SETTINGS = web.AppKey("settings", Settings)
RUNTIME = web.AppKey("runtime", AgentRuntime)
STORE = web.AppKey("store", Store)  # plugin-owned state: responses, idempotency records, journals
SESSIONS = web.AppKey("sessions", SessionStore)  # sessions and their messages
TURNS = web.AppKey("turns", TurnRegistry)
STARTED_AT = web.AppKey("started_at", int)
SCOPE = web.AppKey("scope", str)  # credential scope: sha256(profile + "\0" + key), hex
JOURNALS = web.AppKey("journals", JournalSaver)  # durable journals of stored responses
IDEMPOTENCY = web.AppKey("idempotency", Idempotency)
MODEL_OPTIONS = web.AppKey("model_options", ModelOptionsCache)
CONVERSATIONS = web.AppKey("conversations", Conversations)
SUBMITTER = web.AppKey("submitter", Submitter)
# the `/p/{profile}` prefix the listener stripped from the path (gateway/runner.py; profiles.py decides)
PROFILE_PREFIX = web.RequestKey("profile_prefix", str)
STREAM_GAUGE = web.AppKey("streams", StreamGauge)  # streaming replies still being written (/health/detailed)
CONVERSATION_INDEX = web.AppKey(
    "conversation_index", ConversationIndex
)  # where stateless chats end, for continuity (submission/continuity.py)
BACKGROUND = web.AppKey("background", BackgroundWork)  # host work a request started and answered for (cron fire)
LEASES = web.AppKey("leases", LeaseKeeper)  # this process's lease (its boot id owns its turns) and the judge of others
RECOVERY = web.AppKey("recovery", Recovery)  # settles what gone gateway processes left unsettled
REMOTE_TURNS = web.AppKey(
    "remote_turns", RemoteTurns
)  # following and stopping turns other gateways run (shared stores)
# the app's Prometheus instruments and registry (issue 24); absent when `api_server.metrics.enabled` is false
METRICS = web.AppKey("metrics", Metrics)
SOCKETS = web.AppKey("sockets", OpenSockets)  # open WebSocket connections (WIRE.md §16), closed at shutdown
TRACING: web.AppKey[Tracing | None] = web.AppKey("tracing")  # None: tracing is off (telemetry/tracing.py)
