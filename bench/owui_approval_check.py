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

1. bench/owui_common.py's gateway helper, in a subprocess run by the Hermes venv: the scripted model provider
   (tests/hermes/provider.py) and the reference gateway `python -m hermes_api_plugin gateway` with `agent.runtime:
   hermes` (the real `AIAgent`), its Hermes home written as tests/hermes/support.py `hermes_config` does, plus
   `approvals: {mode: manual, timeout: 600}` and `api_server.approvals.chat: hold` (this check is §14.2's held
   approval; since issue 22 a chat turn asks in the chat instead by default: bench/owui_turn_taking_check.py).
   The prompt `[danger] <dir>` makes the agent call `terminal` `rm -rf <dir>`, which Hermes' guard holds for
   approval.
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
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .owui_common import ROOT, Browser, Gateway, start_gateway_helper, start_owui, stop, victim, wait_until


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
        helper, info = start_gateway_helper(args.hermes_python, workdir, "reference", "hold")
        gateway = Gateway(info)
        result["gateway"] = {"url": gateway.url, "started_s": round(time.monotonic() - t0, 1), "log": info["log"]}
        result["gateway"]["models"] = [m["id"] for m in gateway.request("GET", "/v1/models")[1]["data"]]
        owui, url, took = start_owui(args.open_webui, gateway.url, gateway.key, workdir)
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hermes-python", default=str(ROOT / ".venv-hermes/bin/python"))
    parser.add_argument("--open-webui", default=str(Path(sys.executable).parent / "open-webui"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", default=str(ROOT / "bench/owui"))
    parser.add_argument("--slow", type=int, default=6, help="seconds of a third, approved command (0: skip it)")
    return check(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
