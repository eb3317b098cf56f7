"""One PostgreSQL database behind the plugin store and its session store: the connection pool, the schema
migrations on open, and the mapping of every driver failure to StoreError.

Driver: psycopg 3 with psycopg_pool's AsyncConnectionPool, not asyncpg, because
- it is typed (`py.typed`): mypy checks every call into it, where asyncpg has no annotations at all;
- its pool checks a connection before handing it out (`check_lent`) and reconnects in the background, so after a
  database restart a request gets a live connection or, while the database is down, a StoreError (503);
- LISTEN/NOTIFY is an async iterator on a connection (`notifies()`), which cross-replica wake-ups need;
- `psycopg[binary]` carries libpq in its wheels: nothing to install on the host but the extra.
asyncpg parses rows faster, but what this store pays for is round trips, which are the same for both.

The URL's password never leaves this module in clear: messages name `host:port/database` and pass
`mask_store_text`, which masks the URL wherever libpq quotes it and every secret it holds (issue 20, defect 8).
"""

from __future__ import annotations

import logging
import select
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from ...core.redact import mask_store_text
from ..base import StoreError, StoreRefused, StoreUnavailable
from ..sql.migrations import load_migrations
from .migrate import BUNDLED, migrate

log = logging.getLogger("hermes_api_plugin")

Connection = psycopg.AsyncConnection[DictRow]

ACQUIRE_TIMEOUT_S = 5.0  # a request waits this long for a connection; then StoreError (503, Retry-After)
OPEN_TIMEOUT_S = 30.0  # start-up waits this long for the pool's first connection (the migration one got through)
CONNECT_TIMEOUT_S = 5  # libpq's connect_timeout, unless the URL sets its own
# How long the pool keeps retrying one lost connection before it gives up on it (psycopg_pool's default: 5 min). Its
# pauses double (1, 2, 4, … s), so after a long outage the database would be back well before the next attempt; a
# pool that gave up makes a new connection at the next request's demand, at once.
RECONNECT_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 10
APPLICATION_NAME = "hermes-api"
# What the database (or the driver, before sending) refuses for the statement itself: no outage.
_REFUSED = (psycopg.DataError, psycopg.IntegrityError, psycopg.ProgrammingError, psycopg.NotSupportedError)
# The listening connection idles between notifications: after 10 s of silence TCP probes the peer, and 3 probes
# unanswered 5 s apart end the connection (a lost host or network), so the feed reconnects.
LISTEN_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}


async def check_lent(conn: Connection) -> None:
    """The pool's check before it lends a connection: one that a database restart or a killed backend closed is
    replaced instead of failing the request that drew it.

    psycopg_pool's own check is a round trip (an empty query) on every borrow, about 0.13 ms each and a sixth of a
    keyed admission (bench `store`). An idle connection has nothing to read: a server that closed it left its last
    message and/or end-of-file on the socket. So a zero-timeout poll of the socket decides, and only a connection
    with something to read gets the round trip — which fails for a closed one. A connection that dies after the check
    fails its request either way. (The poll is `poll(2)`, not `select(2)`: a gateway's descriptors exceed 1024.)
    """
    if conn.broken or conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    poller = select.poll()
    poller.register(conn.pgconn.socket, select.POLLIN | select.POLLPRI)
    if poller.poll(0):  # something arrived while idle (a shutdown's message, end-of-file): ask the server
        await AsyncConnectionPool.check_connection(conn)


class PostgresDatabase:
    """The pool of one database; `connection()`/`transaction()` lend a connection (autocommit, rows as dicts)."""

    def __init__(
        self, url: str, *, max_connections: int = MAX_CONNECTIONS, migrations_dir: Traversable | Path | None = None
    ) -> None:
        self._url = url
        try:
            params = conninfo_to_dict(url)
            self._bad_url: psycopg.Error | None = None
        except psycopg.Error as exc:  # the config check lets only postgresql:// URLs through; libpq may refuse one
            params, self._bad_url = {}, exc
        self.where = f"{params.get('host') or 'localhost'}:{params.get('port') or 5432}/{params.get('dbname') or ''}"
        self.max_connections = max_connections
        self.migrations_dir = migrations_dir  # None: the bundled postgres/migrations/ (tests inject their own)
        self._kwargs: dict[str, Any] = {"autocommit": True, "row_factory": dict_row}
        if "connect_timeout" not in params:
            self._kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
        if "application_name" not in params:
            self._kwargs["application_name"] = APPLICATION_NAME  # how pg_stat_activity names a gateway's connections
        self._pool: AsyncConnectionPool[Connection] | None = None

    def __repr__(self) -> str:
        return f"PostgresDatabase({self.where})"  # never the URL: it may carry the password

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    def error(self, what: str, exc: BaseException) -> StoreError:
        """A StoreError for a failed `what`, its text free of the URL's password: StoreUnavailable for what a later
        attempt may get through (no connection, the server shutting down or starting up, a serialization failure:
        psycopg's OperationalError, PoolTimeout included), StoreRefused for a statement refused for its values or its
        text (a NUL in a text value, a broken constraint: it would be refused again), a plain StoreError else."""
        kind: type[StoreError] = StoreError
        if isinstance(exc, psycopg.OperationalError):
            kind = StoreUnavailable
        elif isinstance(exc, _REFUSED):
            kind = StoreRefused
        return kind(mask_store_text(f"{what} ({self.where}): {exc}", self._url))

    async def open(self) -> None:
        """Migrate the schema (one gateway at a time, under an advisory lock), then open the pool."""
        if self._bad_url is not None:
            raise self.error("not a usable PostgreSQL URL", self._bad_url)
        migrations = load_migrations(self.migrations_dir or BUNDLED)
        try:
            conn = await psycopg.AsyncConnection.connect(self._url, **self._kwargs)
        except psycopg.Error as exc:
            raise self.error("cannot connect to PostgreSQL", exc) from exc
        try:
            await migrate(conn, migrations)
        except psycopg.Error as exc:
            raise self.error("cannot migrate the PostgreSQL store", exc) from exc
        finally:
            await conn.close()
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            self._url,
            connection_class=Connection,
            kwargs=self._kwargs,
            min_size=1,
            max_size=self.max_connections,
            open=False,
            timeout=ACQUIRE_TIMEOUT_S,
            reconnect_timeout=RECONNECT_TIMEOUT_S,
            check=check_lent,
            name="hermes-api-store",
        )
        try:
            await pool.open(wait=True, timeout=OPEN_TIMEOUT_S)
        except psycopg.Error as exc:
            await pool.close()
            raise self.error("cannot open the PostgreSQL pool", exc) from exc
        self._pool = pool
        log.info("[API Server] store: PostgreSQL at %s", self.where)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def listener(self, channels: Sequence[str]) -> Connection:
        """A connection of its own (not the pool's) listening on `channels`, with TCP keepalives so a lost host
        ends it instead of leaving it waiting for good. The caller closes it."""
        kwargs = {**LISTEN_KEEPALIVES, **self._kwargs}
        try:
            conn = await Connection.connect(self._url, **kwargs)
        except psycopg.Error as exc:
            raise self.error("cannot connect to PostgreSQL", exc) from exc
        try:
            for channel in channels:
                await conn.execute(f"LISTEN {channel}")  # constants of the feed, never user input
        except psycopg.Error as exc:
            await conn.close()
            raise self.error("cannot LISTEN on PostgreSQL", exc) from exc
        return conn

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection in autocommit: each statement commits on its own."""
        if self._pool is None:
            raise StoreError("the store is closed")
        try:
            async with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise self.error("PostgreSQL store failed", exc) from exc

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """A pooled connection inside one transaction, rolled back on any error."""
        async with self.connection() as conn, conn.transaction():
            yield conn
