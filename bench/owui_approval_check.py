"""How a dangerous-command approval (WIRE.md §14.2) looks in the real Open WebUI, in a real headless browser.

Not a benchmark and not a test (nothing under tests/, so pytest never collects it): a manual check that records
what a user sees. It needs

- `.venv-hermes` (hermes-agent 0.19.0 + this plugin; `./test --hermes -k nothing` builds it) for the gateway;
- a second venv with Open WebUI and Playwright for Python, e.g.
  `python3.11 -m venv .venv-owui && .venv-owui/bin/pip install torch==2.13.0 && .venv-owui/bin/pip install
  open-webui==0.12.4 playwright` (torch first, so pip keeps the CPU build from the machine's disk instead of
  pulling a multi-GB CUDA build for sentence-transformers);
- Debian's Chromium (`apt-get install -y chromium`; never `playwright install`).

Run from the repository root:

    .venv-owui/bin/python -m bench.owui_approval_check [--hermes-python .venv-hermes/bin/python] [--out bench/owui]

What it does, all on 127.0.0.1 and offline:

1. `gateway` mode, in a subprocess run by the Hermes venv: the scripted model provider (tests/hermes/provider.py)
   and the reference gateway `python -m hermes_api_plugin gateway` with `agent.runtime: hermes` (the real
   `AIAgent`), its Hermes home written as tests/hermes/support.py `hermes_config` does, plus
   `approvals: {mode: manual, timeout: 600}`. The prompt `[danger] <dir>` makes the agent call `terminal`
   `rm -rf <dir>`, which Hermes' guard holds for approval.
2. `open-webui serve` with WEBUI_AUTH=False, OFFLINE_MODE, no Ollama, no local embedding model, no title/tag/
   follow-up generation (those would send the `[danger]` prompt to the model again), and the gateway as its one
   OpenAI connection (OPENAI_API_BASE_URL / OPENAI_API_KEY).
3. Chromium driven by Playwright: pick `hermes-agent` in the model selector, send `[danger] /tmp/owui-victim-<hex>`
   (a directory holding a file), wait until the run is `waiting_for_approval` (its id from the gateway log, checked
   with GET /v1/runs/{id}), screenshot, decide with POST /v1/runs/{id}/approval, screenshot right after and when
   the answer has rendered, then open the status history and screenshot it. Once with `{"choice":"once"}` (the
   directory must be gone afterwards, and only afterwards) and once with `{"choice":"deny"}` (it must stay); then
   (`--slow N`, default 6, 0 skips it) once more approved, with the command `rm -rf <dir>;sleep${IFS}N`, to see
   what the status line says while an approved command is still running; last, a user who clicks Open WebUI's
   Stop button while the approval waits (the run must be cancelled, the directory stay). After each turn the page
   is reloaded to read the statuses Open WebUI saved with the chat.

Writes `<out>/*.png` and `<out>/result.json` (what the status line said at each step, the Open WebUI status events
the browser received over its socket, console errors, the directory checks). Exit code 0 when every check held.
Every process it starts is stopped by its PID at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RUN_ID = re.compile(r"\brun_[0-9a-f]{32}\b")


# --------------------------------------------------------------------------------------------------------------
# gateway mode (Hermes venv)
# --------------------------------------------------------------------------------------------------------------
def serve_gateway(out: Path) -> int:
    """Scripted provider + reference gateway (hermes runtime, manual approvals) until SIGTERM/SIGINT."""
    from tests.hermes.provider import ScriptedProvider
    from tests.hermes.support import hermes_config
    from tests.live import start_gateway, write_home

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    root = Path(tempfile.mkdtemp(prefix="owui-gw-"))
    with ScriptedProvider() as provider:
        config = hermes_config(
            provider, root / "work", approvals={"mode": "manual", "timeout": 600}, agent={"runtime": "hermes"}
        )
        home = write_home(root / "home", env={"API_SERVER_PORT": "0"}, config=config, script=None)
        live = start_gateway(home, timeout=90)
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
            info = {"url": live.url, "key": live.key, "home": str(home), "pid": live.proc.pid, "log": str(log)}
            out.write_text(json.dumps(info), encoding="utf-8")
            print(f"gateway {live.url} (pid {live.proc.pid}), provider {provider.base_url}", flush=True)
            while not stop.is_set() and live.proc.poll() is None:
                flush()
                time.sleep(0.2)
        finally:
            code = live.stop()
            flush()
            print(f"gateway stopped ({code}); provider calls: {[c.scenario for c in provider.requests]}", flush=True)
    return 0


# --------------------------------------------------------------------------------------------------------------
# check mode (Open WebUI venv)
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

    def run_ids(self) -> list[str]:
        """Run ids in the order the gateway's log first names them (Hermes logs `thread=hermes-agent run_…`)."""
        text = self.log.read_text(encoding="utf-8") if self.log.exists() else ""
        return list(dict.fromkeys(RUN_ID.findall(text)))

    def events(self, run_id: str) -> list[dict[str, Any]]:
        _, raw = self.request("GET", f"/v1/runs/{run_id}/events")
        return [json.loads(line[5:]) for line in str(raw).splitlines() if line.startswith("data:")]


def start_gateway_helper(hermes_python: str, workdir: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    info_path = workdir / "gateway.json"
    proc = subprocess.Popen(
        [hermes_python, "-m", "bench.owui_approval_check", "gateway", str(info_path)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=(workdir / "gateway-helper.out").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    if not wait_until(lambda: info_path.exists() or proc.poll() is not None, 120) or not info_path.exists():
        raise RuntimeError("gateway helper did not start: " + (workdir / "gateway-helper.out").read_text())
    return proc, json.loads(info_path.read_text())


def owui_env(gateway: Gateway, data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DATA_DIR": str(data_dir),
            "WEBUI_AUTH": "False",
            "WEBUI_SECRET_KEY": "owui-approval-check-" + uuid.uuid4().hex,
            "OFFLINE_MODE": "true",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "USE_SLIM_DOCKER": "true",  # no local SentenceTransformer / whisper model at startup
            "RAG_EMBEDDING_MODEL_AUTO_UPDATE": "False",
            "RAG_RERANKING_MODEL_AUTO_UPDATE": "False",
            "WHISPER_MODEL_AUTO_UPDATE": "False",
            "ENABLE_OLLAMA_API": "False",
            "ENABLE_OPENAI_API": "True",
            "OPENAI_API_BASE_URL": gateway.url + "/v1",
            "OPENAI_API_KEY": gateway.key,
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


def start_owui(owui: str, gateway: Gateway, workdir: Path) -> tuple[subprocess.Popen[str], str, float]:
    port = free_port()
    started = time.monotonic()
    proc = subprocess.Popen(
        [owui, "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=workdir,
        env=owui_env(gateway, workdir / "owui-data"),
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
            import io

            from PIL import Image

            image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=32, method=Image.Quantize.MEDIANCUT)
            image.save(path, optimize=True)
        except ImportError:
            path.write_bytes(png)

    def close(self) -> None:
        self.browser.close()


def scenario(browser: Browser, gateway: Gateway, choice: str, out: Path, index: int, slow: int = 0) -> dict[str, Any]:
    """One chat turn whose command waits for `choice` (`once`/`deny` POSTed to the gateway; `stop`: the user clicks
    Open WebUI's Stop button instead, which drops the upstream stream: §14.2 says a disconnect denies). With
    `slow`, the command is `rm -rf <dir>;sleep${IFS}<slow>` (the provider takes the first word after `[danger]` as
    the path): an approved command that keeps running, to see what the status line says while it runs."""
    target = victim()
    path = f"{target};sleep${{IFS}}{slow}" if slow else str(target)
    prompt = f"[danger] {path}"
    command = f"rm -rf {path}"
    name = f"{choice}-slow" if slow else choice
    step: dict[str, Any] = {"choice": choice, "prompt": prompt, "victim": str(target)}
    known = set(gateway.run_ids())
    socket_from = len(browser.socket_events)

    browser.open_new_chat()
    browser.send(prompt)
    sent = time.monotonic()
    run_id = wait_until(lambda: next((r for r in gateway.run_ids() if r not in known), None), 60)
    if run_id is None:
        raise RuntimeError("no new run in the gateway log")
    step["run_id"] = run_id
    waiting = wait_until(
        lambda: gateway.request("GET", f"/v1/runs/{run_id}")[1].get("status") == "waiting_for_approval", 60
    )
    step["run_waiting_after_s"] = round(time.monotonic() - sent, 2)
    step["run_status_while_waiting"] = (
        "waiting_for_approval" if waiting else gateway.request("GET", f"/v1/runs/{run_id}")[1]
    )
    # what the UI shows while the run waits
    shown = wait_until(lambda: any("Waiting for approval" in s for s in browser.statuses()), 20)
    browser.page.wait_for_timeout(500)
    step["waiting"] = {
        "status_lines": browser.statuses(),
        "waiting_line_visible": bool(shown),
        "shimmer": browser.shimmering(),
        "victim_exists": target.exists(),
    }
    browser.shot(out / f"{index}-{name}-1-waiting.png")

    if choice == "stop":
        browser.page.get_by_role("button", name="Stop").last.click()
        code, body = 200, "clicked Open WebUI's Stop button"
    else:
        code, body = gateway.request("POST", f"/v1/runs/{run_id}/approval", {"choice": choice})
    decided = time.monotonic()
    step["decision_response"] = {"status": code, "body": body}
    browser.page.wait_for_timeout(150 if not slow else slow * 1000 // 2)
    step["right_after_decision"] = {
        "after_s": round(time.monotonic() - decided, 2),
        "status_lines": browser.statuses(),
        "shimmer": browser.shimmering(),
        "run_status": gateway.request("GET", f"/v1/runs/{run_id}")[1].get("status"),
    }
    browser.shot(out / f"{index}-{name}-2-right-after.png")

    finished = wait_until(
        lambda: (
            gateway.request("GET", f"/v1/runs/{run_id}")[1].get("status")
            in ("completed", "failed", "cancelled", "incomplete")
        ),
        60,
    )
    step["run_final_status"] = gateway.request("GET", f"/v1/runs/{run_id}")[1].get("status") if finished else None
    answer = browser.page.get_by_text("Dangerous command finished")
    try:
        answer.first.wait_for(timeout=20_000 if choice != "stop" else 3000)
        answer_rendered = True
    except Exception:
        answer_rendered = False
    browser.page.wait_for_timeout(1000)
    step["after"] = {
        "status_lines": browser.statuses(),
        "shimmer": browser.shimmering(),
        "answer_rendered": answer_rendered,
        "answer_text": _last_response_text(browser),
        "victim_exists": target.exists(),
        "seconds_after_decision": round(time.monotonic() - decided, 2),
    }
    browser.shot(out / f"{index}-{name}-3-after.png")

    # open the status history (a click on the status line toggles it)
    try:
        browser.page.get_by_role("button", name="Toggle status history").last.click()
        browser.page.wait_for_timeout(500)
        step["history_open"] = {"status_lines": browser.statuses()}
        browser.shot(out / f"{index}-{name}-4-history.png")
    except Exception as e:  # recorded, not fatal
        step["history_open"] = {"error": str(e)[:300]}

    # statuses are saved with the chat (socket/main.py): what a reload shows
    browser.page.reload(wait_until="load")
    try:
        browser.page.locator(".status-description").first.wait_for(timeout=30_000)
        reloaded: dict[str, Any] = {"status_lines": browser.statuses()}
        browser.page.get_by_role("button", name="Toggle status history").last.click()
        browser.page.wait_for_timeout(500)
        reloaded["history"] = browser.statuses()
    except Exception as e:  # recorded, not fatal
        reloaded = {"error": str(e)[:300], "status_lines": browser.statuses()}
    step["after_reload"] = reloaded

    events = gateway.events(run_id)
    step["run_events"] = [
        {k: v for k, v in e.items() if k in ("event", "command", "choices", "choice", "tool", "preview", "error")}
        for e in events
        if e.get("event") not in ("reasoning.delta", "message.delta")
    ]
    step["socket_status_events"] = [
        {"description": (e.get("data") or {}).get("description"), "done": (e.get("data") or {}).get("done")}
        for e in browser.socket_events[socket_from:]
        if e["type"] == "status"
    ]
    step["checks"] = {
        "waiting_line_visible_while_waiting": step["waiting"]["waiting_line_visible"],
        "victim_present_while_waiting": step["waiting"]["victim_exists"],
        "decision_200": code == 200,
    }
    if choice == "stop":  # the stream is gone: no decision status can reach Open WebUI, the run is cancelled
        step["checks"]["run_cancelled"] = step["run_final_status"] == "cancelled"
        step["checks"]["denied_in_run_events"] = any(
            e.get("event") == "approval.responded" and e.get("choice") == "deny" for e in events
        )
    else:
        expected_after = "Approved" if choice != "deny" else "Denied"
        step["checks"][f"{expected_after.lower()}_status_received"] = any(
            s["description"] == f"{expected_after}: {command}" and s["done"] is True
            for s in step["socket_status_events"]
        )
        step["checks"]["answer_rendered"] = answer_rendered
    step["checks"]["victim_after"] = "gone" if not target.exists() else "present"
    step["checks"]["victim_as_expected"] = (not target.exists()) if choice == "once" else target.exists()
    shutil.rmtree(target, ignore_errors=True)  # a directory that (rightly) survived
    return step


def _last_response_text(browser: Browser) -> str:
    try:
        return browser.page.locator("#response-content-container").last.inner_text(timeout=2000)[:500]
    except Exception:
        return ""


def check(args: argparse.Namespace) -> int:
    from playwright.sync_api import sync_playwright

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="owui-check-"))
    helper = owui = None
    result: dict[str, Any] = {"workdir": str(workdir)}
    try:
        t0 = time.monotonic()
        helper, info = start_gateway_helper(args.hermes_python, workdir)
        gateway = Gateway(info)
        result["gateway"] = {"url": gateway.url, "started_s": round(time.monotonic() - t0, 1), "log": info["log"]}
        result["gateway"]["models"] = [m["id"] for m in gateway.request("GET", "/v1/models")[1]["data"]]
        owui, url, took = start_owui(args.open_webui, gateway, workdir)
        result["open_webui"] = {"url": url, "started_s": round(took, 1), "log": str(workdir / "open-webui.log")}
        with sync_playwright() as pw:
            browser = Browser(pw, url, args.chromium)
            try:
                result["browser_version"] = browser.browser.version
                plan = [("once", 0), ("deny", 0)] + ([("once", args.slow)] if args.slow else []) + [("stop", 0)]
                result["scenarios"] = [
                    scenario(browser, gateway, choice, out, i, slow) for i, (choice, slow) in enumerate(plan, 1)
                ]
            finally:
                result["console"] = [c for c in browser.console if c["type"] in ("error", "warning")]
                result["page_errors"] = browser.page_errors
                browser.close()
    finally:
        stop(owui, "open-webui")
        stop(helper, "gateway helper")
        (out / "result.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    ok = all(v is True or v in ("gone", "present") for s in result.get("scenarios", []) for v in s["checks"].values())
    print(json.dumps([{"prompt": s["prompt"], **s["checks"]} for s in result.get("scenarios", [])], indent=2))
    return 0 if ok and result.get("scenarios") else 1


def main() -> int:
    if len(sys.argv) >= 2 and sys.argv[1] == "gateway":
        return serve_gateway(Path(sys.argv[2]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hermes-python", default=str(ROOT / ".venv-hermes/bin/python"))
    parser.add_argument("--open-webui", default=str(Path(sys.executable).parent / "open-webui"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", default=str(ROOT / "bench/owui"))
    parser.add_argument("--slow", type=int, default=6, help="seconds of a third, approved command (0: skip it)")
    return check(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
