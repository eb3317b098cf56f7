"""hermes_api_plugin: an OpenAI-compatible HTTP API for an agent gateway, with live reasoning and tool progress."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
