"""What the two SDK adapters share (bot/llm/sdk_provider.py), on the wire through the real
SDKs: neutral stop reasons for refusals and empty answers, the tools' payload built once per
spec list, and an LLM layer without import circles."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.llm.anthropic_provider import AnthropicProvider
from bot.llm.configs import BUILTIN_CONFIGS
from bot.llm.openai_provider import OpenAIProvider
from bot.llm.types import Message, RequestOptions, ToolSpec
from tests.bot.fake_llm_server import (
    FakeLLMServer,
    anthropic_text,
    anthropic_tool_uses,
    openai_text,
    openai_tool_calls,
)
from tests.test_architecture import imports_of

TOOLS = [ToolSpec("search_entries", "Search the notes.",
                  {"type": "object", "properties": {"query": {"type": "string"}},
                   "required": ["query"]}),
         ToolSpec("list_entries", "List notes.", {"type": "object", "properties": {}})]
USER = [Message("user", "x")]


@pytest.fixture
def srv() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def openai(srv: FakeLLMServer) -> OpenAIProvider:
    return OpenAIProvider(BUILTIN_CONFIGS["openai"], api_key="k", base_url=srv.openai_base_url,
                          timeout=5, max_retries=0)


def anthropic(srv: FakeLLMServer) -> AnthropicProvider:
    return AnthropicProvider(BUILTIN_CONFIGS["anthropic"], api_key="k",
                             base_url=srv.anthropic_base_url, timeout=5, max_retries=0)


def _openai_refusal(text: str) -> dict[str, Any]:
    body = openai_text(None)
    body["choices"][0]["message"]["refusal"] = text
    return body


@pytest.mark.parametrize(("answer", "stop", "text", "refusal"), [
    (openai_text("hello"), "end_turn", "hello", None),
    (_openai_refusal("I can't help with that."), "refusal", None, "I can't help with that."),
    (openai_text(None, finish_reason="content_filter"), "refusal", None, None),
    (openai_text(""), "empty", None, None),
    (openai_text("   \n"), "empty", None, None),
    (openai_text("partial ans", finish_reason="length"), "max_tokens", "partial ans", None),
    (openai_text("odd", finish_reason="something_new"), "other", "odd", None),
    (openai_tool_calls([("c1", "search_entries", {"query": "x"})], finish_reason="stop"),
     "tool_use", None, None),
])
async def test_openai_stop_reasons(srv: FakeLLMServer, answer: dict[str, Any], stop: str,
                                   text: str | None, refusal: str | None) -> None:
    srv.script([answer])
    result = await openai(srv).complete("s", USER, TOOLS)
    assert (result.stop_reason, result.text, result.refusal) == (stop, text, refusal)
    assert result.raw_stop_reason == answer["choices"][0]["finish_reason"]
    assert result.no_answer == (stop in ("refusal", "empty"))


@pytest.mark.parametrize(("answer", "stop", "text", "refusal"), [
    (anthropic_text("hello"), "end_turn", "hello", None),
    (anthropic_text("hello", stop_reason="stop_sequence"), "end_turn", "hello", None),
    (anthropic_text("", stop_reason="refusal"), "refusal", None, None),
    (anthropic_text("I won't do that.", stop_reason="refusal"), "refusal", None,
     "I won't do that."),
    (anthropic_text(""), "empty", None, None),
    (anthropic_text("cut", stop_reason="max_tokens"), "max_tokens", "cut", None),
    (anthropic_text("cut", stop_reason="model_context_window_exceeded"), "max_tokens", "cut",
     None),
    (anthropic_text("", stop_reason="pause_turn"), "other", None, None),
    (anthropic_tool_uses([("t1", "search_entries", {"query": "x"})]), "tool_use", None, None),
])
async def test_anthropic_stop_reasons(srv: FakeLLMServer, answer: dict[str, Any], stop: str,
                                      text: str | None, refusal: str | None) -> None:
    srv.script([answer])
    result = await anthropic(srv).complete("s", USER, TOOLS)
    assert (result.stop_reason, result.text, result.refusal) == (stop, text, refusal)
    assert result.raw_stop_reason == answer["stop_reason"]
    assert result.no_answer == (stop in ("refusal", "empty") or (not text
                                                                 and not result.tool_calls))


@pytest.mark.parametrize("make", [openai, anthropic])
async def test_tools_payload_is_built_once_per_spec_list(srv: FakeLLMServer, make: Any) -> None:
    provider = make(srv)
    reply = openai_text("ok") if make is openai else anthropic_text("ok")
    srv.script([reply] * 6)
    for _ in range(3):
        await provider.complete("s", USER, TOOLS)
    await provider.complete("s", USER, list(TOOLS))  # a new list of the same specs: a hit
    assert provider.payloads.builds == 1
    other = [ToolSpec("list_entries", "List notes.", {"type": "object", "properties": {}})]
    await provider.complete("s", USER, other)  # equal-looking but new specs: built anew
    assert provider.payloads.builds == 2
    # An injected schema is a one-off: translated for its request, never cached.
    await provider.complete("s", USER, TOOLS,
                            options=RequestOptions(tool_schema={"type": "object"}))
    assert provider.payloads.builds == 2
    bodies = [r.body for r in srv.requests]
    assert bodies[0]["tools"] == bodies[3]["tools"]  # the same JSON on the wire each time
    assert [t.get("name") or t["function"]["name"] for t in bodies[5]["tools"]] == ["respond"]


def test_payload_cache_never_confuses_recycled_ids() -> None:
    from bot.llm.sdk_provider import ToolPayloads

    payloads = ToolPayloads(lambda tools: [{"name": t.name} for t in tools], size=2)
    for i in range(20):  # temporary specs whose ids Python may reuse
        assert payloads.get([ToolSpec(f"t{i}", "d", {})]) == [{"name": f"t{i}"}]


LLM = Path(__file__).resolve().parents[2] / "bot" / "llm"


def test_no_import_circles_in_the_llm_layer() -> None:
    root = LLM.parents[1]
    graph = {f"bot.llm.{p.stem}": {i.module for i in imports_of(p, root)
                                   if i.module.startswith("bot.llm.")}
             for p in LLM.glob("*.py") if p.stem != "__init__"}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = sorted(m for m in graph if reaches(m, m, {m}))
    assert circles == [], f"modules on an import circle: {circles}"
    providers = ("bot.llm.openai_provider", "bot.llm.anthropic_provider", "bot.llm.offline")
    assert all("bot.llm.configs" not in graph[p] for p in providers)


def test_llm_files_stay_small() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in LLM.glob("*.py")}
    assert max(sizes.values()) <= 400, sizes
