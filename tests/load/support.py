"""Shared pieces of the load and fault tests: the gateway's own counts (`GET /health/detailed`), its resident memory,
raw-socket clients that go away abruptly, and a generated script whose turn streams megabytes of text."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.helpers import live_request, wait_for
from tests.live import LiveGateway


def server_numbers(live: LiveGateway) -> dict[str, Any]:
    """The `api_server` block of `/health/detailed`: turns, slots, open streams, store."""
    reply = live_request(live, "GET", "/health/detailed", timeout=10)
    assert reply.status == 200, reply.raw[:300]
    numbers: dict[str, Any] = reply.json()["api_server"]
    return numbers


def no_turns(numbers: Mapping[str, Any]) -> bool:
    return bool(numbers["slots"]["admitted"] == 0)


def idle(numbers: Mapping[str, Any]) -> bool:
    """No turn in the registry and no streaming reply being written."""
    return no_turns(numbers) and numbers["streams"]["open"] == 0


def wait_until_idle(live: LiveGateway, timeout: float = 10.0) -> dict[str, Any]:
    return wait_for(lambda: server_numbers(live), timeout, until=idle, interval=0.1, what="an idle gateway")


def rss_mib(pid: int) -> float:
    """VmRSS of a process, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


class RssSampler:
    """Samples a process's VmRSS every `interval` s on a thread; `peak` is the largest sample."""

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = rss_mib(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, rss_mib(self.pid))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.peak = max(self.peak, rss_mib(self.pid))


def raw_request(live: LiveGateway, path: str, body: Mapping[str, Any], headers: Mapping[str, str] = {}) -> bytes:
    """A complete HTTP/1.1 POST with the gateway's key and a JSON body, as bytes for a raw socket."""
    payload = json.dumps(body).encode()
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {live.host}:{live.port}",
        f"Authorization: Bearer {live.key}",
        "Content-Type: application/json",
        f"Content-Length: {len(payload)}",
        "Connection: close",  # a reply read to its end ends with the server's FIN, not a keep-alive wait
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


async def connect(live: LiveGateway) -> socket.socket:
    """A raw non-blocking TCP connection to the gateway, for the loop's `sock_*` calls."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (live.host, live.port))
    return sock


def stalled_client(live: LiveGateway, path: str, body: Mapping[str, Any], receive_buffer: int = 4096) -> socket.socket:
    """A client that sends its request and then never reads: a blocking socket whose receive buffer (and so its TCP
    window) is shrunk before connecting."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect((live.host, live.port))
    sock.sendall(raw_request(live, path, body))
    return sock


def close_abruptly(sock: socket.socket, reset: bool) -> None:
    """Close without a goodbye: a FIN, or with `reset` an RST (SO_LINGER 0) as a crashed client would."""
    if reset:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


async def read_some(sock: socket.socket, limit: int, timeout: float) -> int:
    """Read from a raw socket until `limit` bytes arrived, the peer closed, or `timeout` s passed; the bytes read."""
    loop = asyncio.get_running_loop()
    got = 0
    deadline = loop.time() + timeout
    while got < limit:
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        try:
            piece = await asyncio.wait_for(loop.sock_recv(sock, min(65536, limit - got)), remaining)
        except TimeoutError:
            break
        if not piece:
            break
        got += len(piece)
    return got


def write_big_text_script(path: Path, megabytes: int, line_chars: int = 8192, chunk_chars: int = 1024) -> int:
    """A script whose turns stream `megabytes` MiB of answer text in `chunk_chars` deltas, as fast as the loop runs
    (an input with "small" gets a one-word answer instead). One line of text is anchored and repeated through YAML
    aliases, so the file stays small and loads fast; the deltas are slices of it, so each is a string of its own in
    the journal, as a model's would be. Returns the number of characters a big turn streams."""
    line = "".join(chr(ord("a") + i % 26) for i in range(line_chars - 1)) + " "
    repeats = megabytes * 1024 * 1024 // line_chars
    steps = [f'      - text: &line "{line}"'] + ["      - text: *line"] * (repeats - 1)
    path.write_text(
        f"options: {{chunk_chars: {chunk_chars}, delay_ms: 0}}\nturns:\n"
        '  - match: "small"\n    steps:\n      - text: "small"\n'
        "  - steps:\n" + "\n".join(steps) + "\n",
        encoding="utf-8",
    )
    return repeats * line_chars
