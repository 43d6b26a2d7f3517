"""list_entries: browse notes by category and status, newest first."""

from __future__ import annotations

from typing import Any

from tools.base import CATEGORY_ENUM, LIMIT_SCHEMA, Tool, ToolContext, ToolOutput, limit_arg

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": CATEGORY_ENUM},
        "status": {"type": "string", "minLength": 1, "maxLength": 20,
                   "description": "e.g. active, waiting, todo, done"},
        "limit": LIMIT_SCHEMA,
    },
    "additionalProperties": False,
}

DESCRIPTION = (
    'List notes newest first, filtered by category and/or status. Use for "what\'s '
    'active?", "show my inbox", open tasks.'
)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    category = args.get("category")
    status = args.get("status")
    limit = limit_arg(args)
    result = await ctx.deps.store.list(category=category, status=status, limit=limit)
    data = result.to_dict()
    data["filters"] = {"category": category, "status": status, "limit": limit}
    what = " ".join(x for x in (status, category) if x) or "notes"
    text = f"{len(result.entries)} of {result.total} {what}"
    return ToolOutput(kind="list", data=data, text=text)


TOOL = Tool(name="list_entries", description=DESCRIPTION, parameters=SCHEMA, run=run)
