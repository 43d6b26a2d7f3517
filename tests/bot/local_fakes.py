"""What the real local servers did (issue 24), reproduced for the fake LLM server: gates that
refuse requests the way llama-cpp-python's server does, and the replies a small model writes.

The error bodies are the ones llama-cpp-python 0.3.36's server sent (HTTP 500 with its
pydantic validation message and type "internal_server_error").
"""

from __future__ import annotations

import json
from typing import Any

from tests.bot.fake_llm_server import (
    ANTHROPIC_PATH,
    Reply,
    anthropic_text,
    openai_text,
)


def _llama_500(message: str) -> Reply:
    return Reply(500, {"error": {"message": message, "type": "internal_server_error",
                                 "param": None, "code": None}})


NULL_CONTENT_500 = (
    "7 validation errors:\n  {'type': 'string_type', 'loc': ('body', 'messages', 1, "
    "'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid "
    "string', 'input': None}")
JSON_SCHEMA_500 = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}")


def llama_cpp_gate(path: str, body: dict[str, Any]) -> Reply | None:
    """llama-cpp-python's server: null assistant content and json_schema are refused (500)."""
    if path == ANTHROPIC_PATH:
        return None
    for message in body.get("messages") or []:
        if message.get("role") == "assistant" and message.get("content") is None:
            return _llama_500(NULL_CONTENT_500)
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return _llama_500(JSON_SCHEMA_500)
    return None


def anthropic_no_output_config(path: str, body: dict[str, Any]) -> Reply | None:
    """An Anthropic-compatible server without structured output (output_config refused)."""
    if path == ANTHROPIC_PATH and "output_config" in body:
        return Reply(400, {"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "output_config: Extra inputs are not permitted"}})
    return None


def no_forced_choice(path: str, body: dict[str, Any]) -> Reply | None:
    """A server that fails on a forced tool choice (named or "required"/"any")."""
    choice = body.get("tool_choice")
    forced = (isinstance(choice, dict) and choice.get("type") not in ("auto", "none")) \
        or choice == "required"
    if forced:
        return _llama_500("ValueError: tool_choice must be 'auto' or 'none'")
    return None


def both(*gates: Any) -> Any:
    def gate(path: str, body: dict[str, Any]) -> Reply | None:
        for one in gates:
            refused = one(path, body)
            if refused is not None:
                return refused
        return None
    return gate


def text(provider: str, words: str) -> dict[str, Any]:
    """A plain text reply in the provider's wire format."""
    return openai_text(words) if provider == "openai" else anthropic_text(words)


def hermes(name: str, arguments: dict[str, Any], before: str = "") -> str:
    return f"{before}<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n" \
           "</tool_call>"


def functions_form(name: str, arguments: dict[str, Any]) -> str:
    return f"functions.{name}:\n{json.dumps(arguments)}"


def bare_json(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": arguments})


# What SmolLM2 wrote when it copied the bot's rescue sentence from the history.
COPIED_RESCUE = ("I couldn't file this cleanly (the model answered without filing it), so it's "
                 "in your inbox: inbox/car-insurance.md. Nothing is lost; use the buttons to "
                 "file it.")
FAKE_RESULT = ('<tool_response>\n{"ok": true, "path": "projects/apollo.md"}\n</tool_response>\n'
               "<|im_end|>")
