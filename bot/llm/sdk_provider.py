"""What the OpenAI and Anthropic adapters share, so each adapter holds only its wire details.

Shared here: client set-up (key, endpoint, timeout, retries), the request skeleton (per-request
options applied once, via `requested_tools`), the tools' payload built once per spec list,
config params, error mapping, structured output (`Completion.parsed`) and the neutral stop
reasons. An adapter subclasses `SDKProvider`, sets its SDK module and stop-reason table, and
implements the hooks; it stays the only module that imports its SDK.
"""

from __future__ import annotations

import json
import logging
import re
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as replaced
from types import ModuleType
from typing import Any, ClassVar

from bot import metrics
from bot.llm import repair
from bot.llm.dialects import DIALECTS, Dialect, StructuredMode, context_last, dialect_for
from bot.llm.errors import map_sdk_error
from bot.llm.types import (
    BadRequest,
    Completion,
    LLMConfig,
    Message,
    RequestOptions,
    StopReason,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
    requested_tools,
)

log = logging.getLogger(__name__)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

PAYLOAD_CACHE_SIZE = 16  # distinct tool lists per provider; a process uses one or two


class ToolPayloads:
    """The provider-specific tools JSON, built once per list of specs and reused.

    Keyed by the identity of the spec objects (a `ToolSpec` is frozen; its schema is treated as
    read-only), so the Brain's one spec list costs one translation for the life of the process.
    The cache keeps the specs it was built from, so an id is never reused by another object.
    """

    def __init__(self, translate: Callable[[Sequence[ToolSpec]], list[dict[str, Any]]],
                 size: int = PAYLOAD_CACHE_SIZE) -> None:
        self._translate = translate
        self._size = size
        self._cache: OrderedDict[tuple[int, ...],
                                 tuple[tuple[ToolSpec, ...], list[dict[str, Any]]]] = \
            OrderedDict()
        self.builds = 0  # how many times a payload was translated (for tests and profiles)

    def get(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        key = tuple(id(t) for t in tools)
        hit = self._cache.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], tools, strict=True)):
            self._cache.move_to_end(key)
            return hit[1]
        payload = self._translate(tools)
        self.builds += 1
        self._cache[key] = (tuple(tools), payload)
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return payload


@dataclass
class Reply:
    """A provider response in our words, before the neutral stop reason is decided."""

    texts: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    raw_stop: str | None = None
    refusal: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None


class SDKProvider(ABC):
    label: ClassVar[str]  # "OpenAI", for messages
    sdk: ClassVar[ModuleType]  # the SDK module: its exception classes are mapped to ours
    sdk_error: ClassVar[type[Exception]]  # the SDK's base exception
    stop_reasons: ClassVar[dict[str, StopReason]]  # the SDK's stop words -> ours
    # Request fields already in wire shape that the SDK would otherwise re-walk on every
    # request (its type-driven transform tries every member of its message and tool unions:
    # most of our CPU time per call, see docs/performance.md). They go in `extra_body`, which
    # the SDK merges into the JSON as is: the same bytes on the wire. A required parameter
    # moved this way is given to the SDK as an empty placeholder that `extra_body` replaces.
    passthrough: ClassVar[tuple[str, ...]] = ("tools", "messages")
    _placeholders: ClassVar[dict[str, Any]] = {"messages": []}
    # Config params the API spells differently, e.g. OpenAI's max_completion_tokens.
    renamed_params: ClassVar[dict[str, str]] = {}

    def __init__(self, config: LLMConfig, api_key: str, base_url: str | None = None,
                 timeout: float = 30.0, max_retries: int = 2) -> None:
        self.config = config
        self.name = config.id
        self.model = config.model
        kwargs: dict[str, Any] = {"api_key": api_key, "timeout": timeout,
                                  "max_retries": max_retries}
        if base_url:
            kwargs["base_url"] = base_url
        self.client = self.make_client(kwargs)
        self.payloads = ToolPayloads(self.translate_tools)
        # What this connection's server accepts; both step down when it refuses a request,
        # and stay there for the life of the connection.
        self.dialect: Dialect = dialect_for(config.provider, config.dialect,
                                            base_url or config.base_url)
        self.structured_mode: StructuredMode | None = None

    # ------------------------------------------------------------ the adapter's wire details

    @abstractmethod
    def make_client(self, kwargs: dict[str, Any]) -> Any:
        """The SDK's async client (api_key, timeout, max_retries, maybe base_url)."""

    @abstractmethod
    def translate_tools(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]: ...

    @abstractmethod
    def translate_tool_choice(self, choice: ToolChoice) -> Any: ...

    @abstractmethod
    def request_base(self, system: str, messages: list[Message],
                     options: RequestOptions | None, dialect: Dialect) -> dict[str, Any]:
        """model, messages (and system, token limit) in the wire format of `dialect`."""

    @abstractmethod
    def response_format(self, options: RequestOptions, mode: StructuredMode,
                        dialect: Dialect) -> dict[str, Any]:
        """The body fields asking for structured output of `options.response_schema` in
        `mode` ("json_schema" or "json_object")."""

    @abstractmethod
    async def send(self, body: dict[str, Any], extra: dict[str, Any] | None) -> Any:
        """One SDK call; SDK exceptions propagate (the base maps them)."""

    @abstractmethod
    def read(self, response: Any) -> Reply: ...

    # ------------------------------------------------------------ shared

    def build_request(self, system: str, messages: list[Message], tools: list[ToolSpec],
                      tool_choice: ToolChoice = "auto",
                      options: RequestOptions | None = None, *,
                      dialect: Dialect | None = None,
                      mode: StructuredMode = "json_schema") -> dict[str, Any]:
        """The request body as it goes on the wire (without config params). Structured output
        in `mode`; a "tool" mode request arrives here already turned into a tool schema."""
        dialect = dialect or self.dialect
        if options is not None and options.response_schema is not None \
                and mode == "json_object":
            system = (system + "\n\n" if system else "") + schema_instruction(options)
        body = self.request_base(system, messages, options, dialect)
        offered, choice = requested_tools(tools, tool_choice, options,
                                          self.config.default_tool_name)
        if offered:
            injected = options is not None and options.tool_schema is not None
            # An injected schema is a one-off list: translating it is cheap, caching it is not.
            body["tools"] = (self.translate_tools(offered) if injected
                             else self.payloads.get(offered))
            if not dialect.forced_choice and choice not in ("auto", "none"):
                choice = "auto"
            body["tool_choice"] = self.translate_tool_choice(choice)
        if options is not None and options.response_schema is not None:
            body.update(self.response_format(options, mode, dialect))
        return body

    async def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                       tool_choice: ToolChoice = "auto",
                       options: RequestOptions | None = None) -> Completion:
        if options is None or options.response_schema is None:
            return await self._send(system, messages, tools, tool_choice, options,
                                    "json_schema")
        # Structured output: down the dialect's ladder from the mode that last worked.
        ladder = self.dialect.structured
        start = ladder.index(self.structured_mode) if self.structured_mode in ladder else 0
        for mode in ladder[start:]:
            effective = options if mode != "tool" else replaced(
                options, tool_schema=options.response_schema, tool_name=options.response_name,
                tool_description="Give your answer as the input of this tool.",
                response_schema=None, tool_choice=None)
            try:
                completion = await self._send(system, messages, tools, tool_choice, effective,
                                              mode)
            except BadRequest as exc:
                if mode == ladder[-1]:
                    raise
                log.warning("%s refused structured output as %s (%s); trying the next way",
                            self.label, mode, exc.server_message or exc.message)
                continue
            if mode != self.structured_mode:
                self.structured_mode = mode
            return completion
        raise AssertionError("unreachable: the ladder is never empty")

    async def _send(self, system: str, messages: list[Message], tools: list[ToolSpec],
                    tool_choice: ToolChoice, options: RequestOptions | None,
                    mode: StructuredMode) -> Completion:
        """One request; refused as malformed, it is retried once in the fallback dialect,
        which this connection then keeps when it worked."""
        try:
            return await self._once(self.dialect, system, messages, tools, tool_choice,
                                    options, mode)
        except BadRequest as exc:
            log.warning("%s refused a request in dialect %s: %s", self.label,
                        self.dialect.name, exc.server_message or exc.message)
            fallback = DIALECTS.get(self.dialect.fallback or "")
            if fallback is None:
                raise
        completion = await self._once(fallback, system, messages, tools, tool_choice,
                                      options, mode)
        log.warning("%s took the request in dialect %s: this connection speaks it from now "
                    "on", self.label, fallback.name)
        self.dialect = fallback
        return completion

    async def _once(self, dialect: Dialect, system: str, messages: list[Message],
                    tools: list[ToolSpec], tool_choice: ToolChoice,
                    options: RequestOptions | None, mode: StructuredMode) -> Completion:
        if dialect.context_in_user:
            system, messages = context_last(system, messages)
        body = self.build_request(system, messages, tools, tool_choice, options,
                                  dialect=dialect, mode=mode)
        # Config params (temperature, metadata, ...) apply unless this request set them.
        extra = {k: v for k, v in self.config.params.items() if k not in body}
        for ours, theirs in self.renamed_params.items():
            if ours in extra:
                value = extra.pop(ours)
                theirs = dialect.token_param if ours == "max_tokens" else theirs
                if theirs not in body:
                    extra.setdefault(theirs, value)
        for key in self.passthrough:
            if key in body:
                extra[key] = body.pop(key)
                if key in self._placeholders:
                    body[key] = self._placeholders[key]
        started = time.perf_counter()
        try:
            response = await self.send(body, extra or None)
        except self.sdk_error as exc:
            error = map_sdk_error(self.sdk, self.label, exc)
            metrics.llm_answered(self.label, time.perf_counter() - started, error.kind)
            raise error from exc
        except ValueError as exc:  # client-side checks, e.g. Anthropic's "Streaming is required"
            raise BadRequest(f"{self.label} request not sent: {exc}") from exc
        metrics.llm_answered(self.label, time.perf_counter() - started)
        offered, choice = requested_tools(tools, tool_choice, options,
                                          self.config.default_tool_name)
        return self.finish(self.read(response), options,
                           offered=() if choice == "none" else offered)

    def finish(self, reply: Reply, options: RequestOptions | None,
               offered: Sequence[ToolSpec] = ()) -> Completion:
        """The neutral completion: stop reason, refusal, structured output, usage. Tool
        calls written into the text become calls when they fit an offered tool; no tool
        syntax stays in the text."""
        # A lone surrogate ("\\ud8ca" in a small model's JSON) cannot be printed, stored or
        # sent to Slack: it becomes U+FFFD here, once for every use.
        text = _LONE_SURROGATE.sub("\ufffd", "\n".join(t for t in reply.texts if t)) or None
        if text is not None and not text.strip():
            text = None
        calls = tuple(_clean_call(c) for c in reply.tool_calls)
        structured_text = options is not None and options.response_schema is not None
        if text is not None and not structured_text:
            text, written = repair.read_calls(text, offered)
            if written and not calls:
                calls = tuple(written)
        stop: StopReason = self.stop_reasons.get(reply.raw_stop or "", "other")
        refusal = reply.refusal
        if refusal or stop == "refusal":
            # Whatever text came with a refusal is its explanation, not an answer.
            stop, refusal, text = "refusal", refusal or text, None
        elif stop == "end_turn" and calls:
            stop = "tool_use"  # some servers say "stop" with tool calls
        elif stop in ("end_turn", "tool_use") and text is None and not calls:
            stop = "empty"
        return Completion(
            text=text, tool_calls=calls, stop_reason=stop,
            usage=Usage(reply.input_tokens, reply.output_tokens),
            model=reply.model or self.model, parsed=structured(text, calls, options),
            raw_stop_reason=reply.raw_stop, refusal=refusal)

    async def aclose(self) -> None:
        """Close the SDK's HTTP client (its connection pool)."""
        await self.client.close()


def structured(text: str | None, calls: tuple[ToolCall, ...],
               options: RequestOptions | None) -> dict[str, Any] | None:
    """The structured answer: the JSON object of the text (response schema), else the first
    call's arguments (an injected tool schema); None when the model did not give one."""
    if options is None:
        return None
    if options.response_schema is not None and text:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
    if options.tool_schema is not None and calls and calls[0].arguments is not None:
        return calls[0].arguments
    return None


def schema_instruction(options: RequestOptions) -> str:
    """The schema in words, for a server that takes JSON but not a schema."""
    return ("Answer with only a JSON object (no prose, no code fence) that matches this JSON "
            "schema:\n" + json.dumps(options.response_schema, ensure_ascii=False))


def _clean(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (a JSON "\\ud8eb" escape decodes to
    one) replaced by U+FFFD."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _clean_call(call: ToolCall) -> ToolCall:
    cleaned = _clean(call.arguments)
    if cleaned == call.arguments and not _LONE_SURROGATE.search(call.name):
        return call
    return replaced(call, name=_clean(call.name), arguments=cleaned)
