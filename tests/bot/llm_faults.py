"""Malformed model replies, in both wire formats, for the fault suite and bench_faults.

Each fault answers every request of a turn the same broken way (a model stuck in its mistake),
so the turn has to end without the model's help. `expect` says what the user must get: the
thought in the inbox ("inbox"), or filed with what was left out named ("filed").
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.bot.fake_llm_server import (
    Reply,
    anthropic_text,
    anthropic_tool_uses,
    error,
    openai_text,
    openai_tool_calls,
    reply,
)

THOUGHT = "Renew the passport before the Lisbon trip in March"
WORD = "Lisbon"  # a word only the thought has: search must find the note by it


@dataclass(frozen=True)
class Fault:
    name: str
    make: Callable[[str, int], dict[str, Any] | Reply]  # (provider, n-th request) -> answer
    expect: str = "inbox"  # inbox | filed | rules (filed by the offline classifier)


def _call(provider: str, name: str, args: Any, *, cut: bool = False, cid: str = "c1") -> Any:
    if provider == "openai":
        return openai_tool_calls([(cid, name, args)],
                                 finish_reason="length" if cut else "tool_calls")
    value = args if not isinstance(args, str) else {"raw": args}
    return anthropic_tool_uses([(cid, name, value)],
                               stop_reason="max_tokens" if cut else "tool_use")


def _text(provider: str, text: str | None) -> Any:
    return openai_text(text) if provider == "openai" else anthropic_text(text or "")


def _refusal(provider: str, n: int) -> Any:
    if provider == "openai":
        body = openai_text(None)
        body["choices"][0]["message"]["refusal"] = "I can't help with that."
        return body
    return anthropic_text("", stop_reason="refusal")


def _null_args(provider: str, n: int) -> Any:
    if provider == "openai":
        return openai_tool_calls([("c1", "classify_and_capture", "null")])
    body = anthropic_tool_uses([("c1", "classify_and_capture", {})])
    body["content"][-1]["input"] = None
    return body


FAULTS: list[Fault] = [
    Fault("unknown tool", lambda p, n: _call(p, "delete_everything", {})),
    Fault("arguments not JSON",
          lambda p, n: _call(p, "classify_and_capture", '{"text": "Renew the pass')),
    Fault("wrong types", lambda p, n: _call(p, "classify_and_capture", {"text": 5, "hints": 7})),
    Fault("null arguments", _null_args),
    Fault("100 kB argument",
          lambda p, n: _call(p, "classify_and_capture", {"text": "x" * 100_000})),
    Fault("empty reply", lambda p, n: _text(p, None)),
    Fault("endless tool calls",
          lambda p, n: _call(p, "search_entries", {"query": f"thing {n}"}, cid=f"c{n}")),
    Fault("refusal", _refusal),
    Fault("cut off by the length limit",
          lambda p, n: _call(p, "classify_and_capture", {"text": THOUGHT}, cut=True)),
    Fault("chatted instead of filing", lambda p, n: _text(p, "Sure, noted!"), expect="rules"),
    Fault("garbage due date", lambda p, n: _call(p, "classify_and_capture", {
        "text": THOUGHT, "hints": {"category": "admin", "confidence": 0.9, "name": "Passport",
                                   "due_date": "march-ish", "status": "whenever"}}),
          expect="filed"),
    Fault("server errors", lambda p, n: error(500)),
    Fault("timeout", lambda p, n: reply(_text(p, "too late"), delay=3.0)),
]


def script_for(fault: Fault, provider: str, requests: int = 40) -> list[Any]:
    counter = itertools.count()
    return [lambda body, f=fault: f.make(provider, next(counter)) for _ in range(requests)]


def settings_env(provider: str, base_url: str) -> dict[str, str]:
    """The environment of a Brain that talks to the fake server through the real SDK."""
    if provider == "openai":
        return {"BRAIN_LLM": "openai", "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": base_url,
                "BRAIN_LLM_TIMEOUT": "1", "BRAIN_LLM_MAX_RETRIES": "0"}
    return {"BRAIN_LLM": "anthropic", "ANTHROPIC_API_KEY": "sk-ant-test",
            "ANTHROPIC_BASE_URL": base_url, "BRAIN_LLM_TIMEOUT": "1",
            "BRAIN_LLM_MAX_RETRIES": "0"}
