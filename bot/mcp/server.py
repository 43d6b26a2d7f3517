"""The MCP server: our tool registry, listed and called through the Brain.

The low-level server, not `MCPServer`: the JSON schemas the model gets are the input schemas
MCP clients get, and every call goes through `brain.tools.call` (the registry's `execute`), so
a client sees the same validation messages and error results as the model, byte for byte;
an unknown tool is the protocol error the MCP spec names (-32602, Invalid params). Beside
them, `ask` answers a question with checked sources (`brain.answers`, as `brain ask`); the
loop's own final step (`answer`) is not offered, so it is unknown to a client.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from mcp import types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from bot.brain import Brain
from bot.mcp import history_tools
from bot.turn.tool_calls import Batch
from tools.registry import TOOLS, Execution, tool_specs

SERVER_NAME = "second-brain"
SESSION_HEADER = "mcp-session-id"
MAX_SESSIONS = 1000  # sessions whose batch is kept (the oldest forgotten first)
INSTRUCTIONS = (
    "A personal second brain: notes in a markdown vault (people, projects, ideas, admin, "
    "inbox). Capture new thoughts with classify_and_capture; search_entries, list_entries and "
    "get_entry read them back; update_entry and move_entry change one note. A session may "
    "make a bounded number of changes; undo_session puts all of its changes back."
)


def _title(name: str) -> str:
    return name.replace("_", " ").capitalize()


ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"question": {"type": "string", "minLength": 1, "maxLength": 1000}},
    "required": ["question"],
    "additionalProperties": False,
}
ASK_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"}, "found": {"type": "boolean"},
        "sources": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "path": {"type": "string"}, "name": {"type": "string"},
            "quote": {"type": "string"}}, "required": ["id", "path", "name", "quote"]}},
    },
    "required": ["answer", "found", "sources"],
}
ASK = types.Tool(
    name="ask", title="Ask",
    description="Answer a question from the notes; every source is a note of this vault with "
                "the quote that backs the answer, or found is false.",
    input_schema=ASK_SCHEMA, output_schema=ASK_OUTPUT,
    annotations=types.ToolAnnotations(title="Ask", read_only_hint=True,
                                      open_world_hint=False))


def tool_list() -> list[types.Tool]:
    """Every tool with its schema as the model sees it, and hints for the client's UI."""
    out: list[types.Tool] = []
    for spec in tool_specs():
        tool = TOOLS[spec["name"]]
        if tool.internal:
            continue
        annotations = types.ToolAnnotations(
            title=_title(tool.name),
            read_only_hint=tool.read_only,
            destructive_hint=None if tool.read_only else tool.destructive,
            open_world_hint=False,  # the user's own vault, nothing beyond it
        )
        out.append(types.Tool(name=spec["name"], title=_title(tool.name),
                              description=spec["description"],
                              input_schema=spec["parameters"], annotations=annotations))
    out.append(ASK)
    out.extend(history_tools.TOOLS)
    return out


def call_result(execution: Execution) -> types.CallToolResult:
    """The execution as a tool result: its content is the JSON text the model reads."""
    structured: Any = None
    try:
        structured = json.loads(execution.content)
    except ValueError:  # content is always JSON; a client can still read the text
        structured = None
    return types.CallToolResult(
        content=[types.TextContent(text=execution.content)],
        structured_content=structured if isinstance(structured, dict) else None,
        is_error=execution.status != "ok",
    )


@dataclass(frozen=True)
class _Serving:
    """What every call of one server shares: the brain, the user it acts for, the lock that
    runs side effects one at a time, and each session's batch (the newest last)."""

    brain: Brain
    user_id: str
    writes: asyncio.Lock = field(default_factory=asyncio.Lock)
    batches: OrderedDict[str, Batch] = field(default_factory=OrderedDict)


def build_server(brain: Brain, user_id: str, *, version: str = "") -> Server[Any]:
    """A server acting for one user over `brain`. Side effects run one at a time (as in a
    turn); read-only calls run as they come. Each session's writes are bounded and kept as
    one batch (`brain.tools.batch`), which `undo_session` puts back."""
    tools = tool_list()
    serving = _Serving(brain, user_id)

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        client = ctx.session.client_params
        name = client.client_info.name if client is not None else "client"
        batch = _batch_of(serving, ctx)
        with brain.acting_as(user_id, f"mcp {name}"[:60]):  # the history says where a change came from
            return await _call(serving, params, batch)

    return Server(SERVER_NAME, version=version, title="Second Brain",
                  instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


def _batch_of(serving: _Serving, ctx: ServerRequestContext[Any]) -> Batch:
    # A session: an HTTP client's Mcp-Session-Id; without one (stdio: this process's one
    # client; the stateless protocol over HTTP) the server's run. The newest kept.
    batches = serving.batches
    request = ctx.request
    headers = getattr(request, "headers", None)
    key = str(headers.get(SESSION_HEADER) or "") if headers is not None else ""
    if key not in batches:
        batches[key] = serving.brain.tools.batch()
        while len(batches) > MAX_SESSIONS:
            batches.popitem(last=False)
    batches.move_to_end(key)
    return batches[key]


async def _call(serving: _Serving, params: types.CallToolRequestParams,
                batch: Batch) -> types.CallToolResult:
    if params.name in history_tools.NAMES:
        return await _history_call(serving, params, batch)
    if params.name == ASK.name:
        return await _ask(serving.brain, serving.user_id, params.arguments)
    return await _registry_call(serving, params, batch)


async def _history_call(serving: _Serving, params: types.CallToolRequestParams,
                        batch: Batch) -> types.CallToolResult:
    """The vault's history, read as it comes; undo_session changes notes, one at a time."""
    brain, user_id = serving.brain, serving.user_id
    if params.name == history_tools.HISTORY.name:
        return await history_tools.call(brain, user_id, params.name, params.arguments)
    async with serving.writes:
        return await history_tools.call(brain, user_id, params.name, params.arguments,
                                        batch=batch)


async def _registry_call(serving: _Serving, params: types.CallToolRequestParams,
                         batch: Batch) -> types.CallToolResult:
    """A tool of the registry; a write runs alone and joins the session's batch."""
    brain, user_id = serving.brain, serving.user_id
    tool = TOOLS.get(params.name)
    if tool is None or tool.internal:  # the spec's protocol error for an unknown tool
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
    if not tool.read_only:
        async with serving.writes:
            execution = await brain.tools.call(user_id=user_id, name=params.name,
                                              arguments=params.arguments, batch=batch)
    else:
        execution = await brain.tools.call(user_id=user_id, name=params.name,
                                          arguments=params.arguments)
    return call_result(execution)


async def _ask(brain: Brain, user_id: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
    question = (arguments or {}).get("question")
    if not isinstance(question, str) or not question.strip() or len(question) > 1000:
        text = "ask needs a question: a string of 1 to 1000 characters"
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
    answer = await brain.answers.ask(user_id=user_id, question=question.strip(), source="mcp")
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(answer))],
                                structured_content=answer, is_error=False)
