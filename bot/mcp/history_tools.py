"""The MCP server's `history` (read-only), `undo` and `undo_session` (destructive) tools: the
vault's changes, newest first; putting one back, as `brain history` / `brain undo` do; and
putting back every change this session made (its batch, `bot/turn/tool_calls.py` `Batch`)."""

from __future__ import annotations

import json
from typing import Any

from mcp import types

from bot.brain import Brain
from bot.turn.tool_calls import Batch
from storage.errors import StorageError
from storage.types import Change

CHANGE: dict[str, Any] = {"type": "object", "properties": {
    "id": {"type": "string"}, "at": {"type": "string"}, "who": {"type": "string"},
    "source": {"type": "string"}, "action": {"type": "string"},
    "summary": {"type": "string"}, "paths": {"type": "array", "items": {"type": "string"}},
    "undoes": {"type": ["string", "null"]}}, "required": ["id", "at", "action", "paths"]}

HISTORY = types.Tool(
    name="history", title="History",
    description="The changes made to the vault, newest first: by the app (who, from where) "
                "or outside it. With `note` (a path, id or name), that note's changes, "
                "followed through its moves.",
    input_schema={"type": "object", "properties": {
        "note": {"type": "string", "maxLength": 500},
        "limit": {"type": "integer", "minimum": 1, "maximum": 200}},
        "additionalProperties": False},
    output_schema={"type": "object", "properties": {"changes": {"type": "array",
                                                               "items": CHANGE}},
                   "required": ["changes"]},
    annotations=types.ToolAnnotations(title="History", read_only_hint=True,
                                      open_world_hint=False))

UNDO = types.Tool(
    name="undo", title="Undo",
    description="Put back the files of one change as they were before it (default: the app's "
                "last change). Refused, changing nothing, when a file changed since. The undo "
                "is itself a change.",
    input_schema={"type": "object", "properties": {
        "change": {"type": "string", "pattern": "^[0-9a-fA-F]{7,40}$"}},
        "additionalProperties": False},
    output_schema=CHANGE,
    annotations=types.ToolAnnotations(title="Undo", read_only_hint=False,
                                      destructive_hint=True, idempotent_hint=False,
                                      open_world_hint=False))

UNDO_SESSION = types.Tool(
    name="undo_session", title="Undo session",
    description="Put back every change this session made (captures, updates, moves, files "
                "kept), newest first. Stops at a change whose files changed since, changing "
                "nothing more; says what was put back and what is left.",
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
    output_schema={"type": "object", "properties": {
        "undone": {"type": "array", "items": CHANGE}, "left": {"type": "integer"},
        "refused": {"type": ["string", "null"]}}, "required": ["undone", "left"]},
    annotations=types.ToolAnnotations(title="Undo session", read_only_hint=False,
                                      destructive_hint=True, idempotent_hint=True,
                                      open_world_hint=False))

TOOLS = (HISTORY, UNDO, UNDO_SESSION)
NAMES = frozenset(t.name for t in TOOLS)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _ok(data: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(data))],
                                structured_content=data, is_error=False)


async def call(brain: Brain, user_id: str, name: str, arguments: dict[str, Any] | None,
               *, batch: Batch | None = None) -> types.CallToolResult:
    args = arguments or {}
    allowed = {"history": {"note", "limit"}, "undo": {"change"}, "undo_session": set()}[name]
    if extra := sorted(set(args) - allowed):
        return _error(f"{name} takes no {', '.join(extra)}")
    if name == UNDO_SESSION.name:
        return await _undo_session(brain, user_id, batch)
    store = brain.store_for(user_id)
    try:
        if name == "history":
            note, limit = args.get("note"), args.get("limit", 20)
            if note is not None and (not isinstance(note, str) or not note.strip()):
                return _error("note must be a note's path, id or name")
            if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 200:
                return _error("limit must be a whole number from 1 to 200")
            changes = await store.changes(note, limit=limit)
            return _ok({"changes": [c.to_dict() for c in changes]})
        change = args.get("change")
        if change is not None and not isinstance(change, str):
            return _error("change must be a change id (7 to 40 hex characters)")
        return _ok((await store.undo(change)).to_dict())
    except StorageError as exc:
        return _error(exc.message)


async def _undo_session(brain: Brain, user_id: str, batch: Batch | None) -> types.CallToolResult:
    """The session's changes put back newest first; each one undone leaves the batch, so a
    second call goes on from where a refusal stopped the first."""
    if batch is None:
        return _error("undo_session needs a session")
    undone: list[dict[str, Any]] = []

    async def left_batch(change: str, put_back: Change) -> None:
        batch.changes.remove(change)
        undone.append(put_back.to_dict())

    refused = None
    try:
        await brain.note_actions.undo_all(user_id=user_id, changes=list(batch.changes),
                                     undone=left_batch)
    except StorageError as exc:
        refused = exc.message
    return _ok({"undone": undone, "left": len(batch.changes), "refused": refused})
