"""The compat boundary for provider TLS contexts (issue 14): one `ssl.SSLContext` per CA bundle, shared by every
provider client hermes-agent builds in this process, instead of a new one per client.

hermes-agent 0.19.0 builds a new OpenAI client for every provider call (`AIAgent._create_request_openai_client`, on
purpose: a request's client is closed when the turn is interrupted) and each new client a new SSL context
(`agent/ssl_verify.py` `resolve_httpx_verify` → `ssl.create_default_context(cafile=…)`, or httpx's own from certifi
when no bundle is configured), loading the whole CA bundle — about 21 ms of CPU here for every provider call, even
for an `http://` provider, and four more while an `AIAgent` starts (`agent/ssl_guard.py` checks each bundle). An
`SSLContext` is made to be shared: connections only read it (httpcore sets the ALPN list before each handshake, the
same for every client; Hermes itself already hands one context to a client's three transports).

`share_tls_contexts()` (idempotent, thread-safe) puts a caching stand-in for the `ssl` module into
`agent.ssl_verify` and `agent.ssl_guard` — whose `create_default_context(cafile=…)` returns the context already
built for that file while its size and mtime are unchanged — and wraps `resolve_httpx_verify` so that its `True`
(httpx's default verification) becomes the context httpx would build, built once. Everything Hermes decides stays
Hermes' (which bundle, `ssl_verify: false`, its warnings, its checks); only rebuilding the same context is skipped.
A replaced CA file (new mtime or size) gets a new context. `api_server.agents.share_tls_contexts: false` leaves
hermes-agent as it ships.

Runs in worker threads and the warm-up thread alike.
"""

from __future__ import annotations

import functools
import importlib
import os
import ssl
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ._core import HermesName, Installation, warn_fallback

RESOLVE_HTTPX_VERIFY = HermesName(
    "agent.ssl_verify",
    "resolve_httpx_verify",
    args=(),
    kwargs=("ca_bundle", "ssl_verify", "base_url"),
    fallback="a new SSL context for every provider client, as hermes-agent ships",
)
SSL_VERIFY_SSL = HermesName("agent.ssl_verify", "ssl", fallback="a new SSL context for every provider client")
SSL_GUARD_SSL = HermesName("agent.ssl_guard", "ssl", fallback="the CA bundle check builds its contexts anew")
NAMES: tuple[HermesName, ...] = (RESOLVE_HTTPX_VERIFY, SSL_VERIFY_SSL, SSL_GUARD_SSL)


@dataclass(frozen=True)
class TlsStats:
    """What `/health/detailed` reports: contexts built and handed out again since start."""

    shared: bool
    built: int
    reused: int


def _file_key(path: str | None) -> tuple[str, int, int] | None:
    """A CA file as of now: its path, size and mtime (None when it is not a readable file: nothing is cached)."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_size, st.st_mtime_ns)


class TlsContexts:
    """The shared contexts, by what built them; at most one build per key at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._contexts: dict[Hashable, ssl.SSLContext] = {}
        self.built = 0
        self.reused = 0

    def get(self, key: Hashable, build: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        """The context for `key`, built with `build` the first time (a failing build raises and caches nothing)."""
        with self._lock:
            context = self._contexts.get(key)
            if context is not None:
                self.reused += 1
                return context
            context = build()
            self._contexts[key] = context
            self.built += 1
            return context

    def default_context(self) -> ssl.SSLContext:
        """The context httpx builds for `verify=True` (`SSL_CERT_FILE`, else `SSL_CERT_DIR`, else certifi), shared."""
        import certifi

        httpx: Any = importlib.import_module("httpx")  # hermes-agent's dependency (through openai), not the plugin's
        cert_file, cert_dir = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
        key = ("httpx-default", _file_key(cert_file), cert_dir, _file_key(certifi.where()))
        return self.get(key, lambda: httpx.create_ssl_context(verify=True))


class _CachingSsl(ModuleType):
    """`ssl` as seen by one Hermes module: `create_default_context(cafile=…)` for an existing file comes from the
    shared contexts; every other name and call is the real module's."""

    def __init__(self, contexts: TlsContexts) -> None:
        super().__init__("ssl")
        self._contexts = contexts

    def __getattr__(self, name: str) -> Any:
        return getattr(ssl, name)

    def create_default_context(
        self,
        purpose: ssl.Purpose = ssl.Purpose.SERVER_AUTH,
        *,
        cafile: str | None = None,
        capath: str | None = None,
        cadata: str | bytes | None = None,
    ) -> ssl.SSLContext:
        file_key = _file_key(cafile)
        if file_key is None or capath is not None or cadata is not None or purpose is not ssl.Purpose.SERVER_AUTH:
            return ssl.create_default_context(purpose, cafile=cafile, capath=capath, cadata=cadata)
        return self._contexts.get(("cafile", file_key), lambda: ssl.create_default_context(cafile=cafile))


_installation = Installation()
_shared: TlsContexts | None = None  # the contexts handed out, once installed


def share_tls_contexts() -> None:
    """One SSL context per CA bundle for every provider client of this process; when hermes-agent's TLS helpers are
    not what the plugin knows, its fallback (a context per client, as shipped) is logged once."""
    _installation.once(_put)


def _put() -> bool:
    """Install the shared contexts into hermes-agent. Imports the two small Hermes modules; when they are not what
    `NAMES` declares, logs the fallback and leaves hermes-agent as it is."""
    global _shared
    try:
        contexts = TlsContexts()
        verify_module: Any = importlib.import_module(RESOLVE_HTTPX_VERIFY.module)
        guard_module: Any = importlib.import_module(SSL_GUARD_SSL.module)
        resolve = RESOLVE_HTTPX_VERIFY.resolve()
        for module in (verify_module, guard_module):
            if module.ssl is not ssl:  # someone else's stand-in: leave it be
                raise AttributeError(f"{module.__name__}.ssl is not the ssl module")
    except (ImportError, AttributeError) as exc:
        warn_fallback(RESOLVE_HTTPX_VERIFY, f"is unusable ({type(exc).__name__}: {exc})")
        return False

    @functools.wraps(resolve)
    def resolve_shared(*args: Any, **kwargs: Any) -> Any:
        verify = resolve(*args, **kwargs)
        return contexts.default_context() if verify is True else verify

    setattr(verify_module, SSL_VERIFY_SSL.path, _CachingSsl(contexts))
    setattr(guard_module, SSL_GUARD_SSL.path, _CachingSsl(contexts))
    setattr(verify_module, RESOLVE_HTTPX_VERIFY.path, resolve_shared)
    _shared = contexts
    return True


def tls_stats() -> TlsStats:
    """Shared or not, and how often a context was built and reused."""
    contexts = _shared
    if contexts is None:
        return TlsStats(shared=False, built=0, reused=0)
    return TlsStats(shared=True, built=contexts.built, reused=contexts.reused)
