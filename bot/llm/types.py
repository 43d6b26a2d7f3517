"""Provider-neutral LLM types: what the loop speaks, whatever the provider."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant", "tool"]
# Why the model stopped, in our words (`Completion.raw_stop_reason` keeps the provider's):
#   end_turn    it answered in text (OpenAI "stop"; Anthropic "end_turn", "stop_sequence")
#   tool_use    it called tools (also when a server said "stop" but sent tool calls)
#   max_tokens  cut off by the output limit or the context window; text/arguments may be partial
#   refusal     it declined (Anthropic "refusal"; OpenAI `message.refusal` or "content_filter");
#               `text` is None and `Completion.refusal` holds its explanation, if any
#   empty       it stopped normally but said nothing: no text (blank counts) and no tool calls
#   other       anything else (e.g. Anthropic "pause_turn", unknown reasons)
StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal", "empty", "other"]
NO_ANSWER: frozenset[str] = frozenset({"refusal", "empty"})


@dataclass(frozen=True)
class LLMConfig:
    """A connection config: which provider, model, key and endpoint. Nothing about use cases.
    (Loading, selection and connecting live in `bot.llm.configs`.)"""

    id: str
    provider: str  # "openai" | "anthropic" | "offline"
    model: str
    api_key_env: str | None = None
    base_url: str | None = None  # None: the SDK default, or its *_BASE_URL env var
    params: dict[str, Any] = field(default_factory=dict)  # default request params
    default_tool_name: str = "respond"  # the tool a RequestOptions.tool_schema becomes
    timeout: float = 30.0
    max_retries: int = 2
    # What the server accepts (bot.llm.dialects): "openai", "openai-compatible", "llama-cpp",
    # "ollama", "vllm", "anthropic"; None: decided from the provider and base_url.
    dialect: str | None = None


# The system prompt's part that changes from message to message (date, vault summary, notes
# of the conversation) starts with this heading. Dialects that keep a server's prompt cache
# warm send it as a user message right before the user's message (bot.llm.dialects).
CONTEXT_HEADING = "Context now:"

# The built-in offline config (deterministic rules, no key, no network).
OFFLINE_CONFIG = LLMConfig(id="offline", provider="offline", model="rules-v1")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments (type: object)


@dataclass(frozen=True)
class NamedTool:
    name: str


# "auto": the model decides; "none": no tool; "required": some tool; NamedTool: that tool.
ToolChoice = Literal["auto", "none", "required"] | NamedTool


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] | None  # None when the raw arguments were not a JSON object
    raw_arguments: str = ""  # as the provider sent them (JSON text)
    parse_error: str | None = None  # why `arguments` is None


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    content: str  # never empty (Anthropic rejects empty error results)
    is_error: bool = False


@dataclass(frozen=True)
class Message:
    """One message of a conversation.

    user: `content`. assistant: `content` and/or `tool_calls`. tool: `tool_results`, all the
    results of one round, in the order of the calls they answer.
    """

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens)


@dataclass(frozen=True)
class RequestOptions:
    """Per-request overrides of a connection config's defaults (schema injection).

    With `tool_schema`, the call offers exactly one tool built from it (named `tool_name`, or
    the config's default tool name) and forces it unless `tool_choice` says otherwise. With
    `response_schema`, the answer is structured output (OpenAI `response_format`, Anthropic
    `output_config`) and arrives parsed in `Completion.parsed`.
    """

    tool_schema: dict[str, Any] | None = None
    tool_name: str | None = None
    tool_description: str | None = None
    tool_choice: ToolChoice | None = None
    response_schema: dict[str, Any] | None = None
    response_name: str = "response"
    max_tokens: int | None = None


DEFAULT_TOOL_DESCRIPTION = "Give your answer as the input of this tool."


def requested_tools(tools: list[ToolSpec], tool_choice: ToolChoice,
                    options: RequestOptions | None,
                    default_tool_name: str) -> tuple[list[ToolSpec], ToolChoice]:
    """The tools and tool choice a request really carries once its options apply: an
    injected tool schema replaces the tools with that one tool, forced unless the options
    choose otherwise. Every adapter sends what this returns."""
    if options is not None and options.tool_schema is not None:
        name = options.tool_name or default_tool_name
        spec = ToolSpec(name, options.tool_description or DEFAULT_TOOL_DESCRIPTION,
                        options.tool_schema)
        return [spec], options.tool_choice or NamedTool(name)
    if options is not None and options.tool_choice is not None:
        return tools, options.tool_choice
    return tools, tool_choice


@dataclass(frozen=True)
class Completion:
    text: str | None  # None when the model said nothing usable (see stop_reason)
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: StopReason = "end_turn"
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    parsed: dict[str, Any] | None = None  # structured output, when a response schema was set
    raw_stop_reason: str | None = None  # the provider's own word, for logs
    refusal: str | None = None  # the model's explanation when stop_reason is "refusal"

    @property
    def no_answer(self) -> bool:
        """A refusal or nothing at all: the caller should treat the turn as unanswered."""
        return self.stop_reason in NO_ANSWER or (not (self.text or "").strip()
                                                 and not self.tool_calls)


class LLMError(Exception):
    """The provider could not answer. `kind` says why, in our words."""

    kind = "error"

    def __init__(self, message: str, *, request_id: str | None = None,
                 server_message: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.server_message = server_message  # the server's own words, for the log


class RateLimited(LLMError):
    kind = "rate_limited"


class Overloaded(LLMError):
    kind = "overloaded"


class LLMTimeout(LLMError):
    kind = "timeout"


class AuthError(LLMError):
    kind = "auth"


class BadRequest(LLMError):
    """The server refused what we sent (4xx, or a 5xx whose body says the request is
    invalid): our bug or a dialect mismatch, not an outage."""

    kind = "bad_request"


class Unavailable(LLMError):
    """Connection refused, DNS, 5xx after retries: the service is not reachable."""

    kind = "unavailable"


class Provider(Protocol):
    name: str  # config id, e.g. "openai"
    model: str

    async def complete(
        self,
        system: str,
        messages: list[Message],
        tools: list[ToolSpec],
        tool_choice: ToolChoice = "auto",
        options: RequestOptions | None = None,
    ) -> Completion: ...
