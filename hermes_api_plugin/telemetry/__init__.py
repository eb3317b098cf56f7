"""Traces and correlated logs: the OpenTelemetry tracing of requests, turns and tools (loaded only when tracing is on)
and the context every log line of a request or turn carries."""
