"""Every typed application key: the app's state lives here, never in module globals."""

from __future__ import annotations

from aiohttp import web

from .admissions import Admissions
from .background import BackgroundWork
from .chains import Chains
from .config import Settings
from .continuity import ChatTips
from .leases import LeaseKeeper
from .model_options import ModelOptionsCache
from .recovery import Recovery
from .replicas import Replicas
from .runtimes.base import AgentRuntime
from .store.base import SessionStore, Store
from .streams import StreamGauge
from .submit import Submitter
from .turns import TurnRegistry
from .turns.durable import JournalSaver

SETTINGS = web.AppKey("settings", Settings)
RUNTIME = web.AppKey("runtime", AgentRuntime)
STORE = web.AppKey("store", Store)  # plugin-owned state: responses, admissions, journals
SESSIONS = web.AppKey("sessions", SessionStore)  # sessions and their messages
TURNS = web.AppKey("turns", TurnRegistry)
STARTED_AT = web.AppKey("started_at", int)
SCOPE = web.AppKey("scope", str)  # credential scope: sha256(profile + "\0" + key), hex
JOURNALS = web.AppKey("journals", JournalSaver)  # durable journals of stored responses
ADMISSIONS = web.AppKey("admissions", Admissions)
MODEL_OPTIONS = web.AppKey("model_options", ModelOptionsCache)
CHAINS = web.AppKey("chains", Chains)
SUBMITTER = web.AppKey("submitter", Submitter)
# the `/p/{profile}` prefix the listener stripped from the path (gateway/runner.py; profiles.py decides)
PROFILE_PREFIX = web.RequestKey("profile_prefix", str)
STREAMS = web.AppKey("streams", StreamGauge)  # streaming replies still being written (/health/detailed)
CHAT_TIPS = web.AppKey("chat_tips", ChatTips)  # where stateless chats end, for continuity (continuity.py)
BACKGROUND = web.AppKey("background", BackgroundWork)  # host work a request started and answered for (cron fire)
LEASES = web.AppKey("leases", LeaseKeeper)  # this process's lease (its boot id owns its turns) and the judge of others
RECOVERY = web.AppKey("recovery", Recovery)  # settles what gone gateway processes left unsettled
REPLICAS = web.AppKey("replicas", Replicas)  # following and stopping turns other gateways run (shared stores)
