"""The loop behind a server that is "OpenAI-compatible" (or Anthropic-compatible) but not
OpenAI (issue 24), through both real SDKs against the fake server reproducing what
llama-cpp-python's server did: null content refused with HTTP 500, json_schema refused,
tool calls written into the text, refusals that are not outages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from bot.llm.anthropic_provider import AnthropicProvider
from bot.llm.configs import BUILTIN_CONFIGS
from bot.llm.dialects import dialect_for, says_invalid
from bot.llm.openai_provider import OpenAIProvider
from bot.llm.sdk_provider import SDKProvider
from bot.llm.types import (
    BadRequest,
    Message,
    RequestOptions,
    ToolCall,
    ToolResult,
    ToolSpec,
    Unavailable,
)
from tests.bot import local_fakes as lf
from tests.bot.fake_llm_server import (
    ANTHROPIC_PATH,
    FakeLLMServer,
    Reply,
    anthropic_text,
    anthropic_tool_uses,
    openai_text,
    openai_tool_calls,
)

TOOLS = [ToolSpec("list_entries", "List notes", {
    "type": "object", "properties": {"category": {"type": "string",
                                                  "enum": ["projects", "ideas"]}},
    "additionalProperties": False}),
         ToolSpec("search_entries", "Search", {
             "type": "object", "properties": {"query": {"type": "string"}},
             "required": ["query"], "additionalProperties": False})]
SCHEMA = {"type": "object", "properties": {"summary": {"type": "string"}},
          "required": ["summary"]}


@pytest.fixture
def srv() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def make(kind: str, srv: FakeLLMServer, dialect: str | None = None) -> SDKProvider:
    if kind == "openai":
        config = replace(BUILTIN_CONFIGS["openai"], dialect=dialect)
        return OpenAIProvider(config, api_key="k", base_url=srv.openai_base_url, max_retries=0,
                              timeout=5)
    config = replace(BUILTIN_CONFIGS["anthropic"], dialect=dialect)
    return AnthropicProvider(config, api_key="k", base_url=srv.anthropic_base_url,
                             max_retries=0, timeout=5)


def text(kind: str, words: str) -> dict[str, Any]:
    return openai_text(words) if kind == "openai" else anthropic_text(words)


def calls(kind: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return (openai_tool_calls([("c1", name, args)]) if kind == "openai"
            else anthropic_tool_uses([("c1", name, args)]))


SDKS = pytest.mark.parametrize("kind", ["openai", "anthropic"])
USER = Message("user", "list my projects")
ROUND = [USER, Message("assistant", None, (ToolCall("c1", "list_entries", {}, "{}"),)),
         Message("tool", tool_results=(ToolResult("c1", "list_entries", "[]"),))]


# -- 1. what the servers accept ----------------------------------------------------------------

def test_a_local_endpoint_speaks_the_compatible_dialect() -> None:
    assert dialect_for("openai", None, None).name == "openai"
    assert dialect_for("openai", None, "https://api.openai.com/v1").name == "openai"
    assert dialect_for("openai", None, "http://127.0.0.1:8080/v1").name == "openai-compatible"
    assert dialect_for("anthropic", None, "http://localhost:11434").name \
        == "anthropic-compatible"
    assert dialect_for("openai", "ollama", None).name == "ollama"
    with pytest.raises(ValueError, match="unknown dialect"):
        dialect_for("openai", "llama.cpp-ish", None)


async def test_tool_call_rounds_are_not_refused_by_llama_cpp(srv: FakeLLMServer) -> None:
    """llama-cpp-python's server answers null content with HTTP 500: the compatible dialects
    send "" and the round goes through."""
    srv.gate = lf.llama_cpp_gate
    for dialect in (None, "llama-cpp", "ollama", "vllm"):
        srv.script([openai_text("You have no projects.")])
        answer = await make("openai", srv, dialect).complete("s", ROUND, TOOLS)
        assert answer.text == "You have no projects."
        assert srv.requests[-1].body["messages"][2]["content"] == ""


async def test_null_content_is_refused_by_llama_cpp_and_worded_as_a_refusal(
        srv: FakeLLMServer) -> None:
    """What the OpenAI dialect sends, the llama-cpp fake refuses: a refusal, not an outage."""
    srv.gate = lf.llama_cpp_gate
    with pytest.raises(BadRequest) as refused:
        await make("openai", srv, "openai").complete("s", ROUND, TOOLS)
    assert "Input should be a valid string" in (refused.value.server_message or "")


@SDKS
async def test_structured_output_steps_down_and_remembers(kind: str, srv: FakeLLMServer) -> None:
    """json_schema refused -> json_object (OpenAI) or a forced tool (Anthropic); the next
    request starts where it worked."""
    srv.gate = lf.llama_cpp_gate if kind == "openai" else lf.anthropic_no_output_config
    provider = make(kind, srv)
    options = RequestOptions(response_schema=SCHEMA, response_name="digest")
    answer_ok = (openai_text('{"summary": "quiet day"}') if kind == "openai"
                 else anthropic_tool_uses([("t1", "digest", {"summary": "quiet day"})]))
    srv.script([answer_ok, answer_ok])
    first = await provider.complete("Write it.", [Message("user", "digest")], [], "auto",
                                    options)
    assert first.parsed == {"summary": "quiet day"}
    sent = len(srv.requests)
    second = await provider.complete("Write it.", [Message("user", "digest")], [], "auto",
                                     options)
    assert second.parsed == {"summary": "quiet day"}
    assert len(srv.requests) == sent + 1  # remembered: no refused request again
    last = srv.requests[-1].body
    if kind == "openai":
        assert last["response_format"]["type"] == "json_object"
        assert last["response_format"]["schema"] == SCHEMA  # llama.cpp constrains by it
        assert "JSON schema" in last["messages"][0]["content"]
    else:
        assert "output_config" not in last
        assert last["tool_choice"] == {"type": "tool", "name": "digest"}


@SDKS
async def test_a_refused_request_is_retried_once_in_the_fallback_dialect(
        kind: str, srv: FakeLLMServer) -> None:
    srv.gate = lf.no_forced_choice
    provider = make(kind, srv)
    srv.script([calls(kind, "search_entries", {"query": "x"}),
                calls(kind, "search_entries", {"query": "y"})])
    first = await provider.complete("s", [USER], TOOLS, "required")
    assert [c.arguments for c in first.tool_calls] == [{"query": "x"}]
    assert provider.dialect.name in ("minimal", "anthropic-minimal")
    sent = len(srv.requests)
    await provider.complete("s", [USER], TOOLS, "required")
    assert len(srv.requests) == sent + 1  # the fallback is remembered


# -- 4. errors told apart ----------------------------------------------------------------------

@SDKS
@pytest.mark.parametrize(("reply", "kind_of_error"), [
    (Reply(500, {"error": {"message": lf.NULL_CONTENT_500, "type": "internal_server_error"}}),
     BadRequest),
    (Reply(500, {"error": {"message": "Internal Server Error", "type": "server_error"}}),
     Unavailable),
    (Reply(500, {"detail": "ValueError: tool_choice must be 'auto'"}), BadRequest),
    (Reply(422, {"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}),
     BadRequest),
    (Reply(502, {}), Unavailable),
])
async def test_outages_and_refusals_are_told_apart(kind: str, srv: FakeLLMServer, reply: Reply,
                                                   kind_of_error: type) -> None:
    srv.script([reply])
    provider = make(kind, srv, "openai" if kind == "openai" else "anthropic")
    with pytest.raises(kind_of_error) as caught:
        await provider.complete("s", [USER], TOOLS)
    if kind_of_error is BadRequest:
        assert caught.value.server_message  # the server's own words, for the log


def test_refusal_words() -> None:
    assert says_invalid("1 validation error: Input should be 'text' or 'json_object'")
    assert not says_invalid("Internal Server Error")
    assert not says_invalid("model is loading, service unavailable")
    assert not says_invalid(None)


# -- 2. what small models write -----------------------------------------------------------------

@SDKS
@pytest.mark.parametrize("written", [
    lf.hermes("search_entries", {"query": "dentist"}, before="Let me look. "),
    lf.functions_form("search_entries", {"query": "dentist"}),
    lf.bare_json("search_entries", {"query": "dentist"}),
    "```json\n" + lf.bare_json("search_entries", {"query": "dentist"}) + "\n```",
])
async def test_calls_written_into_the_text_become_calls(kind: str, srv: FakeLLMServer,
                                                        written: str) -> None:
    srv.script([text(kind, written)])
    answer = await make(kind, srv).complete("s", [Message("user", "find dentist")], TOOLS)
    assert [(c.name, c.arguments) for c in answer.tool_calls] \
        == [("search_entries", {"query": "dentist"})]
    assert answer.stop_reason == "tool_use"
    assert answer.text in (None, "Let me look.")


@SDKS
@pytest.mark.parametrize("written", [
    lf.hermes("delete_everything", {"all": True}),  # no such tool
    lf.hermes("list_entries", {"category": "cars"}),  # arguments that do not fit
    lf.functions_form("search_entries", {}),  # a required argument missing
    lf.FAKE_RESULT,
    "functions.list_entries:",
])
async def test_other_tool_syntax_is_never_shown(kind: str, srv: FakeLLMServer,
                                                written: str) -> None:
    srv.script([text(kind, "Here you go. " + written)])
    answer = await make(kind, srv).complete("s", [Message("user", "x")], TOOLS)
    assert answer.tool_calls == ()
    assert answer.text == "Here you go."


async def test_a_structured_answer_is_not_mistaken_for_a_call(srv: FakeLLMServer) -> None:
    srv.script([openai_text('{"name": "list_entries", "arguments": {}}')])
    options = RequestOptions(response_schema={"type": "object"})
    answer = await make("openai", srv, "openai").complete("s", [USER], [], "auto", options)
    assert answer.parsed == {"name": "list_entries", "arguments": {}}


async def test_anthropic_path_is_the_messages_api(srv: FakeLLMServer) -> None:
    srv.script([anthropic_text("ok")])
    await make("anthropic", srv).complete("s", [USER], TOOLS)
    assert srv.requests[-1].path == ANTHROPIC_PATH


@SDKS
async def test_a_lone_surrogate_in_the_reply_becomes_a_replacement_character(
        kind: str, srv: FakeLLMServer) -> None:
    """SmolLM2 behind llama-cpp-python once wrote `\\ud8ca` alone in its JSON: `brain chat
    --json` died printing it. It is U+FFFD from the provider on, so it prints and stores."""
    srv.script([text(kind, "Noted \ud8ca here 😀")])
    answer = await make(kind, srv).complete("s", [Message("user", "x")], TOOLS)
    assert answer.text == "Noted \ufffd here 😀"
    assert answer.text.encode("utf-8")


@SDKS
async def test_a_lone_surrogate_in_tool_arguments_becomes_a_replacement_character(
        kind: str, srv: FakeLLMServer) -> None:
    """The same model wrote one inside a tool call's arguments: `brain chat --json` died
    printing the turn's executions (bench/bench_local_model.py, 2026-11-25)."""
    srv.script([calls(kind, "classify_and_capture",
                      {"text": "Car \ud8eb insurance", "hints": {"tags": ["\udc00x"]}})])
    answer = await make(kind, srv).complete("s", [Message("user", "x")], TOOLS)
    (call,) = answer.tool_calls
    assert call.arguments == {"text": "Car \ufffd insurance", "hints": {"tags": ["\ufffdx"]}}
    assert json.dumps(call.arguments, ensure_ascii=False).encode("utf-8")
