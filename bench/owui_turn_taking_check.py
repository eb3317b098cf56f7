"""How a dangerous-command approval asked in the chat (WIRE.md §15.2, issue 22's turn-taking) looks in the real Open
WebUI, in a real headless browser, on the real `hermes gateway run`.

Not a benchmark and not a test (nothing under tests/, so pytest never collects it): a manual check that records what
a user sees. It needs what bench/owui_approval_check.py needs: `.venv-hermes` (`./test --hermes -k nothing` builds
it), a venv with Open WebUI 0.12.4 and Playwright (`python3.11 -m venv .venv-owui && .venv-owui/bin/pip install
torch==2.13.0 && .venv-owui/bin/pip install open-webui==0.12.4 playwright`), and Debian's Chromium (`apt-get install
-y chromium`; never `playwright install`). Run from the repository root:

    .venv-owui/bin/python -m bench.owui_turn_taking_check [--hermes-python .venv-hermes/bin/python] [--out bench/owui]

What it does, all on 127.0.0.1 and offline:

1. bench/owui_common.py's gateway helper, in a subprocess run by the Hermes venv: the scripted model provider
   (tests/hermes/provider.py) and Hermes' own gateway, `hermes gateway run -v`, with this plugin enabled as its API
   server; `approvals: {mode: manual, timeout: 600}`, `api_server.approvals.chat: ask` (the default). The prompt
   `[danger] <dir>` makes the real `AIAgent` call `terminal` `rm -rf <dir>`, which Hermes' guard holds for approval.
2. `open-webui serve` (WEBUI_AUTH=False, offline, no background generation tasks) whose one OpenAI connection is a
   recording proxy in front of the gateway: every chat request Open WebUI sends is kept as sent, with the gateway's
   `X-Hermes-Run-Id` and the SSE it streamed back.
3. Chromium driven by Playwright, one new chat per answer: send `[danger] /tmp/owui-victim-<hex>` (a directory
   holding a file); the delivery ends with the approval question as the assistant's answer (screenshot), the run
   `requires_action` and the directory still there; type the answer in the same chat — `/approve`, `/deny`, and
   Hermes' plain word `yes` — and the same run resumes in the new completion (screenshot of the answer, then of the
   opened status history). `/approve` and `yes` must remove the directory (only after the answer), `/deny` must
   leave it.

Writes `<out>/ask-<n>-<answer>-{1-question,2-answer,3-history}.png` and `<out>/turn-taking-result.json` (per chat:
the request bodies Open WebUI sent, the SSE event names and text it received, the status lines shown and the
statuses its socket pushed, the run's status and events, the directory checks). Exit code 0 when every check held.
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

from .owui_common import (
    ROOT,
    Browser,
    Gateway,
    RecordingProxy,
    sse_records,
    start_gateway_helper,
    start_owui,
    stop,
    victim,
    wait_until,
)

QUESTION = "needs your approval"  # dialects/prompts.py approval_prompt
ANSWERED = "Dangerous command finished"  # tests/hermes/provider.py DANGER_DONE
# (what the user types, its name in file names, what must happen, the provider's tag): `runs` — the same run resumes
# and the command runs; `denied` — the same run resumes and the command is refused; `moves_on` — an unrelated message
# denies the waiting command and is a new turn (the provider's `[danger]` opening makes the agent try the command
# again: a new question). `danger-think`: the agent streams reasoning before its tool call, as thinking models do.
ANSWERS = (
    ("/approve", "approve", "runs", "danger"),
    ("/deny", "deny", "denied", "danger"),
    ("yes", "yes", "runs", "danger"),
    ("What is in that folder?", "other", "moves_on", "danger"),
    ("/approve", "think", "runs", "danger-think"),
)


def delivery(proxy: RecordingProxy, after: int, timeout: float = 90) -> dict[str, Any]:
    """The first chat request after the `after`-th one, once its response has ended."""
    ended = wait_until(lambda: len(proxy.chats()) > after and "ended" in proxy.chats()[after], timeout)
    if not ended:
        raise RuntimeError(f"no completed chat request #{after + 1} through the proxy")
    return proxy.chats()[after]


def summary(exchange: dict[str, Any]) -> dict[str, Any]:
    """What one completion carried: its request's messages, run id, event names, streamed text, finish, `hermes`."""
    records = sse_records(exchange.get("response", ""))
    text, finish, hermes = "", None, None
    names: list[str] = []
    statuses: list[str] = []
    for name, data in records:
        if name:
            names.append(name)
        if not isinstance(data, dict):
            continue
        event = data.get("event")
        if isinstance(event, dict) and event.get("type") == "status":
            statuses.append(str((event.get("data") or {}).get("description")))
        for choice in data.get("choices") or []:
            text += (choice.get("delta") or {}).get("content") or ""
            finish = choice.get("finish_reason") or finish
        hermes = data.get("hermes", hermes)
    request = exchange["request"]
    return {
        # Open WebUI's built-in tools are the same long list each time (the whole body: `open_webui_request`)
        "request": {k: v for k, v in request.items() if k not in ("messages", "tools")},
        "tools": [t.get("function", {}).get("name") for t in request.get("tools") or []],
        "messages": request.get("messages"),
        "status": exchange["status"],
        "run_id": exchange["headers"].get("X-Hermes-Run-Id"),
        "headers": exchange["headers"],
        "sse_events": names,
        "sse_statuses": statuses,
        "content": text,
        "finish_reason": finish,
        "hermes": hermes,
        "seconds": round(exchange["ended"] - exchange["t"], 2),
    }


def text_shown(browser: Browser, text: str, timeout: float, before: int = 0) -> bool:
    """Whether more than `before` elements of the page show `text` within `timeout` seconds."""
    return bool(wait_until(lambda: browser.page.get_by_text(text).count() > before, timeout))


def last_response(browser: Browser) -> str:
    try:
        return browser.page.locator("#response-content-container").last.inner_text(timeout=2000)[:1500]
    except Exception:
        return ""


def conversation(
    browser: Browser,
    gateway: Gateway,
    proxy: RecordingProxy,
    chat: tuple[str, str, str, str],
    out: Path,
    index: int,
) -> dict[str, Any]:
    """One new chat: `[<tag>] <dir>`, the approval question, then `answer` typed in the same chat."""
    answer, name, kind, tag = chat
    target = victim()
    prompt = f"[{tag}] {target}"
    command = f"rm -rf {target}"
    step: dict[str, Any] = {"answer": answer, "expect": kind, "prompt": prompt, "victim": str(target)}
    before = len(proxy.chats())
    socket_from = len(browser.socket_events)

    browser.open_new_chat()
    browser.send(prompt)
    sent = time.monotonic()
    ask = summary(delivery(proxy, before))
    step["ask"] = ask
    run_id = ask["run_id"]
    question_shown = text_shown(browser, QUESTION, 20)
    browser.page.wait_for_timeout(800)  # let the status line and markdown settle
    run = gateway.run(run_id) if run_id else {}
    step["asked"] = {
        "after_s": round(time.monotonic() - sent, 2),
        "question_shown": question_shown,
        "answer_text": last_response(browser),
        "status_lines": browser.statuses(),
        "shimmer": browser.shimmering(),
        "run_status": run.get("status"),
        "required_action": run.get("required_action"),
        "victim_exists": target.exists(),
    }
    browser.shot(out / f"ask-{index}-{name}-1-question.png")

    asked_socket = len(browser.socket_events)
    awaited = QUESTION if kind == "moves_on" else ANSWERED  # what the reply to `answer` must show
    shown_before = browser.page.get_by_text(awaited).count()
    browser.send(answer)
    answered_at = time.monotonic()
    reply = summary(delivery(proxy, before + 1))
    step["reply"] = reply
    answer_shown = text_shown(browser, awaited, 20, shown_before)
    finished = wait_until(
        lambda: gateway.run(run_id).get("status") in ("completed", "failed", "cancelled", "incomplete"), 30
    )
    browser.page.wait_for_timeout(1000)
    step["answered"] = {
        "after_s": round(time.monotonic() - answered_at, 2),
        "answer_shown": answer_shown,
        "answer_text": last_response(browser),
        "status_lines": browser.statuses(),
        "shimmer": browser.shimmering(),
        "run_status": gateway.run(run_id).get("status") if finished else None,
        "victim_exists": target.exists(),
    }
    browser.shot(out / f"ask-{index}-{name}-2-answer.png")

    try:  # open the answer's status history (a click on its status line toggles it)
        browser.page.get_by_role("button", name="Toggle status history").last.click()
        browser.page.wait_for_timeout(500)
        step["history_open"] = browser.statuses()
        browser.shot(out / f"ask-{index}-{name}-3-history.png")
    except Exception as e:  # recorded, not fatal
        step["history_open"] = {"error": str(e)[:300]}

    step["run_events"] = [
        {k: v for k, v in e.items() if k in ("event", "command", "choices", "choice", "tool", "preview", "error")}
        for e in (gateway.events(run_id) if run_id else [])
        if e.get("event") not in ("reasoning.delta", "message.delta")
    ]
    step["socket_status_events"] = {
        "ask": _statuses(browser.socket_events[socket_from:asked_socket]),
        "reply": _statuses(browser.socket_events[asked_socket:]),
    }

    # what Open WebUI resent of the question: the history the gateway recognises the conversation by
    sent_back = [m for m in (reply["messages"] or []) if m.get("role") == "assistant"]
    resent = sent_back[-1].get("content") if sent_back else None
    step["question_as_resent"] = sent_back[-1] if sent_back else None  # the whole message, any extra keys too
    ran = f"Ran terminal: {command}"
    runs = kind == "runs"
    step["checks"] = {
        "ask_finish_reason_stop": ask["finish_reason"] == "stop",
        "ask_has_approval_request_record": "hermes.approval.request" in ask["sse_events"],
        "ask_waiting_status_streamed": f"Waiting for approval: {command}" in ask["sse_statuses"],
        "ask_suspended_approval": (ask["hermes"] or {}).get("suspended") == "approval",
        "question_is_the_answer_shown": question_shown and QUESTION in step["asked"]["answer_text"],
        "run_requires_action_while_asking": step["asked"]["run_status"] == "requires_action",
        "victim_present_while_asking": step["asked"]["victim_exists"],
        "question_resent_as_streamed": isinstance(resent, str) and resent.strip() == ask["content"].strip(),
        "answer_rendered": answer_shown,
        "run_completed": step["answered"]["run_status"] == "completed",
        "victim_after": "gone" if not target.exists() else "present",
        "victim_as_expected": (not target.exists()) if runs else target.exists(),
    }
    checks = step["checks"]
    if kind == "moves_on":  # the waiting command denied in its own run; the message a new run, asking again
        checks["a_new_run_answers_the_message"] = bool(reply["run_id"]) and reply["run_id"] != run_id
        checks["waiting_command_denied"] = any(
            e.get("event") == "approval.responded" and e.get("choice") == "deny" for e in step["run_events"]
        )
        checks["new_run_asks_again"] = (reply["hermes"] or {}).get("suspended") == "approval"
        gateway.request("POST", f"/v1/runs/{reply['run_id']}/stop")  # nobody will answer it
    else:
        decided = "Approved" if runs else "Denied"
        checks["answer_resumes_the_same_run"] = bool(run_id) and reply["run_id"] == run_id
        checks[f"{decided.lower()}_status_streamed"] = f"{decided}: {command}" in reply["sse_statuses"]
    if runs:
        checks["ran_terminal_status_streamed"] = ran in reply["sse_statuses"]
        checks["ran_terminal_status_shown"] = any(ran in s for s in step["answered"]["status_lines"])
    shutil.rmtree(target, ignore_errors=True)  # a directory that (rightly) survived
    return step


def _statuses(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The status events Open WebUI pushed to the page: description and done."""
    return [
        {"description": (e.get("data") or {}).get("description"), "done": (e.get("data") or {}).get("done")}
        for e in events
        if e["type"] == "status"
    ]


def check(args: argparse.Namespace) -> int:
    from playwright.sync_api import sync_playwright

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="owui-turns-"))
    helper = owui = None
    proxy: RecordingProxy | None = None
    result: dict[str, Any] = {"workdir": str(workdir)}
    started = time.monotonic()
    try:
        helper, info = start_gateway_helper(args.hermes_python, workdir, "hermes", "ask")
        gateway = Gateway(info)
        result["gateway"] = {
            "host": "hermes gateway run",
            "url": gateway.url,
            "started_s": round(time.monotonic() - started, 1),
            "log": info["log"],
        }
        result["gateway"]["models"] = [m["id"] for m in gateway.request("GET", "/v1/models")[1]["data"]]
        proxy = RecordingProxy(gateway.url)
        owui, url, took = start_owui(args.open_webui, proxy.url, gateway.key, workdir)
        result["open_webui"] = {"url": url, "started_s": round(took, 1), "log": str(workdir / "open-webui.log")}
        with sync_playwright() as pw:
            browser = Browser(pw, url, args.chromium)
            try:
                result["browser_version"] = browser.browser.version
                chosen = [a for a in ANSWERS if a[1] in args.answers]
                result["chats"] = [
                    conversation(browser, gateway, proxy, chat, out, i) for i, chat in enumerate(chosen, 1)
                ]
                chats = proxy.chats()
                result["open_webui_request"] = chats[0]["request"] if chats else None  # one whole body, as sent
            finally:
                result["console"] = [c for c in browser.console if c["type"] in ("error", "warning")]
                result["page_errors"] = browser.page_errors
                browser.close()
    finally:
        stop(owui, "open-webui")
        if proxy is not None:
            proxy.close()
        stop(helper, "gateway helper")
        if helper is not None:
            calls = Path(info["home"]) / "provider-calls.json"
            result["provider_calls"] = json.loads(calls.read_text()) if calls.exists() else None
        result["seconds"] = round(time.monotonic() - started, 1)
        (out / "turn-taking-result.json").write_text(
            json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    chats = result.get("chats", [])
    ok = bool(chats) and all(v is True or v in ("gone", "present") for c in chats for v in c["checks"].values())
    print(json.dumps([{"answer": c["answer"], **c["checks"]} for c in chats], indent=2))
    print(f"{'every check held' if ok else 'FAILED'} in {result['seconds']} s", flush=True)
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hermes-python", default=str(ROOT / ".venv-hermes/bin/python"))
    parser.add_argument("--open-webui", default=str(Path(sys.executable).parent / "open-webui"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", default=str(ROOT / "bench/owui"))
    parser.add_argument(
        "--answers", nargs="+", default=[a[1] for a in ANSWERS], choices=[a[1] for a in ANSWERS], help="chats to run"
    )
    return check(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
