"""list_backlinks: the notes that link to one note."""

from __future__ import annotations

from typing import Any

from tools.base import REF_SCHEMA, Tool, ToolContext, ToolOutput

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": REF_SCHEMA},
    "required": ["path"],
    "additionalProperties": False,
}

DESCRIPTION = (
    'List the notes that link to a note via [[wikilinks]]. Use for "what mentions X?".'
)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    result = await ctx.deps.store.backlinks(args["path"])
    text = f"{len(result.backlinks)} note(s) link to {result.target}"
    return ToolOutput(kind="backlinks", data=result.to_dict(), text=text)


TOOL = Tool(name="list_backlinks", description=DESCRIPTION, parameters=SCHEMA, run=run)
