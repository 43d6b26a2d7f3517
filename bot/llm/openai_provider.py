"""OpenAI Chat Completions adapter (the only module that imports `openai`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import ModuleType
from typing import Any, ClassVar

import openai

from bot.llm.dialects import Dialect, StructuredMode
from bot.llm.sdk_provider import Reply, SDKProvider
from bot.llm.types import (
    Message,
    NamedTool,
    RequestOptions,
    StopReason,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Unavailable,
)

_STOP: dict[str, StopReason] = {
    "stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
    "length": "max_tokens", "content_filter": "refusal",
}


def error_text(result_content: str, is_error: bool) -> str:
    """Tool messages have no error flag: say it in the content."""
    content = result_content or ("error" if is_error else "(no output)")
    if is_error and not content.lstrip().upper().startswith("ERROR"):
        return "ERROR: " + content
    return content


def translate_messages(system: str, messages: list[Message],
                       empty_content: str | None = None) -> list[dict[str, Any]]:
    """`empty_content`: what an assistant message that only calls tools says (OpenAI takes
    null; llama-cpp-python's server answers null with HTTP 500, every server takes "")."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "user":
            out.append({"role": "user", "content": message.content or ""})
        elif message.role == "assistant":
            item: dict[str, Any] = {"role": "assistant",
                                    "content": message.content or empty_content}
            if message.tool_calls:
                item["tool_calls"] = [
                    {"id": call.id, "type": "function",
                     "function": {"name": call.name, "arguments": _raw_arguments(call)}}
                    for call in message.tool_calls
                ]
            out.append(item)
        else:
            out.extend({"role": "tool", "tool_call_id": result.call_id,
                        "content": error_text(result.content, result.is_error)}
                       for result in message.tool_results)
    return out


def _raw_arguments(call: ToolCall) -> str:
    # Replay what the model sent when we have it; unparsable text is replayed as is (the
    # error result that answered it explains the problem to the model).
    if call.raw_arguments:
        return call.raw_arguments
    return json.dumps(call.arguments if call.arguments is not None else {})


def translate_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    # strict off: our schemas have optional properties, which strict mode forbids.
    return [{"type": "function",
             "function": {"name": t.name, "description": t.description,
                          "parameters": t.parameters}}
            for t in tools]


def translate_tool_choice(choice: ToolChoice) -> Any:
    if isinstance(choice, NamedTool):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def parse_arguments(raw: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """Strict: the arguments must be a JSON object."""
    text = raw or ""
    if not text.strip():
        return None, "the tool arguments were empty (expected a JSON object)"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"the tool arguments are not valid JSON: {exc.msg} at position {exc.pos}"
    if not isinstance(value, dict):
        return None, f"the tool arguments must be a JSON object, got {type(value).__name__}"
    return value, None


class OpenAIProvider(SDKProvider):
    label = "OpenAI"
    sdk: ClassVar[ModuleType] = openai
    sdk_error: ClassVar[type[Exception]] = openai.OpenAIError
    stop_reasons = _STOP
    passthrough = ("tools", "messages", "response_format")
    # The config may say max_tokens; the API wants this name.
    renamed_params = {"max_tokens": "max_completion_tokens"}

    def make_client(self, kwargs: dict[str, Any]) -> Any:
        return openai.AsyncOpenAI(**kwargs)

    def translate_tools(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        return translate_tools(tools)

    def translate_tool_choice(self, choice: ToolChoice) -> Any:
        return translate_tool_choice(choice)

    def request_base(self, system: str, messages: list[Message],
                     options: RequestOptions | None, dialect: Dialect) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": translate_messages(system, messages, dialect.empty_content)}
        if options is not None and options.max_tokens is not None:
            body[dialect.token_param] = options.max_tokens
        return body

    def response_format(self, options: RequestOptions, mode: StructuredMode,
                        dialect: Dialect) -> dict[str, Any]:
        if mode == "json_object":
            fmt: dict[str, Any] = {"type": "json_object"}
            if dialect.schema_in_json_object:  # llama.cpp servers constrain the output by it
                fmt["schema"] = options.response_schema
            return {"response_format": fmt}
        return {"response_format": {
            "type": "json_schema",
            "json_schema": {"name": options.response_name,
                            "schema": options.response_schema, "strict": False}}}

    async def send(self, body: dict[str, Any], extra: dict[str, Any] | None) -> Any:
        return await self.client.chat.completions.create(**body, extra_body=extra)

    def read(self, response: Any) -> Reply:
        if not response.choices:
            raise Unavailable("OpenAI returned no choices",
                              request_id=getattr(response, "_request_id", None))
        choice = response.choices[0]
        message = choice.message
        calls: list[ToolCall] = []
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is not None:
                name, raw = function.name, function.arguments
            else:  # a custom (free-text) tool call: no JSON object to parse
                custom = getattr(call, "custom", None)
                name, raw = getattr(custom, "name", ""), getattr(custom, "input", "")
            arguments, error = parse_arguments(raw)
            calls.append(ToolCall(id=call.id, name=name, arguments=arguments,
                                  raw_arguments=raw or "", parse_error=error))
        usage = response.usage
        return Reply(texts=[message.content or ""], tool_calls=calls,
                     raw_stop=choice.finish_reason, refusal=getattr(message, "refusal", None),
                     input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                     output_tokens=getattr(usage, "completion_tokens", 0) or 0,
                     model=response.model)
