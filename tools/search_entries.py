"""search_entries: full-text and fuzzy search over the vault."""

from __future__ import annotations

from typing import Any

from tools.base import CATEGORY_ENUM, LIMIT_SCHEMA, Tool, ToolContext, ToolOutput, limit_arg

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 500,
                  "description": "Words or a name to look for"},
        "category": {"type": "string", "enum": CATEGORY_ENUM},
        "limit": LIMIT_SCHEMA,
    },
    "required": ["query"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Find notes by words or names (typos ok). Use to answer questions, or to locate a "
    "note before reading, updating or moving it."
)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    query: str = args["query"]
    category = args.get("category")
    limit = limit_arg(args)
    result = await ctx.deps.store.search(query, category=category, limit=limit)
    data = result.to_dict()
    data["query"] = query
    if category:
        data["category"] = category
    text = f"{result.total} match(es) for \"{query}\""
    return ToolOutput(kind="search", data=data, text=text)


TOOL = Tool(name="search_entries", description=DESCRIPTION, parameters=SCHEMA, run=run)
