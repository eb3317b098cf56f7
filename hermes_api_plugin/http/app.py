"""create_app: the API sub-application (routes, middlewares, state) for one gateway process."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time

from aiohttp import web

from ..cluster.background import BackgroundWork
from ..cluster.leases import LeaseKeeper
from ..cluster.placement import Placement, host_name
from ..cluster.recovery import Recovery
from ..cluster.remote_turns import RemoteTurns
from ..config.settings import Settings
from ..core.collector import freeze_start_up
from ..core.metrics import Metrics
from ..protocol.common import credential_scope
from ..routes import (
    approvals,
    chat,
    compaction,
    cron_fire,
    discovery,
    health,
    host_data,
    jobs,
    platform_events,
    responses,
    responses_socket,
    runs,
    sessions,
)
from ..runtimes.base import AgentRuntime, TurnHooks
from ..runtimes.model_options import ModelOptionsCache
from ..store.factory import own_sessions
from ..store.metered import StoreMeter, attach_meter
from ..store.readiness import StoreProbe
from ..store.roles import SessionStore, Store
from ..store.session_move import move_sessions
from ..submission.continuity import ConversationIndex
from ..submission.conversations import Conversations
from ..submission.idempotency import Idempotency
from ..submission.submit import Submitter
from ..telemetry.tracing import start_tracing
from ..turns import TurnRegistry
from ..turns.durable import INTERVAL_S, SHARED_INTERVAL_S, JournalSaver
from ..turns.meter import CommitMeter, TurnMeters
from ..turns.recent import RecentTurns
from ..turns.registry import DRAIN_GRACE_S
from ..turns.transcripts import session_transcripts
from .app_keys import (
    BACKGROUND,
    CONVERSATION_INDEX,
    CONVERSATIONS,
    IDEMPOTENCY,
    JOURNALS,
    LEASES,
    METRICS,
    MODEL_OPTIONS,
    RECOVERY,
    REMOTE_TURNS,
    RUNTIME,
    SCOPE,
    SESSIONS,
    SETTINGS,
    SOCKETS,
    STARTED_AT,
    STORE,
    STREAM_GAUGE,
    SUBMITTER,
    TRACING,
    TURNS,
)
from .metrics import ScrapedState, http_middleware, metrics_endpoint
from .middleware import MAX_BODY_BYTES, MIDDLEWARES, add_common_headers
from .profiles import PROFILES, Profile, Profiles, profile_builder, profile_middleware
from .request_trace import request_trace_middlewares
from .stream_gauge import StreamGauge
from .websocket import OpenSockets

log = logging.getLogger("hermes_api_plugin")


def create_app(
    settings: Settings, runtime: AgentRuntime, store: Store, hooks: TurnHooks, session_store: SessionStore | None = None
) -> web.Application:
    """Build the API app. The store is opened on startup; turns are drained before it is closed.

    `session_store` defaults to the session tables in the store's own database (SQLite, PostgreSQL); a store
    without session tables needs one passed in.
    """
    if settings.key is None:
        raise ValueError("the API server needs API_SERVER_KEY (at least 16 characters)")
    if session_store is None:
        session_store = own_sessions(store)
        if session_store is None:
            raise TypeError("create_app needs `session_store` for a store that keeps no sessions")
    # Slack above the body limit so the 413 comes from our own check, with the envelope.
    streams = StreamGauge()
    tracing = start_tracing(settings, runtime.name)  # None unless tracing is on (OpenTelemetry not even imported)
    metrics = Metrics() if settings.metrics_enabled else None  # this app's own registry (issue 24)
    counted = [http_middleware(metrics)] if metrics is not None else []  # outside the errors: it sees the final status
    app = web.Application(
        middlewares=[
            *request_trace_middlewares(tracing, settings.log_format),  # outermost: the request span covers it all
            *counted,
            *MIDDLEWARES,
            streams.middleware,
            profile_middleware,
        ],
        client_max_size=MAX_BODY_BYTES,
    )
    app[TRACING] = tracing
    app[STREAM_GAUGE] = streams
    app[SOCKETS] = OpenSockets()
    app[SETTINGS] = settings
    app[RUNTIME] = runtime
    app[STORE] = store
    app[health.STORE_PROBE] = StoreProbe(store)  # /health/detailed's readiness asks the store (issue 20)
    app[SESSIONS] = session_store
    app[STARTED_AT] = int(time.time())
    app[SCOPE] = credential_scope(settings.profile, settings.key)
    secret_values = tuple(s for s in (settings.key, settings.model.api_key) if s)
    app[TURNS] = TurnRegistry(
        runtime,
        session_transcripts(session_store),
        hooks,
        max_concurrent=settings.max_concurrent_runs,
        secret_values=secret_values,
        recent=RecentTurns(settings.turns_max_recent, settings.turns_max_recent_bytes),
        suspend_s=settings.turns_suspend_seconds,
        max_waiting=settings.turns_max_suspended,
        tracing=tracing,
    )
    app[BACKGROUND] = BackgroundWork()
    commits = None
    if metrics is not None:
        app[METRICS] = metrics
        commits = CommitMeter(metrics, store.kind)
        for metered in (store, own_sessions(store)):
            if metered is not None:
                attach_meter(metered, StoreMeter(metrics, store.kind))
    # Shared store: other gateways follow this one's journals, so they are committed sooner (turns/durable.py).
    interval = SHARED_INTERVAL_S if store.feed() is not None else INTERVAL_S
    app[JOURNALS] = JournalSaver(store, interval, commits)
    app[MODEL_OPTIONS] = ModelOptionsCache()
    app[CONVERSATION_INDEX] = ConversationIndex()
    # This process owns what it admits under a boot id of its own, kept alive by its lease (cluster/leases.py).
    app[LEASES] = LeaseKeeper.for_this_process(store, secrets.token_hex(8), settings.store_lease_seconds)
    app[RECOVERY] = Recovery(settings, store, app[LEASES], app[TURNS], metrics)
    app[LEASES].after_renewal = app[RECOVERY].sweep
    app[IDEMPOTENCY] = Idempotency(
        store,
        app[LEASES],
        retention_s=settings.idempotency_retention_seconds,
        tombstone_s=settings.idempotency_tombstone_seconds,
    )
    app[REMOTE_TURNS] = RemoteTurns(store, app[LEASES], app[RECOVERY].sweep, app[TURNS], app[JOURNALS], metrics=metrics)
    # A shared store with sessions kept per host (Hermes' state.db): which host keeps each session
    # (cluster/placement.py).
    per_host = app[REMOTE_TURNS].shared and session_store is not own_sessions(store)
    placement = Placement(store, session_store, host_name(settings.hermes_home) if per_host else None)
    meters = None
    if metrics is not None:
        provider = settings.model.provider or runtime.name
        meters = TurnMeters(metrics, runtime.name, settings.profile, settings.model_name, provider)
    app[SUBMITTER] = Submitter(
        settings,
        app[SCOPE],
        app[TURNS],
        app[IDEMPOTENCY],
        store,
        app[JOURNALS],
        app[REMOTE_TURNS],
        placement,
        meters=meters,
    )
    app[CONVERSATIONS] = Conversations(store, session_store, app[SCOPE], placement, app[SUBMITTER].waits)
    own = Profile(
        settings.profile, None, app[SCOPE], settings.model_name, session_store, app[SUBMITTER], app[CONVERSATIONS]
    )
    app[PROFILES] = Profiles(own, profile_builder(app[SUBMITTER], runtime.session_store, session_store))

    app.router.add_get("/health", health.health, name="health")
    app.router.add_get("/v1/health", health.health)
    app.router.add_get("/health/detailed", health.health_detailed, name="health_detailed", allow_head=False)
    app.router.add_get("/v1/models", discovery.models, name="models")
    app.router.add_get("/v1/capabilities", discovery.capabilities, name="capabilities")
    app.router.add_get("/api/model/options", discovery.model_options, name="model_options", allow_head=False)
    app.router.add_get("/openapi.json", discovery.openapi, name="openapi", allow_head=False)
    app.router.add_get("/v1/skills", host_data.skills, name="skills", allow_head=False)
    app.router.add_get("/v1/toolsets", host_data.toolsets, name="toolsets", allow_head=False)
    app.router.add_post("/v1/chat/completions", chat.chat_completions, name="chat_completions")
    app.router.add_post("/v1/responses", responses.create_response, name="responses")
    # Before /v1/responses/{response_id}: `compact` is never taken for a response id, whatever the method (WIRE §16).
    app.router.add_post("/v1/responses/compact", compaction.compact_response, name="responses_compact")
    app.router.add_route("*", "/v1/responses/compact", compaction.compact_other_method)
    app.router.add_get("/v1/responses", responses_socket.responses_socket, name="responses_socket", allow_head=False)
    app.router.add_get("/v1/responses/{response_id}", responses.get_response, name="response", allow_head=False)
    app.router.add_delete("/v1/responses/{response_id}", responses.delete_response, name="response_delete")
    app.router.add_post("/v1/responses/{response_id}/cancel", responses.cancel_response, name="response_cancel")
    app.router.add_get(
        "/v1/responses/{response_id}/input_items",
        responses.list_input_items,
        name="response_input_items",
        allow_head=False,
    )
    app.router.add_post("/v1/runs", runs.create_run, name="runs")
    app.router.add_get("/v1/runs/{run_id}", runs.get_run, name="run_status", allow_head=False)
    app.router.add_get("/v1/runs/{run_id}/events", runs.run_events, name="run_events", allow_head=False)
    app.router.add_post("/v1/runs/{run_id}/stop", runs.stop_run, name="run_stop")
    app.router.add_post("/v1/runs/{run_id}/approval", approvals.run_approval, name="run_approval")
    app.router.add_post("/v1/runs/{run_id}/answer", approvals.run_answer, name="run_answer")
    app.router.add_post("/v1/runs/{run_id}/tool_outputs", approvals.run_tool_outputs, name="run_tool_outputs")
    app.router.add_get("/api/sessions", sessions.list_sessions, name="sessions", allow_head=False)
    app.router.add_post("/api/sessions", sessions.create_session, name="session_create")
    app.router.add_get("/api/sessions/{session_id}", sessions.get_session, name="session", allow_head=False)
    app.router.add_patch("/api/sessions/{session_id}", sessions.update_session, name="session_update")
    app.router.add_delete("/api/sessions/{session_id}", sessions.delete_session, name="session_delete")
    app.router.add_get(
        "/api/sessions/{session_id}/messages", sessions.session_messages, name="session_messages", allow_head=False
    )
    app.router.add_post("/api/sessions/{session_id}/fork", sessions.fork_session, name="session_fork")
    app.router.add_post("/api/sessions/{session_id}/chat", sessions.session_chat, name="session_chat")
    app.router.add_post(
        "/api/sessions/{session_id}/chat/stream", sessions.session_chat_stream, name="session_chat_stream"
    )
    _add_host_routes(app)
    if metrics is not None:
        app.router.add_get("/metrics", metrics_endpoint, name="metrics", allow_head=False)
        metrics.registry.register(ScrapedState(app))

    # Retired (410 after authentication); unnamed, so capabilities do not list them.
    app.router.add_route("*", "/v1/browser-control/register", discovery.retired)
    app.router.add_route("*", "/v1/browser-control/ws", discovery.retired)
    app.router.add_route("*", "/v1/artifacts/{tail:.*}", discovery.retired)
    app.router.add_route("*", "/v1/artifacts", discovery.retired)

    app.on_response_prepare.append(add_common_headers)
    app.on_response_prepare.append(streams.on_prepare)
    app.on_startup.append(_open_store)
    app.on_startup.append(_freeze_start_up)
    app.on_shutdown.append(_drain)
    app.on_cleanup.append(_close_store)
    app.on_cleanup.append(_close_tracing)
    return app


def _add_host_routes(app: web.Application) -> None:
    """The host's cron jobs, its cron fire webhook and platform ingress (WIRE §14.3; 501 on a host without them)."""
    app.router.add_get("/api/jobs", jobs.list_jobs, name="jobs", allow_head=False)
    app.router.add_post("/api/jobs", jobs.create_job, name="job_create")
    app.router.add_get("/api/jobs/{job_id}", jobs.get_job, name="job", allow_head=False)
    app.router.add_patch("/api/jobs/{job_id}", jobs.update_job, name="job_update")
    app.router.add_delete("/api/jobs/{job_id}", jobs.delete_job, name="job_delete")
    app.router.add_post("/api/jobs/{job_id}/pause", jobs.pause_job, name="job_pause")
    app.router.add_post("/api/jobs/{job_id}/resume", jobs.resume_job, name="job_resume")
    app.router.add_post("/api/jobs/{job_id}/run", jobs.run_job, name="job_run")
    app.router.add_post("/api/platforms/{platform}/events", platform_events.platform_event, name="platform_events")
    app.router.add_post("/api/cron/fire", cron_fire.cron_fire, name="cron_fire")


async def _open_store(app: web.Application) -> None:
    """Open the store, take this process's lease (before anything is admitted under it), settle what gone gateway
    processes left (WIRE.md §5.4), listen for the other gateways (shared stores)."""
    store = app[STORE]
    await store.open()
    await app[LEASES].start()
    try:
        await app[RECOVERY].sweep()
        await app[REMOTE_TURNS].start()
        ours = own_sessions(store)
        if ours is not None and app[SESSIONS] is not ours:  # the host's sessions now (WIRE §14.1)
            await move_sessions(ours, app[SESSIONS], app[CONVERSATIONS].placement.record)
    except BaseException:
        await app[LEASES].stop(release=True)  # a start that failed keeps no lease renewed in the host process
        raise


async def _freeze_start_up(app: web.Application) -> None:
    """Once the gateway is up, its start-up objects out of the collector's full collections (core/collector.py)."""
    if app[SETTINGS].gc_freeze_at_start:
        frozen = freeze_start_up()
        if frozen:
            log.info("[API Server] %d start-up objects left out of garbage collection (gc.freeze)", frozen)


async def _drain(app: web.Application) -> None:
    """Refuse new work, settle every turn and wait for the background work (both bounded by the drain grace); then
    close the WebSocket connections (1001), each once its last delivery wrote its end, as SSE streams end with their
    terminal record."""
    await asyncio.gather(app[TURNS].drain(), app[BACKGROUND].drain(DRAIN_GRACE_S))
    await app[SOCKETS].close_all()


async def _close_store(app: web.Application) -> None:
    """After the drain: the last journal rows, then the lease is released (every turn settled), then the store."""
    await app[JOURNALS].close()
    await app[REMOTE_TURNS].close()
    await app[LEASES].stop(release=True)
    await app[STORE].close()


async def _close_tracing(app: web.Application) -> None:
    """After the turns settled: the last spans exported."""
    tracing = app[TRACING]
    if tracing is not None:
        await tracing.close()


async def shutdown_apps(apps: list[web.Application]) -> None:
    """Graceful stop: refuse new work (503), settle every turn `cancelled` and wait for the background work, then
    close the stores."""
    await asyncio.gather(*(_drain(app) for app in apps))
    await asyncio.gather(*(_close_store(app) for app in apps))
