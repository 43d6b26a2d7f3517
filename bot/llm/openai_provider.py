"""OpenAI Chat Completions adapter (the only module that imports `openai`)."""

from __future__ import annotations

import json
from typing import Any

import openai

from bot.llm.configs import LLMConfig
from bot.llm.errors import map_sdk_error
from bot.llm.types import (
    Completion,
    LLMError,
    Message,
    NamedTool,
    RequestOptions,
    StopReason,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Unavailable,
    Usage,
    requested_tools,
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


def translate_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "user":
            out.append({"role": "user", "content": message.content or ""})
        elif message.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
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


def translate_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
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


def map_error(exc: Exception) -> LLMError:
    return map_sdk_error(openai, "OpenAI", exc)


class OpenAIProvider:
    def __init__(self, config: LLMConfig, api_key: str, base_url: str | None = None,
                 timeout: float = 30.0, max_retries: int = 2) -> None:
        self.config = config
        self.name = config.id
        self.model = config.model
        kwargs: dict[str, Any] = {"api_key": api_key, "timeout": timeout,
                                  "max_retries": max_retries}
        if base_url:
            kwargs["base_url"] = base_url
        self.client = openai.AsyncOpenAI(**kwargs)

    def build_request(self, system: str, messages: list[Message], tools: list[ToolSpec],
                      tool_choice: ToolChoice = "auto",
                      options: RequestOptions | None = None) -> dict[str, Any]:
        """The request body (without config params), for the SDK and for inspection."""
        body: dict[str, Any] = {"model": self.model,
                                "messages": translate_messages(system, messages)}
        tools, choice = requested_tools(tools, tool_choice, options,
                                        self.config.default_tool_name)
        if tools:
            body["tools"] = translate_tools(tools)
            body["tool_choice"] = translate_tool_choice(choice)
        if options is not None and options.response_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": options.response_name,
                                "schema": options.response_schema, "strict": False},
            }
        if options is not None and options.max_tokens is not None:
            body["max_completion_tokens"] = options.max_tokens
        return body

    async def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                       tool_choice: ToolChoice = "auto",
                       options: RequestOptions | None = None) -> Completion:
        body = self.build_request(system, messages, tools, tool_choice, options)
        # Config params (temperature, reasoning_effort, ...) apply unless this request set them.
        extra = {k: v for k, v in self.config.params.items() if k not in body}
        if "max_tokens" in extra:  # the config may say max_tokens; the API wants this name
            value = extra.pop("max_tokens")
            if "max_completion_tokens" not in body:
                extra.setdefault("max_completion_tokens", value)
        try:
            response = await self.client.chat.completions.create(**body, extra_body=extra or None)
        except openai.OpenAIError as exc:
            raise map_error(exc) from exc
        return self.parse_response(response, options)

    def parse_response(self, response: Any, options: RequestOptions | None) -> Completion:
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
        text = message.content or None
        refusal = getattr(message, "refusal", None)
        stop = _STOP.get(choice.finish_reason or "", "other")
        if refusal and not text:
            text, stop = refusal, "refusal"
        if stop == "end_turn" and calls:
            stop = "tool_use"  # some servers say "stop" with tool calls
        parsed: dict[str, Any] | None = None
        if options is not None and options.response_schema is not None and text:
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = None
            parsed = value if isinstance(value, dict) else None
        if parsed is None and options is not None and options.tool_schema is not None \
                and calls and calls[0].arguments is not None:
            parsed = calls[0].arguments
        usage = response.usage
        return Completion(
            text=text, tool_calls=tuple(calls), stop_reason=stop,
            usage=Usage(getattr(usage, "prompt_tokens", 0) or 0,
                        getattr(usage, "completion_tokens", 0) or 0),
            model=response.model or self.model, parsed=parsed,
        )
