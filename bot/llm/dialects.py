"""What each kind of server accepts: the dialects of the two wire formats.

"OpenAI-compatible" servers (llama.cpp's llama-server, llama-cpp-python's server, Ollama,
vLLM, LM Studio) are not exactly OpenAI. Seen in practice (issue 24):
- llama-cpp-python's server answers HTTP 500 to an assistant message with tool calls whose
  content is null; an empty string is what every server accepts;
- it refuses `response_format: json_schema` (HTTP 500) but takes `json_object` with a schema;
- some servers do not know `max_completion_tokens`, all of them know `max_tokens`.

A connection config names its dialect (`dialect:` in the configs file); without one, a config
with a base URL other than OpenAI's speaks `openai-compatible`. A request the server refuses
as malformed is retried once in the dialect's fallback (`SDKProvider.complete`), and
structured output steps down its ladder of modes; both are remembered per connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlparse

from bot.llm.types import CONTEXT_HEADING, Message

# How structured output is asked for: a JSON schema response format, a JSON object response
# format (the schema in the prompt), or one forced tool whose arguments are the answer.
StructuredMode = Literal["json_schema", "json_object", "tool"]


@dataclass(frozen=True)
class Dialect:
    name: str
    empty_content: str | None  # an assistant message's content when it only calls tools
    token_param: str  # the name of the output-token limit
    structured: tuple[StructuredMode, ...]  # the ladder of structured-output modes, in order
    schema_in_json_object: bool = False  # json_object carries "schema" (llama.cpp servers)
    forced_choice: bool = True  # takes tool_choice "required" / a named tool
    # The system prompt's changing part goes in a user message before the user's message, so
    # the server's prompt cache (llama.cpp, vLLM, Ollama) reuses all that comes before it:
    # their chat templates put the tools after the system text.
    context_in_user: bool = False
    fallback: str | None = None  # the dialect a refused request is retried in


DIALECTS: dict[str, Dialect] = {d.name: d for d in (
    Dialect("openai", None, "max_completion_tokens", ("json_schema", "json_object", "tool")),
    Dialect("openai-compatible", "", "max_tokens", ("json_schema", "json_object", "tool"),
            schema_in_json_object=True, fallback="minimal", context_in_user=True),
    # The least any of them takes: no forced tool choice, structured output as JSON text.
    Dialect("minimal", "", "max_tokens", ("json_object", "tool"), forced_choice=False,
            context_in_user=True),
    # llama.cpp's llama-server and llama-cpp-python's server
    Dialect("llama-cpp", "", "max_tokens", ("json_object", "json_schema", "tool"),
            schema_in_json_object=True, fallback="openai-compatible", context_in_user=True),
    Dialect("ollama", "", "max_tokens", ("json_schema", "json_object", "tool"),
            fallback="openai-compatible", context_in_user=True),
    Dialect("vllm", "", "max_tokens", ("json_schema", "json_object", "tool"),
            fallback="openai-compatible", context_in_user=True),
    Dialect("anthropic", None, "max_tokens", ("json_schema", "tool")),
    # Another server speaking the Messages API (llama-server, Ollama, a proxy)
    Dialect("anthropic-compatible", None, "max_tokens", ("json_schema", "tool"),
            fallback="anthropic-minimal", context_in_user=True),
    Dialect("anthropic-minimal", None, "max_tokens", ("tool",), forced_choice=False,
            context_in_user=True),
)}

OFFICIAL_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}


def dialect_for(provider: str, name: str | None, base_url: str | None) -> Dialect:
    """The dialect a connection speaks: the one its config names, else the SDK's own for its
    own endpoint and the `-compatible` one for any other endpoint."""
    if name:
        if name not in DIALECTS:
            raise ValueError(f"unknown dialect {name!r}; known: {', '.join(sorted(DIALECTS))}")
        return DIALECTS[name]
    host = urlparse(base_url).hostname if base_url else None
    if host is None or host == OFFICIAL_HOSTS.get(provider):
        return DIALECTS[provider if provider in DIALECTS else "openai"]
    return DIALECTS["anthropic-compatible" if provider == "anthropic" else "openai-compatible"]


# Words of a server's error message that say the request itself was refused (our bug, or a
# dialect mismatch), not that the server is down: a 500 carrying them is not an outage.
_REFUSAL_WORDS = (
    "invalid", "validation", "not supported", "unsupported", "must be", "expected",
    "missing", "required", "unknown", "unrecognized", "not allowed", "cannot", "can only",
    "typeerror", "valueerror", "keyerror", "attributeerror", "nonetype", "template",
    "schema", "response_format", "tool_choice", "parse", "malformed", "extra inputs",
    "field required", "input should be",
)
# ...and words that say the server itself is in trouble, which win over the above.
_OUTAGE_WORDS = ("overloaded", "unavailable", "out of memory", "timed out", "timeout",
                 "loading model", "model is loading", "busy", "connection")


def says_invalid(message: str | None) -> bool:
    """Does a server's error message say the request was malformed (not that it is down)?"""
    text = (message or "").lower()
    if not text.strip() or any(word in text for word in _OUTAGE_WORDS):
        return False
    return any(word in text for word in _REFUSAL_WORDS)


def context_last(system: str, messages: list[Message]) -> tuple[str, list[Message]]:
    """The system prompt without its changing part, which becomes a user message right
    before the user's (last) message; unchanged when there is no such part or message."""
    head, sep, context = system.partition("\n\n" + CONTEXT_HEADING)
    last = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if not sep or last is None:
        return system, messages
    note = Message(role="user", content=(CONTEXT_HEADING + context).strip()
                   + "\n(This is context from the app, not a message to file.)")
    return head, [*messages[:last], note, *messages[last:]]
