"""move_entry: re-file a note to another category (a correction)."""

from __future__ import annotations

from typing import Any

from storage.repositories.receipts import Receipts
from storage.types import MoveResult
from storage.vault.store import Store
from tools.base import CATEGORY_ENUM, REF_SCHEMA, Tool, ToolContext, ToolOutput

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": REF_SCHEMA,
        "target_category": {"type": "string", "enum": CATEGORY_ENUM},
    },
    "required": ["path", "target_category"],
    "additionalProperties": False,
}

DESCRIPTION = (
    'Move a note to another category. Use for corrections ("actually that\'s a project") '
    "or to file an inbox note."
)


async def move_note(store: Store, receipts: Receipts, ref: str, category: str) -> MoveResult:
    """The one way a note is re-filed (the tool, the buttons, `fix:`, `brain move`): the file
    moves and its capture receipt follows it, so cards and digests see the correction. A
    hand-written note has no receipt; marking it then changes nothing."""
    result = await store.move(ref, category)
    if result.entry.id:
        await receipts.fixed(result.entry.id, path=result.new_path, category=category)
    return result


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    target: str = args["target_category"]
    path = await ctx.deps.store.resolve(args["path"], by_words=True)  # one note, never a guess
    result = await move_note(ctx.deps.store, ctx.deps.receipts, path, target)
    data = result.to_dict()
    data["name"] = result.entry.name
    text = (f"Moved {result.entry.name} to {target} ({result.new_path})" if result.changed
            else f"{result.entry.name} is already in {target} ({result.new_path}); nothing moved")
    return ToolOutput(kind="move", data=data, text=text)


TOOL = Tool(name="move_entry", description=DESCRIPTION, parameters=SCHEMA, run=run,
            terminal=True, read_only=False)
