"""A scripted LLM provider for loop tests: queued answers, every request recorded."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.llm.types import (
    Completion,
    Message,
    RequestOptions,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
)


@dataclass
class Request:
    system: str
    messages: list[Message]
    tools: list[ToolSpec]
    tool_choice: ToolChoice
    options: RequestOptions | None


Answer = Completion | Callable[[Request], Completion]


@dataclass
class ScriptedProvider:
    answers: list[Answer] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    name: str = "scripted"
    model: str = "scripted-1"

    async def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                       tool_choice: ToolChoice = "auto",
                       options: RequestOptions | None = None) -> Completion:
        req = Request(system, list(messages), list(tools), tool_choice, options)
        self.requests.append(req)
        if not self.answers:
            return text("(script exhausted)")
        answer = self.answers.pop(0)
        return answer(req) if callable(answer) else answer


def call(name: str, args: dict[str, Any] | str, call_id: str = "c1") -> ToolCall:
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except json.JSONDecodeError as exc:
            return ToolCall(call_id, name, None, args, f"invalid JSON: {exc}")
        if not isinstance(parsed, dict):
            return ToolCall(call_id, name, None, args, "arguments are not a JSON object")
        return ToolCall(call_id, name, parsed, args)
    return ToolCall(call_id, name, args, json.dumps(args))


def tools(*calls: ToolCall, stop: str = "tool_use") -> Completion:
    return Completion(text=None, tool_calls=calls, stop_reason=stop,  # type: ignore[arg-type]
                      usage=Usage(100, 10))


def text(t: str) -> Completion:
    return Completion(text=t, usage=Usage(50, 5))
