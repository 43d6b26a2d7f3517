"""`brain doctor`'s look at a connection: one small request with a tool, one with structured
output, and what the server did with each, in words. Costs two or three model calls."""

from __future__ import annotations

from dataclasses import dataclass

from bot.llm.sdk_provider import SDKProvider
from bot.llm.types import LLMError, Message, NamedTool, Provider, RequestOptions, ToolSpec

PING = ToolSpec("ping", "Answer the connection check by calling this tool.", {
    "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
ANSWER = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
SYSTEM = "This is a connection check. Do exactly what the user asks."


@dataclass(frozen=True)
class ProbeResult:
    ok: bool  # the server answered both requests
    tools: str  # "native", "written in the text (read back)", "not called", "refused: ..."
    structured: str  # "json_schema", "json_object (json_schema refused)", ..., "failed: ..."
    dialect: str  # the dialect the connection ended up speaking

    def describe(self) -> str:
        return (f"dialect {self.dialect}; tool calls: {self.tools}; structured output: "
                f"{self.structured}")


async def probe(provider: Provider) -> ProbeResult:
    """Ask the server once for a tool call and once for structured output."""
    if not isinstance(provider, SDKProvider):
        return ProbeResult(True, "rules (no server)", "rules (no server)", "offline")
    reached = True
    try:
        answer = await provider.complete(
            SYSTEM, [Message("user", "Call the ping tool with ok set to true.")], [PING],
            NamedTool("ping"), RequestOptions(max_tokens=64))
        called = [c for c in answer.tool_calls if c.name == "ping"]
        if not called:
            tools = "not called (the model answered in text)"
        elif called[0].id.startswith("text_call_"):
            tools = "written in the text (read back into a call)"
        else:
            tools = "native"
    except LLMError as exc:
        reached = reached and exc.kind == "bad_request"
        tools = f"refused ({exc.kind}): {exc.server_message or exc.message}"[:300]
    first_dialect = provider.dialect.structured[0]
    try:
        answer = await provider.complete(
            SYSTEM, [Message("user", 'Answer {"ok": true}.')], [], "auto",
            RequestOptions(response_schema=ANSWER, response_name="check", max_tokens=64))
        mode = provider.structured_mode or first_dialect
        structured = mode if mode == first_dialect else f"{mode} ({first_dialect} refused)"
        if answer.parsed is None:
            structured += ", but the answer was not JSON"
    except LLMError as exc:
        reached = reached and exc.kind == "bad_request"
        structured = f"failed ({exc.kind}): {exc.server_message or exc.message}"[:300]
    return ProbeResult(reached, tools, structured, provider.dialect.name)
