"""RSS one kept `AIAgent` costs, in one process: `.venv-hermes/bin/python -m bench.agent_memory shared|shipped [KEPT]`.

Run by `bench.warm` in a process of its own for each TLS mode (`shared`: the plugin's shared provider TLS
contexts; `shipped`: hermes-agent's own, a new SSL context per client). It builds agents the way the `hermes`
runtime does (Hermes' provider resolution, the `api_server` toolsets, Hermes' SessionDB), runs one turn on each
against the scripted provider and keeps them all: after WARM_UP agents (imports, caches and arenas settled), the
VmRSS growth over KEPT more, divided by KEPT. That is what a warm agent holds (its provider client and pool, its
tool schemas, its conversation) without the gateway's other per-conversation state and without the allocator noise
of agents built and dropped, which blur the gateway-level figure (`warm.memory`). Prints one JSON object.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

WARM_UP = 3
KEPT = 20


def _rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def measure(mode: str, kept: int = KEPT) -> dict[str, Any]:
    from tests.hermes.provider import MODEL, ScriptedProvider
    from tests.hermes.support import hermes_config

    with ScriptedProvider() as provider, tempfile.TemporaryDirectory(prefix="hermes-agent-memory-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        config = hermes_config(provider, Path(tmp) / "work")
        (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        os.environ["HERMES_HOME"] = str(home)  # before hermes-agent is imported: it reads it at import

        from hermes_api_plugin.hermes import compat

        agent_class = compat.agent.agent_class()
        if mode == "shared":
            compat.tls.share_tls_contexts()
        runtime = compat.agent.runtime_agent_kwargs(None) or {}
        runtime.pop("model", None)
        session_db = compat.sessions.session_db(None)

        def build(n: int) -> Any:
            agent = agent_class(
                model=MODEL,
                quiet_mode=True,
                platform="api_server",
                session_id=f"memory-{n}",
                session_db=session_db,
                enabled_toolsets=compat.agent.platform_toolsets("api_server"),
                max_iterations=5,
                **runtime,
            )
            compat.agent.run_conversation(
                agent, user_message=f"hello {n}", conversation_history=[], task_id=f"memory-{n}"
            )
            return agent

        agents = [build(n) for n in range(WARM_UP)]
        gc.collect()
        before = _rss_kb()
        agents.extend(build(n) for n in range(WARM_UP, WARM_UP + kept))
        gc.collect()
        after = _rss_kb()
        return {
            "tls": mode,
            "kept": kept,
            "rss_before_kb": before,
            "rss_after_kb": after,
            "per_agent_kb": round((after - before) / kept, 1),
        }


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "shared"
    print(json.dumps(measure(mode, int(sys.argv[2]) if len(sys.argv) > 2 else KEPT)), flush=True)
