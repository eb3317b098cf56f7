"""A real Prometheus server for the tests (issue 24): Debian's `prometheus` binary started as a subprocess on a loopback
port, with a generated scrape config (1 s interval, the API key as its bearer token) and its own TSDB directory, queried
over its HTTP API with PromQL.

Where the binary is missing the tests that need it skip, saying why; under CI=true they fail (.ci/run installs it).
The server is ended by its PID, never by name.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

SCRAPE_INTERVAL = "1s"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def prometheus_binary(name: str = "prometheus") -> str:
    """The `prometheus` binary (or its package's `promtool`): skip without it, fail under CI=true."""
    found = shutil.which(name)
    if found is None:
        reason = f"no `{name}` binary (apt-get install prometheus)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs Prometheus: {reason}")
        pytest.skip(reason)
    return found


@dataclass(frozen=True)
class ScrapeJob:
    """One scrape job: a target `host:port` and the bearer token it is scraped with (None: no Authorization)."""

    name: str
    target: str
    token: str | None
    path: str = "/metrics"


def scrape_config(jobs: Sequence[ScrapeJob]) -> dict[str, Any]:
    """The prometheus.yml of the jobs, every one scraped each SCRAPE_INTERVAL."""
    configs = []
    for job in jobs:
        config: dict[str, Any] = {
            "job_name": job.name,
            "scrape_interval": SCRAPE_INTERVAL,
            "scrape_timeout": SCRAPE_INTERVAL,
            "metrics_path": job.path,
            "static_configs": [{"targets": [job.target]}],
        }
        if job.token is not None:
            config["authorization"] = {"type": "Bearer", "credentials": job.token}
        configs.append(config)
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": configs,
    }


class Prometheus:
    """A running Prometheus on 127.0.0.1; `query` evaluates PromQL now (an instant query)."""

    def __init__(self, root: Path, jobs: Sequence[ScrapeJob]) -> None:
        binary = prometheus_binary()
        root.mkdir(parents=True, exist_ok=True)
        config = root / "prometheus.yml"
        config.write_text(yaml.safe_dump(scrape_config(jobs)), encoding="utf-8")
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = root / "prometheus.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={root / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--storage.tsdb.retention.time=1h",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited:\n{self.log.read_text(errors='replace')}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"prometheus not ready within {timeout} s:\n{self.log.read_text(errors='replace')}")

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector (or scalar, as one element) of `promql`, as Prometheus' HTTP API returns it."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(url, timeout=10) as reply:
            doc = json.loads(reply.read())
        assert doc["status"] == "success", doc
        data = doc["data"]
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        result: list[dict[str, Any]] = data["result"]
        return result

    def value(self, promql: str) -> float | None:
        """The single value of `promql` (None when the vector is empty)."""
        result = self.query(promql)
        assert len(result) <= 1, result
        return float(result[0]["value"][1]) if result else None

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
