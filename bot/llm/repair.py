"""What small models write instead of a tool call, read back into one, and never shown.

Models behind local servers often write the call into the text: Hermes/Qwen
`<tool_call>{"name": ..., "arguments": ...}</tool_call>`, `functions.NAME: {...}` (the
chatml-function-calling prompt's own form), or a bare JSON object with a tool's name and
arguments. A call that names a tool the request offered, with arguments that fit its schema,
becomes a real `ToolCall`; anything else of that kind is dropped, like fake tool results
(`<tool_response>...`) and chat-template control tags: no tool syntax ever reaches a user.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from jsonschema import Draft202012Validator

from bot.llm.types import ToolCall, ToolSpec

# Blocks whose whole content is machine talk: removed with what they hold.
_BLOCKS = re.compile(
    r"<(tool_response|tool_result|tool_results|function_results|function_response|"
    r"observation)>.*?(?:</\1>|\Z)", re.S | re.I)
# Tags and control tokens: removed, their content (if any) read separately.
_TAGS = re.compile(
    r"</?(?:tool_call|tool_calls|function_call|function_calls|functions?|tools?|"
    r"invoke|parameters?|arguments?)(?:\s[^>]*)?>|<\|[^|>]{0,40}\|>|</?s>|\[/?TOOL_CALLS\]|"
    r"\[/?TOOL_RESULTS\]|\[/?INST\]|<function=[^>]*>", re.I)
_FUNCTIONS = re.compile(r"\bfunctions\.([A-Za-z_][\w-]{0,63})\s*[:(]?\s*", re.I)
_FENCE = re.compile(r"```[a-zA-Z]*\s*|```")
# Our own receipt mark (bot.turn.messages) copied by a model is not its words either.
_MARKS = re.compile(r"\[(?:receipt|app receipt)[^\]]{0,120}\]\s*", re.I)

_NAME_KEYS = ("name", "tool", "tool_name", "function", "recipient_name")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "tool_input")
# Keys of the JSON objects a model fakes as a tool's result or call.
_MACHINE_KEYS = frozenset({"ok", "error", "results", "arguments", "parameters", "tool",
                           "tool_call_id", "function", "path", "items", "entries"})

_validators: dict[int, tuple[ToolSpec, Draft202012Validator]] = {}
_decoder = json.JSONDecoder()


def _validator(spec: ToolSpec) -> Draft202012Validator:
    hit = _validators.get(id(spec))
    if hit is None or hit[0] is not spec:
        hit = (spec, Draft202012Validator(spec.parameters))
        _validators[id(spec)] = hit
    return hit[1]


def _objects(text: str) -> list[tuple[int, int, Any]]:
    """Every top-level JSON value that starts with '{' in the text: (start, end, value)."""
    found: list[tuple[int, int, Any]] = []
    i = text.find("{")
    while i != -1:
        try:
            value, end = _decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        found.append((i, end, value))
        i = text.find("{", end)
    return found


def _as_call(value: Any, forced_name: str | None) -> tuple[str, Any] | None:
    """(name, arguments) when a JSON value reads as a tool call."""
    if not isinstance(value, dict):
        return None
    if forced_name is not None:  # `functions.NAME: {...}`: the object is the arguments
        return forced_name, value
    inner = value.get("function")
    if isinstance(inner, dict):
        return _as_call(inner, None)
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    if name is None:
        return None
    args: Any = next((value[k] for k in _ARG_KEYS if k in value), {})
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return None
    return name, args


def _valid(name: str, args: Any, tools: dict[str, ToolSpec]) -> bool:
    spec = tools.get(name)
    return spec is not None and isinstance(args, dict) and _validator(spec).is_valid(args)


def read_calls(text: str | None, tools: Sequence[ToolSpec]) -> tuple[str | None,
                                                                     list[ToolCall]]:
    """The text without any tool syntax, and the calls it held that name an offered tool
    with valid arguments. Text with nothing of the kind comes back unchanged."""
    if not text:
        return text, []
    offered = {t.name: t for t in tools}
    calls: list[ToolCall] = []
    spans: list[tuple[int, int]] = []
    named = {m.end(): m for m in _FUNCTIONS.finditer(text)}
    for start, end, value in _objects(text):
        lead = next((m for at, m in named.items() if at == start), None)
        call = _as_call(value, lead.group(1) if lead else None)
        if call is not None:
            name, args = call
            if _valid(name, args, offered):
                raw = json.dumps(args, ensure_ascii=False)
                calls.append(ToolCall(id=f"text_call_{uuid.uuid4().hex[:12]}", name=name,
                                      arguments=args, raw_arguments=raw))
            spans.append((lead.start() if lead else start, end))
        elif isinstance(value, dict) and _MACHINE_KEYS & set(value):
            spans.append((start, end))  # a faked tool result or call: never shown
    for start, end in reversed(spans):
        text = text[:start] + text[end:]
    return clean(text), calls


def clean(text: str | None) -> str | None:
    """Text without tool syntax, fake results, control tags or copied receipt marks; None
    when nothing a person would read is left."""
    if text is None:
        return None
    out = _BLOCKS.sub("", text)
    out = _TAGS.sub("", out)
    out = _FUNCTIONS.sub("", out)
    out = _MARKS.sub("", out)
    out = _FENCE.sub("", out)
    out = re.sub(r"[ \t]+\n", "\n", out)
    out = re.sub(r"\n{3,}", "\n\n", out).strip()
    return out if re.search(r"\w", out) else None
