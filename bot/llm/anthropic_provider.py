"""Anthropic Messages adapter (the only module that imports `anthropic`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import ModuleType
from typing import Any, ClassVar

import anthropic

from bot.llm.dialects import Dialect, StructuredMode
from bot.llm.sdk_provider import Reply, SDKProvider
from bot.llm.types import (
    Message,
    NamedTool,
    RequestOptions,
    StopReason,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolSpec,
)

DEFAULT_MAX_TOKENS = 2048
MISSING_RESULT = "ERROR: the tool did not complete; no result was recorded."
_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn", "stop_sequence": "end_turn", "tool_use": "tool_use",
    "max_tokens": "max_tokens", "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}


def _result_block(result: ToolResult) -> dict[str, Any]:
    # Anthropic rejects empty content on error results, and empty text anywhere.
    content = result.content or ("error" if result.is_error else "(no output)")
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id,
                             "content": content}
    if result.is_error:
        block["is_error"] = True
    return block


def translate_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Our messages as Messages-API turns: tool results first in the next user turn, one per
    tool_use of the assistant turn before, consecutive same-role turns merged."""
    out: list[dict[str, Any]] = []
    pending: list[ToolCall] = []  # the tool_use blocks of the last assistant turn
    for message in messages:
        blocks: list[dict[str, Any]]
        if message.role == "assistant":
            blocks = []
            if message.content and message.content.strip():
                blocks.append({"type": "text", "text": message.content})
            # Unparsable arguments were answered with an error result; input {} keeps the
            # tool_use/tool_result pairing valid.
            blocks.extend({"type": "tool_use", "id": call.id, "name": call.name,
                           "input": call.arguments if call.arguments is not None else {}}
                          for call in message.tool_calls)
            pending = list(message.tool_calls)
            role = "assistant"
        elif message.role == "tool":
            by_id = {r.call_id: r for r in message.tool_results}
            if pending:
                # Every tool_use needs a result; results for other ids would be rejected.
                blocks = [_result_block(by_id[c.id]) if c.id in by_id
                          else _result_block(ToolResult(c.id, c.name, MISSING_RESULT, True))
                          for c in pending]
            else:
                blocks = [_result_block(r) for r in message.tool_results]
            pending = []
            role = "user"
        else:
            blocks = [{"type": "text", "text": message.content}] \
                if message.content and message.content.strip() else []
            role = "user"
        if not blocks:
            continue  # an empty turn is invalid on the wire
        if out and out[-1]["role"] == role:
            previous = out[-1]["content"]
            results = [b for b in previous + blocks if b["type"] == "tool_result"]
            others = [b for b in previous + blocks if b["type"] != "tool_result"]
            out[-1]["content"] = results + others  # tool results must come first
        else:
            out.append({"role": role, "content": blocks})
    # A lone user text is sent as a plain string, the simplest valid form.
    for turn in out:
        content = turn["content"]
        if turn["role"] == "user" and len(content) == 1 and content[0]["type"] == "text":
            turn["content"] = content[0]["text"]
    return out


def translate_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools]


def translate_tool_choice(choice: ToolChoice) -> dict[str, Any]:
    if isinstance(choice, NamedTool):
        return {"type": "tool", "name": choice.name}
    return {"type": {"auto": "auto", "required": "any", "none": "none"}[choice]}


class AnthropicProvider(SDKProvider):
    label = "Anthropic"
    sdk: ClassVar[ModuleType] = anthropic
    sdk_error: ClassVar[type[Exception]] = anthropic.AnthropicError
    stop_reasons = _STOP
    passthrough = ("tools", "messages", "output_config")

    def make_client(self, kwargs: dict[str, Any]) -> Any:
        # An explicit api_key: a profile on disk is never picked up.
        return anthropic.AsyncAnthropic(**kwargs)

    def translate_tools(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        return translate_tools(tools)

    def translate_tool_choice(self, choice: ToolChoice) -> Any:
        return translate_tool_choice(choice)

    def request_base(self, system: str, messages: list[Message],
                     options: RequestOptions | None, dialect: Dialect) -> dict[str, Any]:
        max_tokens = self.config.params.get("max_tokens", DEFAULT_MAX_TOKENS)
        if options is not None and options.max_tokens is not None:
            max_tokens = options.max_tokens
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens,
                                "messages": translate_messages(messages)}
        if system:
            body["system"] = system
        return body

    def response_format(self, options: RequestOptions, mode: StructuredMode,
                        dialect: Dialect) -> dict[str, Any]:
        return {"output_config": {"format": {"type": "json_schema",
                                             "schema": options.response_schema}}}

    async def send(self, body: dict[str, Any], extra: dict[str, Any] | None) -> Any:
        return await self.client.messages.create(**body, extra_body=extra)

    def read(self, response: Any) -> Reply:
        reply = Reply(raw_stop=response.stop_reason, model=response.model)
        for block in response.content:
            if block.type == "text" and block.text:
                reply.texts.append(block.text)
            elif block.type == "tool_use":
                value = block.input
                if isinstance(value, dict):
                    reply.tool_calls.append(ToolCall(id=block.id, name=block.name,
                                                     arguments=value,
                                                     raw_arguments=json.dumps(value)))
                else:
                    reply.tool_calls.append(ToolCall(
                        id=block.id, name=block.name, arguments=None,
                        raw_arguments=json.dumps(value),
                        parse_error="the tool input must be a JSON object, "
                                    f"got {type(value).__name__}"))
        usage = response.usage
        reply.input_tokens = getattr(usage, "input_tokens", 0) or 0
        reply.output_tokens = getattr(usage, "output_tokens", 0) or 0
        return reply
