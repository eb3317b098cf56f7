"""The `hermes` runtime: real Hermes `run_agent.AIAgent`s, one per conversation, each turn in a worker thread.

Model provider, toolsets, reasoning default and fallback chain are resolved by Hermes' own gateway helpers
(the same calls its built-in api_server makes, reached through `hermes.compat`), so config.yaml
`model.provider` / `model.base_url` / `model.default` and the provider keys in `.env` mean exactly what they
mean to `hermes gateway`. When those helpers are missing (another hermes-agent version), the `model:` section
of Settings is used instead. How a turn gets its agent (its conversation's warm one, or a fresh one):
`warm_agents.py`; the dicts that cross into AIAgent and back: `hermes_messages.py`.

Every hermes-agent name goes through `hermes.compat`, which imports nothing at module level: `run_agent` takes
seconds to import, loads `$HERMES_HOME/.env` and creates files under `$HERMES_HOME`, so it is imported in a worker
thread — by `start_warm_up()` right after the runtime is selected, or else by the first turn.

Turn-taking with the client (WIRE.md §15.5): Hermes' `clarify` questions and — unless the request holds its approvals
(§14.2) — its dangerous-command approvals suspend the turn (`turn.suspensions`, awaited on the event loop while the
agent's thread blocks), and the function tools the client declared are lent to the agent for the turn
(`hermes/client_tools.py`); `hermes/clarify.py` and `hermes/approvals.py` map Hermes' callbacks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import threading
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from ..config.settings import Settings
from ..core.content import text_message
from ..core.events import TurnStatus
from ..hermes import compat
from ..hermes.approvals import SuspendedApprovals, TurnApprovals, claim_key, release_key
from ..hermes.clarify import clarify_callback
from ..hermes.client_tools import TurnClientTools
from ..hermes.host import HermesHost
from ..hermes.sessions import HermesSessionStore
from .base import AgentTurn, Compaction, CompactionFailed, CompactionRequest, TurnRequest, TurnResult
from .hermes_messages import message_to_openai, outcome_from_result, reasoning_config_for, user_content
from .host_data import HostData
from .resolved_settings import ResolvedSettings
from .warm_agents import WarmAgents

log = logging.getLogger("hermes_api_plugin")

INTERRUPT_GRACE_S = 5.0  # how long an interrupted agent may take to return before the turn settles anyway
# Hermes' guard waits this much longer than a suspension does, so the suspension's own outcome (its denial on
# timeout included) is what decides and what the journal says
SUSPEND_GRACE_S = 5.0

T = TypeVar("T")


# -- the runtime -------------------------------------------------------------------------------------


class _AgentHandle:
    """The agent of one turn, once built; forwards an interrupt that arrives before or after that."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._agent: Any = None
        self._requested = False

    @property
    def agent(self) -> Any:
        return self._agent

    def attach(self, agent: Any) -> None:
        with self._lock:
            self._agent = agent
            requested = self._requested
        if requested:
            compat.agent.interrupt_agent(agent, "Stopped by the API client")

    def detach(self) -> None:
        """The turn is over: a late stop must not reach the agent, which may be another turn's by then."""
        with self._lock:
            self._agent = None

    def interrupt(self) -> None:
        with self._lock:
            self._requested = True
            agent = self._agent
        if agent is not None:
            try:
                compat.agent.interrupt_agent(agent, "Stopped by the API client")
            except Exception:
                log.debug("[API Server] agent.interrupt() failed", exc_info=True)


class HermesRuntime:
    """Runs each turn on its conversation's warm `AIAgent` or a fresh one (`warm_agents.py`), in a dedicated
    thread."""

    name = "hermes"

    def __init__(self, settings: Settings, *, interrupt_grace_s: float = INTERRUPT_GRACE_S) -> None:
        self.settings = settings
        self.interrupt_grace_s = interrupt_grace_s
        self.agents = WarmAgents(settings.agents_max_cached, settings.agents_idle_seconds)
        self.resolved = ResolvedSettings()  # Hermes' per-turn provider/config resolution, briefly remembered
        self._session_dbs: dict[Path | None, Any] = {}  # by profile home (None: the gateway's own), opened once
        self._session_dbs_lock = threading.Lock()  # opened from worker threads and the event loop alike
        self.host_data: HostData | None = HermesHost()

    # -- AgentRuntime ---------------------------------------------------------------------------------
    def providers(self) -> frozenset[str]:
        provider = self.settings.model.provider
        return frozenset({provider}) if provider else frozenset()

    async def model_inventory(self, refresh: bool) -> list[dict[str, Any]] | None:
        if self.settings.model_options or not self.settings.model.default:
            return None  # api_server.model_options from config.yaml is the list
        model = self.settings.model
        return [{"provider": model.provider, "model": model.default, "label": model.default}]

    def session_store(self, profile_home: Path | None = None) -> HermesSessionStore | None:
        """Hermes' SessionDB as the session store (WIRE §14.1), the same object every AIAgent of this runtime
        writes its turns into; None when it cannot be opened (the plugin's own tables then, compat logs why).
        `profile_home`: a multiplexed profile's (§14.3), whose own state.db it is."""
        db = self._hermes_session_db(profile_home)
        return None if db is None else HermesSessionStore(db, agent_writes_turns=True)

    async def close(self) -> None:
        self.agents.clear()

    def forget_conversation(self, session_id: str, profile_home: Path | None = None) -> None:
        self.agents.forget(session_id, profile_home)

    def warm_agents(self) -> dict[str, Any] | None:
        stats = self.agents.stats()
        if stats is None:
            return None
        return {
            **asdict(stats),
            "tls_contexts": asdict(compat.tls.tls_stats()),
            "fast_config_copies": compat.config_copies.config_copies_plain(),
            "fast_request_bodies": compat.request_bodies.plain_transforms_skipped(),
        }

    def start_warm_up(self) -> None:
        """Import hermes-agent in a background thread now, so the first turn does not wait seconds for it."""

        def warm() -> None:
            try:
                self._hermes_agent_class()
            except Exception:
                log.debug("[API Server] hermes-agent warm-up import failed", exc_info=True)

        threading.Thread(target=warm, name="hermes-agent warm-up", daemon=True).start()

    async def run(self, turn: AgentTurn) -> TurnResult:
        loop = asyncio.get_running_loop()
        handle = _AgentHandle()
        done: asyncio.Future[TurnResult] = loop.create_future()
        stopped: asyncio.Future[None] = loop.create_future()

        def settle(result: TurnResult | BaseException) -> None:
            if done.done():
                return
            if isinstance(result, BaseException):
                done.set_exception(result)
            else:
                done.set_result(result)

        def work() -> None:
            try:
                # The turn's profile (WIRE §14.3) holds for all of it — config, credentials, memory, state.db —
                # entered in this thread: the scope is context variables, which threads do not inherit.
                with compat.profiles.profile_scope(turn.request.profile_home):
                    outcome: TurnResult | BaseException = self._run_blocking(turn, handle, loop)
            except BaseException as exc:
                outcome = exc
            try:
                loop.call_soon_threadsafe(settle, outcome)
            except RuntimeError:  # the loop is gone (shutdown): nobody waits for this turn any more
                pass

        def mark_stopped() -> None:
            if not stopped.done():
                stopped.set_result(None)

        def on_interrupt() -> None:
            handle.interrupt()
            try:
                loop.call_soon_threadsafe(mark_stopped)
            except RuntimeError:
                pass

        # In a copy of the turn's context, as asyncio.to_thread does: the agent's log lines carry the turn's ids and its
        # spans (tracing) their parent.
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run, args=(work,), name=f"hermes-agent {turn.request.turn_id}", daemon=True
        )
        thread.start()
        turn.on_interrupt(on_interrupt)
        try:
            await asyncio.wait((done, stopped), return_when=asyncio.FIRST_COMPLETED)
            if not done.done():  # interrupted: give the agent a moment to stop its tools and return
                try:
                    await asyncio.wait_for(asyncio.shield(done), self.interrupt_grace_s)
                except TimeoutError:
                    log.warning(
                        "[API Server] The Hermes agent of turn %s did not stop within %.0f s of the "
                        "interrupt; settling the turn as cancelled",
                        turn.request.turn_id,
                        self.interrupt_grace_s,
                    )
                    return TurnResult(TurnStatus.CANCELLED, error_code="cancelled")
            return done.result()
        except asyncio.CancelledError:
            turn.interrupt()
            raise

    async def compact(self, request: CompactionRequest) -> Compaction:
        """Hermes' context compressor summarises the conversation (WIRE.md §16) with the provider a turn of this request
        would use, in a worker thread inside the profile's scope. Cancelling the await abandons the call: Hermes
        shields its summary call from interrupts, so the thread ends when the provider answers."""
        try:
            summary = await asyncio.to_thread(self._summarize, request)
        except compat.compression.SummaryFailed as exc:
            raise CompactionFailed(f"Hermes' context compressor failed: {exc}") from None
        except Exception as exc:  # the provider's resolution (no credentials, say) or hermes-agent itself
            log.warning("[API Server] compaction failed", exc_info=True)
            raise CompactionFailed(f"Hermes' context compressor failed: {type(exc).__name__}: {exc}") from None
        return Compaction(summary)  # Hermes' summariser reports no token usage

    # -- worker thread --------------------------------------------------------------------------------
    def _summarize(self, request: CompactionRequest) -> str:
        # the provider resolution of a turn of this request: a stand-in turn carries its model and provider
        turn = TurnRequest(
            "compaction",
            "compaction",
            text_message("user", ""),
            model=request.model,
            provider=request.provider,
            profile_home=request.profile_home,
        )
        with compat.profiles.profile_scope(request.profile_home):
            self._hermes_agent_class()  # hermes-agent imported (and its .env loaded) as before a turn
            home = request.profile_home or compat.home.hermes_home()
            key = (turn.provider, _requested_model(self.settings, turn), turn.profile_home)
            resolved = self.resolved.get(
                key, home, lambda: _hermes_gateway_settings(self.settings, turn), keep=_no_credential_pool
            )
            messages = [message_to_openai(m) for m in request.messages]
            if request.system_prompt:
                messages.insert(0, {"role": "system", "content": request.system_prompt})
            return compat.compression.summarize(resolved.pop("model"), resolved, messages)

    def _hermes_agent_class(self) -> type:
        """`AIAgent`, hermes-agent imported (seconds, the first time), and its TLS contexts shared, its config copies
        and its provider request bodies made cheaper, as configured."""
        agent_class = compat.agent.agent_class()
        if self.settings.agents_share_tls_contexts:
            compat.tls.share_tls_contexts()
        if self.settings.agents_fast_config_copies:
            compat.config_copies.copy_config_plainly()
        if self.settings.agents_fast_request_bodies:
            compat.request_bodies.skip_plain_transforms()
        return agent_class

    def _run_blocking(self, turn: AgentTurn, handle: _AgentHandle, loop: asyncio.AbstractEventLoop) -> TurnResult:
        request = turn.request
        agent_class = self._hermes_agent_class()
        if turn.interrupted:
            return TurnResult(TurnStatus.CANCELLED, error_code="cancelled")
        suspend_s = self.settings.turns_suspend_seconds
        approvals = _approvals_for(turn, loop)
        client_tools = TurnClientTools(
            request.tool_choice.offered(request.client_tools),
            request.tool_choice,
            lambda call_id, name, arguments: _wait_on_loop(
                loop, turn.suspensions.tool_call(call_id, name, arguments), suspend_s
            ),
        )
        kwargs = self._agent_kwargs(request)
        kwargs.update(self._callbacks(turn, approvals, client_tools))
        kwargs["event_callback"] = _compaction_relay(handle, turn.callbacks.compaction)
        kwargs["clarify_callback"] = clarify_callback(
            lambda question, choices: _wait_on_loop(loop, turn.suspensions.question(question, choices), suspend_s),
            suspend_s,
        )
        tokens = compat.sessions.bind_session_vars(request.session_id, request.session_key)
        approval_token = None
        # a suspended approval waits as long as the suspension (this thread's context only: other turns keep Hermes'
        # approvals.timeout); a held one waits Hermes' own timeout, as before
        timeout_token = (
            None if request.hold_approvals else compat.approvals.raise_approval_timeout(suspend_s + SUSPEND_GRACE_S)
        )
        lease = None
        outcome: TurnResult | None = None
        try:
            # Bound in this thread (Hermes' guard reads the key from the context) before the agent exists
            approval_token = compat.approvals.bind_approvals(approvals.key, approvals.notify)
            if approval_token is not None:
                if isinstance(approvals, TurnApprovals):
                    turn.approvals = approvals  # held: decided through the runtime's gate; suspended: the suspensions
                turn.on_interrupt(approvals.close)  # stop, disconnect, drain: a waiting request is denied
            lease = self.agents.acquire(request, kwargs, lambda: agent_class(**kwargs))
            handle.attach(lease.agent)
            client_tools.lend(lease.agent)
            result = compat.agent.run_conversation(
                lease.agent,
                user_message=user_content(request.input),
                conversation_history=[message_to_openai(m) for m in request.history],
                task_id=request.session_id,
            )
            outcome = outcome_from_result(result, turn.interrupted)
        finally:
            client_tools.give_back()  # before the agent can be another turn's
            turn.approvals = None
            approvals.close()
            if approval_token is not None:
                compat.approvals.unbind_approvals(approvals.key, approval_token)
            compat.approvals.restore_approval_timeout(timeout_token)
            release_key(approvals.key)
            compat.sessions.clear_session_vars(tokens)
            handle.detach()
            if lease is not None:
                completed = outcome is not None and outcome.status is TurnStatus.COMPLETED and not turn.interrupted
                self.agents.release(lease, completed=completed)
        return outcome

    def _callbacks(
        self, turn: AgentTurn, approvals: TurnApprovals | SuspendedApprovals, client_tools: TurnClientTools
    ) -> dict[str, Any]:
        sink = turn.callbacks
        reasoning, text, tool_complete, interim = sink.reasoning, sink.text, sink.tool_complete, sink.commentary
        callbacks: dict[str, Any] = {}
        if reasoning is not None:
            callbacks["reasoning_callback"] = lambda delta: delta and reasoning(delta)
        # None means "a tool call starts now" (the streamed segment ends); the plugin does not need it.
        callbacks["stream_delta_callback"] = lambda delta: delta is not None and text(delta)
        tool_start = sink.tool_start

        # A client tool's call is the client's (WIRE.md §15.2): its suspension journals it, never a server tool's
        # progress.
        def started(call_id: Any, name: str, args: Any) -> None:
            if name not in client_tools.names:
                tool_start(call_id, name, args)

        callbacks["tool_start_callback"] = started

        def completed(call_id: Any, name: str, args: Any, result: Any) -> None:
            if name in client_tools.names:
                return
            approvals.report_ended()  # a request that timed out is denied before its tool's result shows
            tool_complete(call_id, name, result, compat.agent.detect_tool_failure(name, result))

        callbacks["tool_complete_callback"] = completed
        if interim is not None:
            callbacks["interim_assistant_callback"] = lambda message, already_streamed=False, **_: interim(
                message, bool(already_streamed)
            )
        return callbacks

    def _agent_kwargs(self, request: TurnRequest) -> dict[str, Any]:
        """What Hermes' built-in api_server passes to AIAgent, with this request's overrides (WIRE.md §8.1)."""
        home = request.profile_home or compat.home.hermes_home()
        key = (request.provider, _requested_model(self.settings, request), request.profile_home)
        resolved = self.resolved.get(
            key, home, lambda: _hermes_gateway_settings(self.settings, request), keep=_no_credential_pool
        )
        model = resolved.pop("model")
        effort = reasoning_config_for(request.reasoning_effort)
        options = request.model_options
        kwargs: dict[str, Any] = {
            **resolved,
            "model": model,
            "max_iterations": request.max_iterations,
            "quiet_mode": True,
            "verbose_logging": False,
            "ephemeral_system_prompt": request.system_prompt or None,
            "session_id": request.session_id,
            "platform": "api_server",
            # the channel's long-lived key: Hermes' memory providers scope their state by it (WIRE.md §1.6)
            "gateway_session_key": request.session_key,
            "session_db": self._hermes_session_db(request.profile_home),
        }
        if effort is not None:
            kwargs["reasoning_config"] = effort
        if isinstance(options.get("service_tier"), str):
            kwargs["service_tier"] = options["service_tier"]
        return {k: v for k, v in kwargs.items() if v is not None}

    def _hermes_session_db(self, profile_home: Path | None) -> Any:
        """Hermes' session store (state.db) of the gateway or of a profile, opened once per runtime; None when
        unavailable (compat logs why)."""
        with self._session_dbs_lock:
            if profile_home not in self._session_dbs:
                self._session_dbs[profile_home] = compat.sessions.session_db(profile_home)
            return self._session_dbs[profile_home]


def _hermes_gateway_settings(settings: Settings, request: TurnRequest) -> dict[str, Any]:
    """Model, provider credentials, toolsets, reasoning default and fallback chain as `hermes gateway` reads
    them; the model: section of Settings where Hermes' helpers are not there (each fallback is logged once)."""
    model_override = _requested_model(settings, request)
    runtime = compat.agent.runtime_agent_kwargs(request.provider)
    if runtime is None:
        section = settings.model
        runtime = {
            "provider": request.provider or section.provider,
            "base_url": section.base_url,
            "api_key": section.api_key,
            "api_mode": "chat_completions" if section.base_url else None,
        }
    runtime_model = runtime.pop("model", None)  # a fallback provider's own model (see Hermes' api_server)
    model = model_override or runtime_model or compat.agent.gateway_model() or settings.model.default or ""
    return {
        **runtime,
        "model": model,
        "enabled_toolsets": compat.agent.platform_toolsets("api_server"),
        "reasoning_config": compat.agent.reasoning_config(model),
        "fallback_model": compat.agent.fallback_model(),
    }


def _no_credential_pool(resolved: dict[str, Any]) -> bool:
    """A resolution without a credential pool (a live object tracking exhausted keys: resolved anew every turn)."""
    return resolved.get("credential_pool") is None


def _requested_model(settings: Settings, request: TurnRequest) -> str | None:
    """WIRE.md §8.1: a request `model` runs only with `provider`, or with api_server.direct_model_requests."""
    model = request.model
    if not model or model == settings.model_name:
        return None
    if request.provider or settings.direct_model_requests:
        return model
    return None


def _approvals_for(turn: AgentTurn, loop: asyncio.AbstractEventLoop) -> TurnApprovals | SuspendedApprovals:
    """The turn's approvals, keyed by its conversation: held (WIRE.md §14.2, `hold_approvals`), reported to the turn's
    sink, or suspending the turn for each (§15.1)."""
    request, callbacks = turn.request, turn.callbacks
    key = claim_key(request.session_key or request.session_id, request.turn_id)
    if request.hold_approvals:
        return TurnApprovals(key, callbacks.approval_request, callbacks.approval_response)

    def suspend(command: str, description: str, choices: tuple[str, ...]) -> concurrent.futures.Future[str]:
        return _submit(loop, turn.suspensions.approval(command, description, choices))

    return SuspendedApprovals(key, suspend)


def _submit(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run a suspension on the event loop, from the agent's thread (RuntimeError: the loop is gone)."""
    try:
        return asyncio.run_coroutine_threadsafe(coroutine, loop)
    except RuntimeError:
        coroutine.close()  # never started: no "never awaited" warning
        raise


def _wait_on_loop(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T | None], wait_s: float) -> T | None:
    """Block the agent's thread on a suspension (it resolves itself within `wait_s`, or at once on an interrupt);
    None when the loop is gone or does not answer in time."""
    try:
        future = _submit(loop, coroutine)
    except RuntimeError:
        return None
    try:
        return future.result(wait_s + SUSPEND_GRACE_S)
    except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
        future.cancel()
        return None


def _compaction_relay(handle: _AgentHandle, callback: Callable[[str], None]) -> Callable[..., None]:
    """Hermes' `event_callback("session:compress", …)` → the turn's compaction callback with the summary. The
    event fires inside run_conversation, so the handle holds the agent by then."""

    def relay(event: Any, payload: Any = None, *_: Any) -> None:
        if event == "session:compress" and handle.agent is not None:
            callback(compat.agent.compaction_summary(handle.agent))

    return relay
