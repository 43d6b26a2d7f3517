"""OpenAIProvider on the wire: the real `openai` SDK against a local fake server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest

from bot.llm.configs import BUILTIN_CONFIGS
from bot.llm.openai_provider import OpenAIProvider
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
    openai_text,
    openai_tool_calls,
)

TOOLS = [
    ToolSpec("search_entries", "Search the notes of the vault.",
             {"type": "object", "properties": {"query": {"type": "string"}},
              "required": ["query"], "additionalProperties": False}),
    ToolSpec("list_entries", "List notes of a category.",
             {"type": "object", "properties": {"category": {"type": "string"}},
              "additionalProperties": False}),
]
SCHEMA = {"type": "object", "properties": {"category": {"type": "string"},
                                           "confidence": {"type": "number"}},
          "required": ["category"]}


@pytest.fixture
def srv() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def provider(srv: FakeLLMServer, *, timeout: float = 5.0, max_retries: int = 0,
             **params: object) -> OpenAIProvider:
    # The fake stands in for OpenAI itself here (tests/bot/test_llm_local.py: other servers).
    config = replace(BUILTIN_CONFIGS["openai"], params=dict(params), dialect="openai")
    return OpenAIProvider(config, api_key="sk-test", base_url=srv.openai_base_url,
                          timeout=timeout, max_retries=max_retries)


def user(text: str) -> Message:
    return Message("user", text)


async def test_request_shape_system_tools_and_auth(srv: FakeLLMServer) -> None:
    srv.script([openai_text("hello")])
    result = await provider(srv).complete("You are a brain.", [user("hi")], TOOLS)
    path, headers, body = srv.requests[0]
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer sk-test"
    assert body["model"] == "gpt-5.5"
    assert body["messages"] == [{"role": "system", "content": "You are a brain."},
                                {"role": "user", "content": "hi"}]
    assert body["tools"][0] == {"type": "function", "function": {
        "name": "search_entries", "description": "Search the notes of the vault.",
        "parameters": TOOLS[0].parameters}}
    assert "strict" not in body["tools"][0]["function"]
    assert body["tool_choice"] == "auto"
    assert result.text == "hello" and result.stop_reason == "end_turn"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 5)


@pytest.mark.parametrize(("choice", "wire"), [
    ("auto", "auto"), ("none", "none"), ("required", "required"),
    (NamedTool("list_entries"), {"type": "function", "function": {"name": "list_entries"}}),
])
async def test_tool_choice_mapping(srv: FakeLLMServer, choice: ToolChoice, wire: object) -> None:
    srv.script([openai_text("ok")])
    await provider(srv).complete("s", [user("x")], TOOLS, choice)
    assert srv.requests[0].body["tool_choice"] == wire


async def test_no_tools_sends_no_tools_and_no_choice(srv: FakeLLMServer) -> None:
    srv.script([openai_text("ok")])
    await provider(srv).complete("s", [user("x")], [], "required")
    body = srv.requests[0].body
    assert "tools" not in body and "tool_choice" not in body


async def test_parallel_calls_and_results_round_trip(srv: FakeLLMServer) -> None:
    srv.script([openai_tool_calls([("call_a", "search_entries", {"query": "offsite"}),
                                   ("call_b", "list_entries", '{"category": "projects"}')]),
                openai_text("Found it.")])
    p = provider(srv)
    first = await p.complete("s", [user("find the offsite")], TOOLS)
    assert first.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_a", "search_entries", {"query": "offsite"}),
        ("call_b", "list_entries", {"category": "projects"})]
    history = [user("find the offsite"),
               Message("assistant", None, first.tool_calls),
               Message("tool", tool_results=(
                   ToolResult("call_a", "search_entries", '{"entries": []}'),
                   ToolResult("call_b", "list_entries", "not found", is_error=True)))]
    second = await p.complete("s", history, TOOLS)
    assert second.text == "Found it."
    sent = srv.requests[1].body["messages"]
    assert sent[2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function",
         "function": {"name": "search_entries", "arguments": '{"query": "offsite"}'}},
        {"id": "call_b", "type": "function",
         "function": {"name": "list_entries", "arguments": '{"category": "projects"}'}}]}
    assert sent[3:] == [
        {"role": "tool", "tool_call_id": "call_a", "content": '{"entries": []}'},
        {"role": "tool", "tool_call_id": "call_b", "content": "ERROR: not found"}]


async def test_error_prefix_not_doubled(srv: FakeLLMServer) -> None:
    srv.script([openai_text("ok")])
    call = ToolCall("c1", "list_entries", {}, "{}")
    await provider(srv).complete("s", [
        user("x"), Message("assistant", "checking", (call,)),
        Message("tool", tool_results=(ToolResult("c1", "list_entries", "Error: boom", True),))],
        TOOLS)
    messages = srv.requests[0].body["messages"]
    assert messages[2]["content"] == "checking"
    assert messages[3]["content"] == "Error: boom"


@pytest.mark.parametrize(("raw", "why"), [
    ('{"query": "off', "not valid JSON"),
    ('["a", "b"]', "must be a JSON object"),
    ('"just a string"', "must be a JSON object"),
    ("", "empty"),
])
async def test_bad_arguments_become_parse_errors(srv: FakeLLMServer, raw: str, why: str) -> None:
    srv.script([openai_tool_calls([("call_x", "search_entries", raw)])])
    result = await provider(srv).complete("s", [user("x")], TOOLS)
    (call,) = result.tool_calls
    assert call.arguments is None
    assert call.raw_arguments == raw
    assert call.parse_error is not None and why in call.parse_error


async def test_truncated_output_is_max_tokens(srv: FakeLLMServer) -> None:
    srv.script([openai_tool_calls([("call_x", "search_entries", '{"query": "of')],
                                  finish_reason="length")])
    result = await provider(srv).complete("s", [user("x")], TOOLS)
    assert result.stop_reason == "max_tokens"
    assert result.tool_calls[0].arguments is None


async def test_content_filter_is_refusal(srv: FakeLLMServer) -> None:
    srv.script([openai_text(None, finish_reason="content_filter")])
    result = await provider(srv).complete("s", [user("x")], [])
    assert result.stop_reason == "refusal" and result.text is None


async def test_invalid_replayed_arguments_are_sent_back_verbatim(srv: FakeLLMServer) -> None:
    srv.script([openai_text("ok")])
    bad = ToolCall("c1", "search_entries", None, '{"query": "of', parse_error="bad")
    await provider(srv).complete("s", [
        user("x"), Message("assistant", None, (bad,)),
        Message("tool", tool_results=(ToolResult("c1", "search_entries", "bad JSON", True),))],
        TOOLS)
    assert srv.requests[0].body["messages"][2]["tool_calls"][0]["function"]["arguments"] \
        == '{"query": "of'


async def test_defaults_apply_without_options(srv: FakeLLMServer) -> None:
    srv.script([openai_text("ok")])
    await provider(srv, temperature=0.2).complete("s", [user("x")], TOOLS)
    body = srv.requests[0].body
    assert body["temperature"] == 0.2
    assert len(body["tools"]) == 2 and body["tool_choice"] == "auto"
    assert "response_format" not in body and "max_completion_tokens" not in body


async def test_tool_schema_injection_forces_one_tool(srv: FakeLLMServer) -> None:
    srv.script([openai_tool_calls([("c1", "respond", {"category": "ideas"})])])
    options = RequestOptions(tool_schema=SCHEMA, max_tokens=300)
    result = await provider(srv, temperature=0.2).complete("s", [user("x")], TOOLS,
                                                           options=options)
    body = srv.requests[0].body
    assert body["tools"] == [{"type": "function", "function": {
        "name": "respond", "description": body["tools"][0]["function"]["description"],
        "parameters": SCHEMA}}]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "respond"}}
    assert body["max_completion_tokens"] == 300
    assert body["temperature"] == 0.2  # config defaults still apply
    assert result.parsed == {"category": "ideas"}


async def test_tool_schema_with_name_description_and_choice(srv: FakeLLMServer) -> None:
    srv.script([openai_text("no")])
    options = RequestOptions(tool_schema=SCHEMA, tool_name="classify",
                             tool_description="Classify the thought.", tool_choice="auto")
    result = await provider(srv).complete("s", [user("x")], TOOLS, options=options)
    body = srv.requests[0].body
    assert body["tools"][0]["function"]["name"] == "classify"
    assert body["tools"][0]["function"]["description"] == "Classify the thought."
    assert body["tool_choice"] == "auto"
    assert result.parsed is None


async def test_response_schema_injection(srv: FakeLLMServer) -> None:
    srv.script([openai_text(json.dumps({"category": "admin", "confidence": 0.8})),
                openai_text("not json at all")])
    options = RequestOptions(response_schema=SCHEMA, response_name="classification")
    p = provider(srv)
    result = await p.complete("s", [user("x")], [], options=options)
    assert srv.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "classification", "schema": SCHEMA, "strict": False}}
    assert result.parsed == {"category": "admin", "confidence": 0.8}
    broken = await p.complete("s", [user("x")], [], options=options)
    assert broken.parsed is None and broken.text == "not json at all"


async def test_rate_limited_after_retries(srv: FakeLLMServer) -> None:
    srv.fail(429, times=2, retry_after=0.01)
    srv.script([openai_text("never reached")])
    with pytest.raises(RateLimited) as info:
        await provider(srv, max_retries=1).complete("s", [user("x")], [])
    assert len(srv.requests) == 2  # one retry, then our error
    assert info.value.request_id == "req_fake"


async def test_retry_succeeds(srv: FakeLLMServer) -> None:
    srv.fail(500, retry_after=0.01)
    srv.script([openai_text("second time lucky")])
    result = await provider(srv, max_retries=1).complete("s", [user("x")], [])
    assert result.text == "second time lucky"


@pytest.mark.parametrize(("status", "kind"), [
    (401, AuthError), (403, AuthError), (400, BadRequest), (404, BadRequest),
    (422, BadRequest), (500, Unavailable), (503, Overloaded), (529, Overloaded),
])
async def test_status_errors_mapped(srv: FakeLLMServer, status: int, kind: type) -> None:
    srv.fail(status)
    with pytest.raises(kind):
        await provider(srv).complete("s", [user("x")], [])


async def test_timeout(srv: FakeLLMServer) -> None:
    srv.delay = 2.0
    with pytest.raises(LLMTimeout):
        await provider(srv, timeout=0.5).complete("s", [user("x")], [])


async def test_connection_refused_is_unavailable() -> None:
    with FakeLLMServer() as gone:
        url = gone.openai_base_url
    p = OpenAIProvider(BUILTIN_CONFIGS["openai"], api_key="k", base_url=url, timeout=2,
                       max_retries=0)
    with pytest.raises(Unavailable):
        await p.complete("s", [user("x")], [])


async def test_unpaired_history_is_rejected_as_bad_request(srv: FakeLLMServer) -> None:
    # The fake enforces the API's pairing rule; our error says it was a bad request.
    call = ToolCall("c1", "list_entries", {}, "{}")
    with pytest.raises(BadRequest, match="tool_call_id"):
        await provider(srv).complete("s", [user("x"), Message("assistant", None, (call,)),
                                           user("next")], TOOLS)


CAPTURE = ToolSpec("classify_and_capture", "Save a thought.",
                   {"type": "object", "properties": {"text": {"type": "string"}}})


async def test_fake_smart_mode_plays_a_minimal_model(srv: FakeLLMServer) -> None:
    p = provider(srv)
    first = await p.complete("s", [user("Pay rent tomorrow")], [CAPTURE, *TOOLS])
    (call,) = first.tool_calls
    assert call.name == "classify_and_capture" and call.arguments is not None
    assert call.arguments["text"] == "Pay rent tomorrow"
    assert call.arguments["hints"]["category"] == "admin"
    listed = await p.complete("s", [user("list my ideas")], [CAPTURE, *TOOLS])
    assert listed.tool_calls[0].name == "list_entries"
    done = await p.complete("s", [user("Pay rent tomorrow"),
                                  Message("assistant", None, first.tool_calls),
                                  Message("tool", tool_results=(
                                      ToolResult(call.id, call.name, "filed"),))], [CAPTURE])
    assert done.text is not None and call.id in done.text
    plain = await p.complete("s", [user("hello")], [])
    assert plain.text == "You said: hello"


async def test_fake_rejects_orphan_tool_message(srv: FakeLLMServer) -> None:
    with pytest.raises(BadRequest, match="preceeding message with 'tool_calls'"):
        await provider(srv).complete("s", [user("x"), Message("tool", tool_results=(
            ToolResult("call_zz", "list_entries", "[]"),))], TOOLS)
    assert srv.pending == 0


async def test_fake_callable_script_sees_the_request(srv: FakeLLMServer) -> None:
    srv.script([lambda body: openai_text(f"{len(body['messages'])} messages")])
    result = await provider(srv).complete("s", [user("x")], [])
    assert result.text == "2 messages"
