"""What the Open WebUI checks (bench/owui_approval_check.py, bench/owui_turn_taking_check.py) share: the gateway
helper process, a client of the gateway, Open WebUI's process, a proxy recording what Open WebUI sends, and the
Chromium page.

- **Gateway helper** (`python -m bench.owui_common <host> <chat approvals> <info.json>`, run by the Hermes venv): the
  scripted model provider (tests/hermes/provider.py) and a gateway on it, its Hermes home written as tests/hermes/
  support.py `hermes_config` does plus `approvals: {mode: manual, timeout: 600}`, until SIGTERM. `<host>` is
  `reference` (`python -m hermes_api_plugin gateway` with `agent.runtime: hermes`, the real `AIAgent`) or `hermes`
  (Hermes' own `hermes gateway run -v` with this plugin enabled as a Hermes plugin replacing its API server, as
  tests/hermes/support.py starts it); `<chat approvals>` is `api_server.approvals.chat`: `hold` (§14.2's open stream,
  decided through `/v1/runs/{id}/approval`) or `ask` (§15.2: the approval question ends the delivery, the chat's next
  message answers it). It writes `{url, key, home, pid, log}` to `<info.json>`, the gateway's log lines to
  `<home>/gateway.log`, and at the end what the agent asked the provider (per call: scenario, message count, last
  role, the tools it was offered) to `<home>/provider-calls.json`.
- **Open WebUI** (`start_owui`): `open-webui serve` with WEBUI_AUTH=False, offline, no Ollama, no local models, no
  background generation tasks (they would send a `[danger]` prompt to the model again), one OpenAI connection.
- **RecordingProxy**: between Open WebUI and the gateway, forwarding every request and streaming every response
  unchanged, keeping each chat request's body, the response's `X-Hermes-*` headers and its SSE text: what Open WebUI
  really sent and received.
- **Browser**: one headless Chromium page (Debian's chromium, driven by Playwright) recording console messages and the
  socket.io status events Open WebUI pushes to it.

Every process is started and stopped by its PID (`stop`).
"""

from __future__ import annotations

import http.client
import http.server
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RUN_ID = re.compile(r"\brun_[0-9a-f]{32}\b")
HOSTS = ("reference", "hermes")
CHAT_APPROVALS = ("ask", "hold")
APPROVALS = {"mode": "manual", "timeout": 600}


# --------------------------------------------------------------------------------------------------------------
# the gateway helper (Hermes venv)
# --------------------------------------------------------------------------------------------------------------
def serve_gateway(host: str, chat_approvals: str, out: Path) -> int:
    """Scripted provider + a gateway (`host`: reference or hermes) with manual approvals, until SIGTERM/SIGINT."""
    from tests.hermes.provider import ScriptedProvider
    from tests.hermes.support import PLUGINS, hermes_config, listening
    from tests.hermes.support import start_gateway as start_hermes_gateway
    from tests.live import TEST_KEY, start_gateway, write_home

    stop_event = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop_event.set())
    signal.signal(signal.SIGINT, lambda *_: stop_event.set())
    root = Path(tempfile.mkdtemp(prefix="owui-gw-"))
    with ScriptedProvider() as provider:
        sections: dict[str, Any] = {"approvals": APPROVALS, "api_server": {"approvals": {"chat": chat_approvals}}}
        if host == "reference":
            sections["agent"] = {"runtime": "hermes"}
        else:
            sections["plugins"] = PLUGINS
        config = hermes_config(provider, root / "work", **sections)
        home = write_home(root / "home", env={"API_SERVER_PORT": "0"}, config=config, script=None)
        if host == "reference":
            live: Any = start_gateway(home, timeout=90)
            url, key = live.url, live.key
        else:
            live = start_hermes_gateway(home)
            try:
                listening(live)
            except BaseException:
                live.stop()
                raise
            url, key = live.url, TEST_KEY
        log = home / "gateway.log"
        written = 0

        def flush() -> None:
            nonlocal written
            lines = list(live.lines)
            if len(lines) > written:
                with log.open("a", encoding="utf-8") as f:
                    f.write("".join(line + "\n" for line in lines[written:]))
                written = len(lines)

        try:
            info = {"url": url, "key": key, "home": str(home), "pid": live.proc.pid, "log": str(log)}
            out.write_text(json.dumps(info), encoding="utf-8")
            print(f"{host} gateway {url} (pid {live.proc.pid}), provider {provider.base_url}", flush=True)
            while not stop_event.is_set() and live.proc.poll() is None:
                flush()
                time.sleep(0.2)
        finally:
            code = live.stop()
            flush()
            calls = [
                {"scenario": c.scenario, "messages": len(c.messages), "last_role": c.last_role, "tools": c.tools}
                for c in provider.requests
            ]
            (home / "provider-calls.json").write_text(json.dumps(calls), encoding="utf-8")
            print(f"gateway stopped ({code}); provider calls: {[c.scenario for c in provider.requests]}", flush=True)
    return 0


def start_gateway_helper(
    hermes_python: str, workdir: Path, host: str, chat_approvals: str
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """Run the gateway helper in the Hermes venv; its info once the gateway listens."""
    info_path = workdir / "gateway.json"
    proc = subprocess.Popen(
        [hermes_python, "-m", "bench.owui_common", host, chat_approvals, str(info_path)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=(workdir / "gateway-helper.out").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    if not wait_until(lambda: info_path.exists() or proc.poll() is not None, 120) or not info_path.exists():
        raise RuntimeError("gateway helper did not start: " + (workdir / "gateway-helper.out").read_text())
    return proc, json.loads(info_path.read_text())


# --------------------------------------------------------------------------------------------------------------
# the check side (Open WebUI venv)
# --------------------------------------------------------------------------------------------------------------
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(predicate: Any, timeout: float, step: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return None


class Gateway:
    def __init__(self, info: dict[str, Any]) -> None:
        self.url, self.key, self.log = info["url"], info["key"], Path(info["log"])

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.key}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                raw = r.read().decode()
                return r.status, (json.loads(raw) if r.headers.get_content_type() == "application/json" else raw)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def run(self, run_id: str) -> dict[str, Any]:
        return dict(self.request("GET", f"/v1/runs/{run_id}")[1])

    def run_ids(self) -> list[str]:
        """Run ids in the order the gateway's log first names them (Hermes logs `thread=hermes-agent run_…`)."""
        text = self.log.read_text(encoding="utf-8") if self.log.exists() else ""
        return list(dict.fromkeys(RUN_ID.findall(text)))

    def events(self, run_id: str) -> list[dict[str, Any]]:
        _, raw = self.request("GET", f"/v1/runs/{run_id}/events")
        return [json.loads(line[5:]) for line in str(raw).splitlines() if line.startswith("data:")]


HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "accept-encoding", "te"}


class RecordingProxy:
    """A plain HTTP proxy on 127.0.0.1 in front of the gateway. Each response is streamed to the client as it arrives
    (then the connection closes: HTTP/1.0). `exchanges` keeps, per POST /v1/chat/completions, the request body as
    sent, the response status and `X-Hermes-*` headers, and the response text (SSE as streamed)."""

    def __init__(self, target: str) -> None:
        parsed = urllib.parse.urlsplit(target)
        self.target_host, self.target_port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self.exchanges: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                upstream = http.client.HTTPConnection(proxy.target_host, proxy.target_port, timeout=None)
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                record: dict[str, Any] | None = None
                if self.command == "POST" and self.path.endswith("/chat/completions"):
                    record = {
                        "t": time.time(),
                        "path": self.path,
                        "request": json.loads(body or b"null"),
                        "status": response.status,
                        "headers": {k: v for k, v in response.getheaders() if k.lower().startswith("x-hermes-")},
                    }
                    with proxy.lock:
                        proxy.exchanges.append(record)
                self.send_response(response.status)
                for k, v in response.getheaders():
                    if k.lower() not in HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Connection", "close")
                self.end_headers()
                received = bytearray()
                try:
                    while chunk := response.read1(65536):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        received += chunk
                finally:
                    upstream.close()
                    if record is not None:
                        record["response"] = received.decode("utf-8", "replace")
                        record["ended"] = time.time()

            do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def chats(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.exchanges)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def sse_records(text: str) -> list[tuple[str | None, Any]]:
    """`(event name, data)` of an SSE text as the gateway streamed it ([DONE] as the string)."""
    records: list[tuple[str | None, Any]] = []
    name = None
    for line in text.splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
            records.append((name, data if data == "[DONE]" else json.loads(data)))
            name = None
    return records


def owui_env(gateway_url: str, key: str, data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DATA_DIR": str(data_dir),
            "WEBUI_AUTH": "False",
            "WEBUI_SECRET_KEY": "owui-check-" + uuid.uuid4().hex,
            "OFFLINE_MODE": "true",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "USE_SLIM_DOCKER": "true",  # no local SentenceTransformer / whisper model at startup
            "RAG_EMBEDDING_MODEL_AUTO_UPDATE": "False",
            "RAG_RERANKING_MODEL_AUTO_UPDATE": "False",
            "WHISPER_MODEL_AUTO_UPDATE": "False",
            "ENABLE_OLLAMA_API": "False",
            "ENABLE_OPENAI_API": "True",
            "OPENAI_API_BASE_URL": gateway_url + "/v1",
            "OPENAI_API_KEY": key,
            # background tasks would send the `[danger]` prompt to the model again (a second guarded run)
            "ENABLE_TITLE_GENERATION": "False",
            "ENABLE_TAGS_GENERATION": "False",
            "ENABLE_FOLLOW_UP_GENERATION": "False",
            "ENABLE_AUTOCOMPLETE_GENERATION": "False",
            "ENABLE_SEARCH_QUERY_GENERATION": "False",
            "ENABLE_RETRIEVAL_QUERY_GENERATION": "False",
            "ENABLE_VERSION_UPDATE_CHECK": "False",
            "ANONYMIZED_TELEMETRY": "False",
            "SCARF_NO_ANALYTICS": "true",
            "DO_NOT_TRACK": "true",
        }
    )
    return env


def start_owui(owui: str, gateway_url: str, key: str, workdir: Path) -> tuple[subprocess.Popen[str], str, float]:
    """`open-webui serve` on a free port with `gateway_url` as its one OpenAI connection; (process, url, start-up s)."""
    port = free_port()
    started = time.monotonic()
    proc = subprocess.Popen(
        [owui, "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=workdir,
        env=owui_env(gateway_url, key, workdir / "owui-data"),
        stdin=subprocess.DEVNULL,
        stdout=(workdir / "open-webui.log").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if proc.poll() is not None:
            raise RuntimeError("open-webui exited: " + (workdir / "open-webui.log").read_text()[-3000:])
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    if not wait_until(healthy, 180, 0.5):
        raise RuntimeError("open-webui did not become healthy")
    return proc, url, time.monotonic() - started


def stop(proc: subprocess.Popen[str] | None, name: str) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        print(f"{name} (pid {proc.pid}) ignored SIGTERM: SIGKILL", flush=True)
        proc.kill()
        proc.wait(10)


def victim() -> Path:
    """A directory holding a file, for `[danger] <dir>` (the agent's `rm -rf <dir>`) to remove or not."""
    target = Path(f"/tmp/owui-victim-{uuid.uuid4().hex[:8]}")
    target.mkdir()
    (target / "keep.txt").write_text("still here", encoding="utf-8")
    return target


class Browser:
    """One Chromium page on Open WebUI, recording console messages and the socket.io `events` it receives."""

    def __init__(self, pw: Any, url: str, chromium: str) -> None:
        self.url = url
        self.browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page(viewport={"width": 1100, "height": 720})
        self.console: list[dict[str, str]] = []
        self.page_errors: list[str] = []
        self.socket_events: list[dict[str, Any]] = []
        self.page.on("console", lambda m: self.console.append({"type": m.type, "text": m.text[:500]}))
        self.page.on("pageerror", lambda e: self.page_errors.append(str(e)[:500]))
        self.page.on("websocket", self._websocket)

    def _websocket(self, ws: Any) -> None:
        def received(payload: Any) -> None:
            text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
            if not text.startswith("42"):
                return  # socket.io: only "42" frames are events
            try:
                name, body = json.loads(text[2:])[:2]
            except (ValueError, TypeError):
                return
            if name == "events" and isinstance(body, dict):
                data = body.get("data") or {}
                kind = data.get("type")
                if kind == "status":
                    self.socket_events.append({"t": time.time(), "type": kind, "data": data.get("data")})
                elif kind in ("chat:completion", "chat:active") and (data.get("data") or {}).get("done"):
                    self.socket_events.append({"t": time.time(), "type": kind, "done": True})

        ws.on("framereceived", received)

    def open_new_chat(self) -> None:
        self.page.goto(self.url + "/", wait_until="load")
        self.page.locator("#chat-input").wait_for(timeout=60_000)
        lets_go = self.page.get_by_role("button", name="Okay, Let's Go!")
        try:
            lets_go.wait_for(timeout=4000)  # the release-notes modal, shown once per user
            lets_go.click()
        except Exception:
            pass
        # pick the model the gateway advertises in the model selector
        self.page.locator("#model-selector-model-button").click()
        self.page.get_by_role("option").filter(has_text="hermes-agent").first.click()
        self.page.wait_for_timeout(300)

    def send(self, text: str) -> None:
        box = self.page.locator("#chat-input")
        box.click()
        box.type(text)
        self.page.keyboard.press("Enter")

    def statuses(self) -> list[str]:
        """Every status line currently rendered (the last item of the message's status history, or all of them
        when the history is open)."""
        return [t.strip() for t in self.page.locator(".status-description").all_inner_texts() if t.strip()]

    def shimmering(self) -> bool:
        return self.page.locator(".status-description .shimmer").count() > 0

    def shot(self, path: Path) -> None:
        """A screenshot, reduced to 32 colours when Pillow is there (Open WebUI brings it): small files to commit."""
        png = self.page.screenshot()
        try:
            from PIL import Image

            image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=32, method=Image.Quantize.MEDIANCUT)
            image.save(path, optimize=True)
        except ImportError:
            path.write_bytes(png)

    def close(self) -> None:
        self.browser.close()


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in HOSTS or sys.argv[2] not in CHAT_APPROVALS:
        raise SystemExit(f"usage: python -m bench.owui_common {'|'.join(HOSTS)} {'|'.join(CHAT_APPROVALS)} <info.json>")
    raise SystemExit(serve_gateway(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
