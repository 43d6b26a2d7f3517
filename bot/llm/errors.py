"""SDK exceptions in our words. Both official SDKs share one exception hierarchy (same class
names), so one mapping serves both; each adapter passes its own SDK module in, which keeps
the SDK imports in the adapters."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from bot.llm.dialects import says_invalid
from bot.llm.types import (
    AuthError,
    BadRequest,
    LLMError,
    LLMTimeout,
    Overloaded,
    RateLimited,
    Unavailable,
)


def map_sdk_error(sdk: ModuleType, label: str, exc: Exception) -> LLMError:
    """`sdk` is the `openai` or `anthropic` module, `label` its name for messages."""
    request_id = getattr(exc, "request_id", None)
    message = getattr(exc, "message", None) or str(exc)
    if isinstance(exc, sdk.APITimeoutError):
        return LLMTimeout(f"{label} timed out: {message}", request_id=request_id)
    if isinstance(exc, sdk.APIConnectionError):
        return Unavailable(f"{label} unreachable: {message}", request_id=request_id)
    if isinstance(exc, sdk.RateLimitError):
        return RateLimited(f"{label} rate limit: {message}", request_id=request_id)
    if isinstance(exc, sdk.AuthenticationError | sdk.PermissionDeniedError):
        return AuthError(f"{label} refused the credentials: {message}", request_id=request_id)
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error")
        kind = error.get("type") if isinstance(error, dict) else None
        said = server_message(exc.body)
        if status in (503, 529) or kind == "overloaded_error":
            return Overloaded(f"{label} overloaded ({status}): {message}", request_id=request_id)
        if status >= 500 and not says_invalid(said):
            return Unavailable(f"{label} server error ({status}): {message}",
                               request_id=request_id)
        if status >= 500:  # a server that fails on what we sent: a refusal, not an outage
            return BadRequest(f"{label} server failed on the request ({status}): {said}",
                              request_id=request_id, server_message=said)
        if status == 408:
            return LLMTimeout(f"{label} timed out ({status}): {message}", request_id=request_id)
        return BadRequest(f"{label} rejected the request ({status}): {message}",
                          request_id=request_id, server_message=said or message)
    return Unavailable(f"{label} call failed: {message}", request_id=request_id)


def server_message(body: Any) -> str | None:
    """The server's own words in an error body: OpenAI's and Anthropic's `error.message`,
    FastAPI's `detail`, or a plain text body."""
    if isinstance(body, str):
        return body.strip() or None
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    for value in (error.get("message") if isinstance(error, dict) else error,
                  body.get("message"), body.get("detail")):
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, list | dict) and value:
            return str(value)
    return None
