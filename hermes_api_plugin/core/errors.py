"""ApiError: every client-visible failure, raised anywhere and rendered once by the middleware.

The envelope is `{"error":{"message","type","param","code"}}` (WIRE.md §1.7).
"""

from __future__ import annotations

from typing import Any

# WIRE.md §1.7: the `type` of every envelope is one of these.
ERROR_TYPES = (
    "invalid_request_error",
    "gateway_auth_error",
    "not_found_error",
    "conflict_error",
    "rate_limit_error",
    "server_error",
)


class ApiError(Exception):
    """An error with its HTTP status and envelope fields."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str,
        code: str | None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.headers = dict(headers or {})

    def envelope(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def invalid_request(code: str, message: str, param: str | None = None, status: int = 400) -> ApiError:
    return ApiError(status, message, type="invalid_request_error", code=code, param=param)


def invalid_parameter(message: str, param: str | None) -> ApiError:
    return invalid_request("invalid_parameter", message, param)


def missing_parameter(param: str) -> ApiError:
    return invalid_request("missing_required_parameter", f"Missing required parameter: '{param}'", param)


def auth_failed() -> ApiError:
    return ApiError(401, "Invalid API key (API_SERVER_KEY)", type="gateway_auth_error", code="gateway_auth_failed")


def origin_not_allowed() -> ApiError:
    return ApiError(403, "Origin not allowed", type="gateway_auth_error", code="origin_not_allowed")


def not_found(message: str = "Not found", code: str = "not_found", param: str | None = None) -> ApiError:
    return ApiError(404, message, type="not_found_error", code=code, param=param)


def method_not_allowed(allowed: set[str]) -> ApiError:
    allow = ", ".join(sorted(allowed))
    return ApiError(
        405,
        f"Method not allowed; this path accepts {allow}",
        type="invalid_request_error",
        code="method_not_allowed",
        headers={"Allow": allow},
    )


def invalid_content_length(reason: str) -> ApiError:
    return invalid_request(
        "invalid_content_length", f"Content-Length must be one decimal number of bytes ({reason})", "Content-Length"
    )


def malformed_request(reason: str) -> ApiError:
    """A request the HTTP parser refused: not HTTP/1.1 as RFC 9112 spells it."""
    return invalid_request("malformed_request", f"Malformed HTTP request: {reason}")


def body_too_large(limit: int) -> ApiError:
    return invalid_request("body_too_large", f"Request body exceeds {limit} bytes", status=413)


def rate_limited(limit: int) -> ApiError:
    return ApiError(
        429,
        f"Too many concurrent runs (max {limit})",
        type="rate_limit_error",
        code="rate_limit_exceeded",
        headers={"Retry-After": "1"},
    )


def draining() -> ApiError:
    return ApiError(
        503,
        "The gateway is shutting down; retry shortly",
        type="server_error",
        code="gateway_draining",
        headers={"Retry-After": "1"},
    )


def storage_unavailable() -> ApiError:
    """The store failed (WIRE.md §5.4): nothing was executed; retry when the database answers again."""
    return ApiError(
        503, "storage_unavailable", type="server_error", code="storage_unavailable", headers={"Retry-After": "1"}
    )


def client_gone() -> ApiError:
    """The response head could not be written: the client closed the connection first (nginx's 499)."""
    return ApiError(
        499,
        "The client closed the connection before the response head was written",
        type="invalid_request_error",
        code="client_closed_request",
    )


def internal_error() -> ApiError:
    return ApiError(500, "Internal server error", type="server_error", code="internal_error")


def not_supported_by_host() -> ApiError:
    return ApiError(501, "Only Hermes Agent has this data", type="server_error", code="not_supported_by_host")
