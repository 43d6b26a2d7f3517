"""generate_digest: a daily or weekly review of the vault."""

from __future__ import annotations

from typing import Any

from tools.base import Tool, ToolContext, ToolOutput

MAX_ITEMS = 10

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"type": {"type": "string", "enum": ["daily", "weekly"]}},
    "required": ["type"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Build a daily (today's focus) or weekly (review) digest. Use when asked for a "
    "digest, summary or review."
)


async def _basic_daily(ctx: ToolContext) -> dict[str, Any]:
    """Without the digest engine: active projects with their next actions, open admin."""
    projects = await ctx.deps.store.list(category="projects", status="active", limit=MAX_ITEMS)
    admin = await ctx.deps.store.list(category="admin", status="todo", limit=MAX_ITEMS)
    summary = await ctx.deps.store.summary()
    items: list[dict[str, Any]] = []
    for row in [*projects.entries, *admin.entries][:MAX_ITEMS]:
        # The index was just refreshed by list(); read the files directly for their fields.
        entry = ctx.deps.store.vault.read(row.path)
        items.append({"path": entry.path, "name": entry.name, "category": entry.category,
                      "next_action": entry.fields.get("next_action"),
                      "due_date": entry.fields.get("due_date")})
    return {"type": "daily", "focus": items, "active_projects": projects.total,
            "open_admin": admin.total, "inbox_count": summary.inbox_waiting}


async def _basic_weekly(ctx: ToolContext) -> dict[str, Any]:
    summary = await ctx.deps.store.summary()
    return {"type": "weekly", "counts": dict(summary.counts), "total": summary.total,
            "active_projects": list(summary.active_projects),
            "inbox_count": summary.inbox_waiting}


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    kind: str = args["type"]
    if ctx.deps.make_digest is not None:
        data = await ctx.deps.make_digest(kind)
        return ToolOutput(kind="digest", data=data, text=f"{kind.capitalize()} digest")
    if kind == "daily":
        data = await _basic_daily(ctx)
        text = (f"Daily digest: {len(data['focus'])} item(s) in focus, "
                f"{data['inbox_count']} in inbox")
    else:
        data = await _basic_weekly(ctx)
        text = f"Weekly digest: {data['total']} note(s), {data['inbox_count']} in inbox"
    return ToolOutput(kind="digest", data=data, text=text)


TOOL = Tool(name="generate_digest", description=DESCRIPTION, parameters=SCHEMA, run=run)
