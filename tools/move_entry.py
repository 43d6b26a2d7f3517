"""move_entry: re-file a note to another category (a correction)."""

from __future__ import annotations

from typing import Any

from storage import repositories
from tools.base import CATEGORY_ENUM, REF_SCHEMA, Tool, ToolContext, ToolOutput

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": REF_SCHEMA,
        "targetCategory": {"type": "string", "enum": CATEGORY_ENUM},
    },
    "required": ["path", "targetCategory"],
    "additionalProperties": False,
}

DESCRIPTION = (
    'Move a note to another category. Use for corrections ("actually that\'s a project") '
    "or to file an inbox note."
)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    target: str = args["targetCategory"]
    result = await ctx.store.move(args["path"], target)
    entry_id = result.entry.id
    if entry_id:
        # The receipt follows the note, so cards and digests see the correction.
        # A hand-written note has no receipt; mark_capture then changes nothing.
        async with ctx.db.session() as session:
            await repositories.mark_capture(session, entry_id, "fixed",
                                            path=result.new_path, category=target)
            await session.commit()
    data = result.to_dict()
    data["name"] = result.entry.name
    return ToolOutput(kind="move", data=data,
                      text=f"Moved {result.entry.name} to {target} ({result.new_path})")


TOOL = Tool(name="move_entry", description=DESCRIPTION, parameters=SCHEMA, run=run,
            terminal=True, read_only=False)
