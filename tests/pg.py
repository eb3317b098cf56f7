"""A real PostgreSQL server for the tests: its own cluster in a temporary directory, on a free loopback port.

`initdb` + `pg_ctl` from Debian's server packages (`/usr/lib/postgresql/<version>/bin`, not on PATH) or from PATH.
PostgreSQL refuses to run as root, and CI runs as root: there the cluster belongs to an unprivileged system user
(Debian's `postgres`, else one created with `useradd --system`) and every server command runs as that user. The
superuser has a password (scram-sha-256 over TCP), so a URL's password is really used, and really secret.

`PostgresServer.start()`/`stop()` restart the same cluster on the same port (a test restarts the database
mid-turn); `new_database()` makes a fresh, empty database for one test (CREATE DATABASE is cheap).
"""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

SUPERUSER = "hermes_test"
FALLBACK_OS_USER = "hermes-pg-test"
PG_MIGRATIONS = resources.files("hermes_api_plugin.store.postgres.migrations")  # the package's PostgreSQL migrations
DatabaseFactory = Callable[[], str]  # the `postgres_databases` fixture: a new database's URL per call
_VERSION_DIR = re.compile(r"^\d+(\.\d+)?$")


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries (or no driver) here: the tests that need one skip, or fail under CI=true."""


def find_bindir() -> Path:
    """The newest `/usr/lib/postgresql/<version>/bin` with initdb and pg_ctl, else the directory of `pg_ctl` on PATH."""
    root = Path("/usr/lib/postgresql")
    versions = sorted(
        (d for d in root.iterdir() if _VERSION_DIR.match(d.name)) if root.is_dir() else (),
        key=lambda d: tuple(int(p) for p in d.name.split(".")),
        reverse=True,
    )
    for version in versions:
        bindir = version / "bin"
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    on_path = shutil.which("pg_ctl")
    if on_path and (Path(on_path).parent / "initdb").is_file():
        return Path(on_path).parent
    raise PostgresUnavailable(
        "PostgreSQL server binaries not found (no /usr/lib/postgresql/*/bin/initdb, no pg_ctl on PATH): "
        "apt-get install postgresql"
    )


def _server_account() -> pwd.struct_passwd | None:
    """The unprivileged account that runs the server when we are root; None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", FALLBACK_OS_USER):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", FALLBACK_OS_USER],
        check=True,
        capture_output=True,
    )
    return pwd.getpwnam(FALLBACK_OS_USER)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """One cluster: `root` holds `data/` (the cluster), `sock/` (its unix socket) and `server.log`."""

    bindir: Path
    root: Path
    account: pwd.struct_passwd | None
    password: str = field(default_factory=lambda: secrets.token_urlsafe(18), repr=False)
    port: int = 0
    fsync: bool = False  # tests: off (see start()); the benchmark measures with the server's default, on
    _databases: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{database}"

    # -- running server commands as the unprivileged account ---------------------------------------------
    def _run(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}  # no PGHOST & co. from outside
        env.update({"LC_ALL": "C", "LANG": "C"})
        kwargs: dict[str, object] = {}
        if self.account is not None:
            env["HOME"] = str(self.root)
            kwargs = {"user": self.account.pw_uid, "group": self.account.pw_gid, "extra_groups": []}
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self.root,
            **kwargs,  # type: ignore[call-overload]
        )

    def _checked(self, *args: str) -> None:
        done = self._run(*args)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n{self._log()}")

    def _log(self) -> str:
        try:
            return self.log_file.read_text(encoding="utf-8", errors="replace")[-4000:]
        except OSError:
            return ""

    # -- lifecycle ------------------------------------------------------------------------------------------
    def init(self) -> None:
        (self.root / "sock").mkdir()
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n", encoding="utf-8")
        if self.account is not None:
            for path in (self.root, self.root / "sock", pwfile):
                os.chown(path, self.account.pw_uid, self.account.pw_gid)
        try:
            self._checked(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                SUPERUSER,
                f"--pwfile={pwfile}",
                "--auth-local=trust",  # the unix socket lives in our private directory
                "--auth-host=scram-sha-256",  # TCP needs the password: URLs carry a real secret
                "--no-locale",
                "-E",
                "UTF8",
                "--no-sync",  # a throwaway cluster: no need to flush the template files
            )
        finally:
            pwfile.unlink()

    def start(self) -> None:
        """Start the cluster (again) on its port; the first start picks a free loopback port."""
        for _attempt in range(5):
            port = self.port or _free_port()
            # fsync=off: flushes guard against losing the OS (power, kernel), never against a server killed or
            # restarted, which is what tests do; without them CREATE DATABASE costs 180 ms instead of 50.
            # authentication_timeout: a connection a test left half-authenticated (a pool reconnecting in a loop that
            # no longer runs) holds up DROP DATABASE … WITH (FORCE) until it times out; 60 s by default.
            fsync = "on" if self.fsync else "off"
            options = (
                f"-p {port} -c listen_addresses=127.0.0.1 -k {self.root / 'sock'} -c fsync={fsync} "
                "-c authentication_timeout=5s"
            )
            done = self._run(
                "pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.log_file), "-o", options
            )
            if done.returncode == 0:
                self.port = port
                return
            if self.port:  # a restart keeps its port: a failure is a failure
                break
        raise RuntimeError(f"pg_ctl start failed:\n{done.stdout}\n{done.stderr}\n{self._log()}")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`pg_ctl stop -m fast`: connections are cut, as a database restart does)."""
        if self.pid() is None:
            return
        done = self._run("pg_ctl", "stop", "-w", "-t", "60", "-m", mode, "-D", str(self.data))
        if done.returncode != 0 and mode != "immediate":  # an immediate stop ends every backend with the postmaster
            done = self._run("pg_ctl", "stop", "-w", "-t", "30", "-m", "immediate", "-D", str(self.data))
        if done.returncode != 0 and (pid := self.pid()) is not None:
            os.kill(pid, signal.SIGKILL)  # pg_ctl could not: no server may outlive the tests
            time.sleep(0.2)

    def pid(self) -> int | None:
        """The postmaster's PID while it runs."""
        try:
            first = (self.data / "postmaster.pid").read_text(encoding="utf-8").splitlines()[0]
            pid = int(first)
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError, IndexError):
            return None

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- databases ------------------------------------------------------------------------------------------
    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        name = f"test_{os.getpid()}_{next(self._databases)}"
        self._sql("CREATE DATABASE {}", name)
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop a test's database, cutting connections a test left open."""
        self._sql("DROP DATABASE IF EXISTS {} WITH (FORCE)", url.rsplit("/", 1)[1])

    def _sql(self, template: str, name: str) -> None:
        import psycopg  # the driver is the backend's own dependency (the `postgres` extra)
        from psycopg import sql

        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL(template).format(sql.Identifier(name)))  # type: ignore[arg-type]


def launch(*, fsync: bool = False) -> PostgresServer:
    """initdb a cluster in a new temporary directory and start it; stopped at exit at the latest. `fsync`: flush
    commits to disk as a production server does (the benchmark), instead of the tests' fsync=off."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise PostgresUnavailable(f"psycopg is not installed (pip install -e '.[dev]'): {exc}") from exc
    bindir = find_bindir()
    account = _server_account()
    # Not under pytest's tmp_path: its parents are 0700 root, which the server's account cannot traverse.
    root = Path(tempfile.mkdtemp(prefix="hermes-pg-"))
    server = PostgresServer(bindir, root, account, fsync=fsync)
    atexit.register(server.destroy)  # also when the session ends without its fixture finalizer
    try:
        server.init()
        server.start()
    except BaseException:
        server.destroy()
        raise
    return server


STORES = ["sqlite", "postgres"]  # `params` of a fixture that runs a gateway on each store


@contextmanager
def store_env(request: Any) -> Iterator[dict[str, str] | None]:
    """The `.env` entry for the store a fixture parametrised over STORES was asked for: a new database of the
    session's PostgreSQL server (the `postgres_server` fixture), dropped on exit, or None for the gateway's own
    SQLite file."""
    if request.param != "postgres":
        yield None
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.new_database()
    try:
        yield {"API_SERVER_STORE_URL": url}
    finally:
        server.drop_database(url)
