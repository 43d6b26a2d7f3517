"""get_entry: read one note in full (body capped)."""

from __future__ import annotations

from typing import Any

from tools.base import REF_SCHEMA, Tool, ToolContext, ToolOutput, entry_data

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": REF_SCHEMA},
    "required": ["path"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Read one note in full (fields and body). Use for questions about a specific note or "
    "before editing it."
)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    entry = await ctx.deps.store.get(args["path"])
    return ToolOutput(kind="entry", data=entry_data(entry), text=f"{entry.name} ({entry.path})")


TOOL = Tool(name="get_entry", description=DESCRIPTION, parameters=SCHEMA, run=run)
