"""SDK exceptions in our words. Both official SDKs share one exception hierarchy (same class
names), so one mapping serves both; each adapter passes its own SDK module in, which keeps
the SDK imports in the adapters."""

from __future__ import annotations

from types import ModuleType

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
        if status in (503, 529) or kind == "overloaded_error":
            return Overloaded(f"{label} overloaded ({status}): {message}", request_id=request_id)
        if status >= 500:
            return Unavailable(f"{label} server error ({status}): {message}",
                               request_id=request_id)
        if status == 408:
            return LLMTimeout(f"{label} timed out ({status}): {message}", request_id=request_id)
        return BadRequest(f"{label} rejected the request ({status}): {message}",
                          request_id=request_id)
    return Unavailable(f"{label} call failed: {message}", request_id=request_id)
