"""A model that obeys every instruction it sees, for `FakeLLMServer.answer_with`: what the tool
layer lets through when the model is fooled by text in a file, a page or a saved message.

Each line of the latest user message (inside a fence or not) of the form

    call TOOL {"json": "arguments"}            one call
    call TOOL {"text": "note {i}"} 300 times   300 calls, {i} = 1..300 in every string

becomes a tool call in one answer (OpenAI Chat Completions); a message without such a line,
or tool results, get the minimal model's answer (`smart_answer`).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from tests.bot.fake_llm_server import OPENAI_PATH, openai_tool_calls, smart_answer

ORDER = re.compile(r"\bcall (\w+) (\{.*\})(?: (\d+) times)?\s*$", re.I | re.M)
_ids = itertools.count(1)


def _filled(value: Any, i: int) -> Any:
    if isinstance(value, str):
        return value.replace("{i}", str(i))
    if isinstance(value, dict):
        return {k: _filled(v, i) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, i) for v in value]
    return value


def orders(text: str) -> list[tuple[str, str, dict[str, Any]]]:
    """The calls `text` asks for: (id, tool, arguments)."""
    calls = []
    for m in ORDER.finditer(text):
        arguments = json.loads(m.group(2))
        for i in range(1, int(m.group(3) or 1) + 1):
            calls.append((f"call_obey{next(_ids)}", m.group(1), _filled(arguments, i)))
    return calls


def answer(path: str, body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if path == OPENAI_PATH and last.get("role") == "user" and body.get("tools"):
        calls = orders(str(last.get("content") or ""))
        if calls:
            return openai_tool_calls(calls)
    return smart_answer(path, body)
