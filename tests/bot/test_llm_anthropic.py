"""AnthropicProvider on the wire: the real `anthropic` SDK against a local fake server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from bot.llm.anthropic_provider import AnthropicProvider
from bot.llm.configs import BUILTIN_CONFIGS
from bot.llm.types import (
    AuthError,
    BadRequest,
    LLMTimeout,
    Message,
    NamedTool,
    Overloaded,
    RateLimited,
    RequestOptions,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolSpec,
    Unavailable,
)
from tests.bot.fake_llm_server import (
    FakeLLMServer,
    anthropic_problems,
    anthropic_text,
    anthropic_tool_uses,
    error,
)

TOOLS = [
    ToolSpec("search_entries", "Search the notes of the vault.",
             {"type": "object", "properties": {"query": {"type": "string"}},
              "required": ["query"], "additionalProperties": False}),
    ToolSpec("list_entries", "List notes of a category.",
             {"type": "object", "properties": {"category": {"type": "string"}}}),
]
SCHEMA = {"type": "object", "properties": {"summary": {"type": "string"}},
          "required": ["summary"]}


@pytest.fixture
def srv() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def provider(srv: FakeLLMServer, *, timeout: float = 5.0, max_retries: int = 0,
             **params: Any) -> AnthropicProvider:
    # The fake stands in for Anthropic itself (tests/bot/test_llm_local.py: other servers).
    config = replace(BUILTIN_CONFIGS["anthropic"], dialect="anthropic",
                     params={**BUILTIN_CONFIGS["anthropic"].params, **params})
    return AnthropicProvider(config, api_key="sk-ant-test", base_url=srv.anthropic_base_url,
                             timeout=timeout, max_retries=max_retries)


def user(text: str) -> Message:
    return Message("user", text)


async def test_request_shape(srv: FakeLLMServer) -> None:
    srv.script([anthropic_text("hello")])
    result = await provider(srv).complete("You are a brain.", [user("hi")], TOOLS)
    path, headers, body = srv.requests[0]
    assert path == "/v1/messages"
    assert "sk-ant-test" in (headers.get("x-api-key", "") + headers.get("authorization", ""))
    assert headers["anthropic-version"]
    assert body["system"] == "You are a brain."
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["max_tokens"] == 2048
    assert body["tools"][0] == {"name": "search_entries",
                                "description": "Search the notes of the vault.",
                                "input_schema": TOOLS[0].parameters}
    assert body["tool_choice"] == {"type": "auto"}
    assert result.text == "hello" and result.stop_reason == "end_turn"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 5)


@pytest.mark.parametrize(("choice", "wire"), [
    ("auto", {"type": "auto"}), ("required", {"type": "any"}), ("none", {"type": "none"}),
    (NamedTool("list_entries"), {"type": "tool", "name": "list_entries"}),
])
async def test_tool_choice_mapping(srv: FakeLLMServer, choice: ToolChoice,
                                   wire: dict[str, str]) -> None:
    srv.script([anthropic_text("ok")])
    await provider(srv).complete("s", [user("x")], TOOLS, choice)
    assert srv.requests[0].body["tool_choice"] == wire


async def test_no_tools_no_choice_no_empty_system(srv: FakeLLMServer) -> None:
    srv.script([anthropic_text("ok")])
    await provider(srv).complete("", [user("x")], [], "required")
    body = srv.requests[0].body
    assert "tools" not in body and "tool_choice" not in body and "system" not in body


async def test_parallel_tool_uses_and_results_first(srv: FakeLLMServer) -> None:
    srv.script([anthropic_tool_uses([("toolu_a", "search_entries", {"query": "offsite"}),
                                     ("toolu_b", "list_entries", {"category": "ideas"})],
                                    text="Let me look."),
                anthropic_text("Found it.")])
    p = provider(srv)
    first = await p.complete("s", [user("find the offsite")], TOOLS)
    assert first.stop_reason == "tool_use" and first.text == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("toolu_a", "search_entries", {"query": "offsite"}),
        ("toolu_b", "list_entries", {"category": "ideas"})]
    assert json.loads(first.tool_calls[0].raw_arguments) == {"query": "offsite"}
    history = [user("find the offsite"),
               Message("assistant", first.text, first.tool_calls),
               Message("tool", tool_results=(
                   ToolResult("toolu_b", "list_entries", "[]"),  # out of order on purpose
                   ToolResult("toolu_a", "search_entries", "no such index", is_error=True))),
               user("and the budget?")]
    second = await p.complete("s", history, TOOLS)
    assert second.text == "Found it."
    sent = srv.requests[1].body["messages"]
    assert sent[1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_a", "name": "search_entries",
         "input": {"query": "offsite"}},
        {"type": "tool_use", "id": "toolu_b", "name": "list_entries",
         "input": {"category": "ideas"}}]}
    # One user message: the results first, in call order, then the new text.
    assert sent[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "no such index",
         "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_b", "content": "[]"},
        {"type": "text", "text": "and the budget?"}]}
    assert len(sent) == 3


async def test_never_sends_empty_text_or_empty_error(srv: FakeLLMServer) -> None:
    srv.script([anthropic_text("ok")])
    bad = ToolCall("toolu_x", "search_entries", None, '{"query": "of', parse_error="bad JSON")
    await provider(srv).complete("s", [
        user("x"), Message("assistant", "", (bad,)),
        Message("tool", tool_results=(ToolResult("toolu_x", "search_entries", "", True),))],
        TOOLS)
    sent = srv.requests[0].body["messages"]
    assert sent[1]["content"] == [{"type": "tool_use", "id": "toolu_x",
                                   "name": "search_entries", "input": {}}]
    assert sent[2]["content"][0]["content"]  # non-empty error content


async def test_missing_result_is_closed_and_stray_result_dropped(srv: FakeLLMServer) -> None:
    srv.script([anthropic_text("ok")])
    calls = (ToolCall("toolu_1", "list_entries", {}, "{}"),
             ToolCall("toolu_2", "list_entries", {}, "{}"))
    await provider(srv).complete("s", [
        user("x"), Message("assistant", None, calls),
        Message("tool", tool_results=(ToolResult("toolu_1", "list_entries", "[]"),
                                      ToolResult("toolu_9", "list_entries", "stray")))],
        TOOLS)
    blocks = srv.requests[0].body["messages"][2]["content"]
    assert [b["tool_use_id"] for b in blocks] == ["toolu_1", "toolu_2"]
    assert blocks[1]["is_error"] is True


async def test_consecutive_user_messages_are_merged(srv: FakeLLMServer) -> None:
    srv.script([anthropic_text("ok")])
    await provider(srv).complete("s", [user("one"), user("two")], [])
    assert srv.requests[0].body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}]


async def test_max_tokens_stop_is_reported(srv: FakeLLMServer) -> None:
    srv.script([anthropic_tool_uses([("toolu_a", "search_entries", {"query": "o"})],
                                    stop_reason="max_tokens")])
    result = await provider(srv).complete("s", [user("x")], TOOLS)
    assert result.stop_reason == "max_tokens"


async def test_refusal_stop(srv: FakeLLMServer) -> None:
    srv.script([anthropic_text("", stop_reason="refusal")])
    result = await provider(srv).complete("s", [user("x")], [])
    assert result.stop_reason == "refusal" and result.text is None


async def test_defaults_apply_without_options(srv: FakeLLMServer) -> None:
    srv.script([anthropic_text("ok")])
    await provider(srv, max_tokens=512, metadata={"user_id": "u1"}).complete(
        "s", [user("x")], TOOLS)
    body = srv.requests[0].body
    assert body["max_tokens"] == 512 and body["metadata"] == {"user_id": "u1"}
    assert len(body["tools"]) == 2 and body["tool_choice"] == {"type": "auto"}
    assert "output_config" not in body


async def test_tool_schema_injection(srv: FakeLLMServer) -> None:
    srv.script([anthropic_tool_uses([("toolu_1", "digest", {"summary": "All quiet."})])])
    options = RequestOptions(tool_schema=SCHEMA, tool_name="digest", max_tokens=100)
    result = await provider(srv).complete("s", [user("x")], TOOLS, options=options)
    body = srv.requests[0].body
    assert [t["name"] for t in body["tools"]] == ["digest"]
    assert body["tools"][0]["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": "digest"}
    assert body["max_tokens"] == 100
    assert result.parsed == {"summary": "All quiet."}


async def test_response_schema_injection(srv: FakeLLMServer) -> None:
    srv.script([anthropic_text('{"summary": "Busy week."}'), anthropic_text("oops")])
    options = RequestOptions(response_schema=SCHEMA)
    p = provider(srv)
    result = await p.complete("s", [user("x")], [], options=options)
    assert srv.requests[0].body["output_config"] == {
        "format": {"type": "json_schema", "schema": SCHEMA}}
    assert result.parsed == {"summary": "Busy week."}
    broken = await p.complete("s", [user("x")], [], options=options)
    assert broken.parsed is None and broken.text == "oops"


async def test_rate_limited(srv: FakeLLMServer) -> None:
    srv.fail(429, times=2, retry_after=0.01)
    with pytest.raises(RateLimited) as info:
        await provider(srv, max_retries=1).complete("s", [user("x")], [])
    assert len(srv.requests) == 2
    assert info.value.request_id == "req_fake"


@pytest.mark.parametrize(("status", "kind"), [
    (401, AuthError), (403, AuthError), (400, BadRequest), (404, BadRequest),
    (500, Unavailable), (503, Overloaded), (529, Overloaded),
])
async def test_status_errors_mapped(srv: FakeLLMServer, status: int, kind: type) -> None:
    srv.fail(status)
    with pytest.raises(kind):
        await provider(srv).complete("s", [user("x")], [])


async def test_overloaded_error_type_on_other_status(srv: FakeLLMServer) -> None:
    srv.script([error(500, {"type": "error", "error": {"type": "overloaded_error",
                                                       "message": "Overloaded"}})])
    with pytest.raises(Overloaded):
        await provider(srv).complete("s", [user("x")], [])


async def test_timeout(srv: FakeLLMServer) -> None:
    srv.delay = 2.0
    with pytest.raises(LLMTimeout):
        await provider(srv, timeout=0.5).complete("s", [user("x")], [])


async def test_connection_refused_is_unavailable() -> None:
    with FakeLLMServer() as gone:
        url = gone.anthropic_base_url
    p = AnthropicProvider(BUILTIN_CONFIGS["anthropic"], api_key="k", base_url=url, timeout=2,
                          max_retries=0)
    with pytest.raises(Unavailable):
        await p.complete("s", [user("x")], [])


async def test_fake_rejects_unanswered_tool_use(srv: FakeLLMServer) -> None:
    # Guards the fake itself: it must catch the pairing mistakes the real API rejects.
    call = ToolCall("toolu_1", "list_entries", {}, "{}")
    body = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": call.id,
                                           "name": call.name, "input": {}}]},
        {"role": "user", "content": "next"}]}
    assert any("without `tool_result`" in p for p in anthropic_problems(body))


async def test_fake_smart_mode_answers_tool_results(srv: FakeLLMServer) -> None:
    capture = ToolSpec("classify_and_capture", "Save a thought.",
                       {"type": "object", "properties": {"text": {"type": "string"}}})
    p = provider(srv)
    first = await p.complete("s", [user("Idea: a podcast")], [capture])
    (call,) = first.tool_calls
    assert call.name == "classify_and_capture" and call.id.startswith("toolu_")
    assert call.arguments is not None and call.arguments["hints"]["category"] == "ideas"
    done = await p.complete("s", [user("Idea: a podcast"),
                                  Message("assistant", None, first.tool_calls),
                                  Message("tool", tool_results=(
                                      ToolResult(call.id, call.name, "filed"),))], [capture])
    assert done.text is not None and call.id in done.text
