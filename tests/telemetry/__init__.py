"""Tests of hermes_api_plugin/telemetry: traces and correlated logs."""
