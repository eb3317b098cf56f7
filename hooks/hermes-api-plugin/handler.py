"""`gateway:startup` hook of hermes-api-plugin (installed into $HERMES_HOME/hooks/ by `hermes-api install-hook`).

Hermes runs `handle()` on its gateway event loop after the platform adapters connected. The work is done by
`hermes_api_plugin.hermes.bridge.on_gateway_startup`:

- the plugin entry point is enabled (`plugins: {enabled: [hermes-api-plugin]}`) → it already serves the
  `api_server` platform; the hook only logs that;
- not enabled → the hook boots the plugin's API server in this process, unless Hermes' built-in api_server
  holds the port (then it logs which setting to change and starts nothing).
"""

from __future__ import annotations

from typing import Any


async def handle(event_type: str, context: dict[str, Any]) -> str | None:
    if event_type != "gateway:startup":
        return None
    try:
        from hermes_api_plugin.hermes.bridge import on_gateway_startup
    except ImportError as exc:
        print(
            f"[API Server] hermes-api-plugin hook: the package is not installed in this Python ({exc}); "
            "pip install 'hermes-api-plugin[hermes]'",
            flush=True,
        )
        return None
    return await on_gateway_startup(context)
