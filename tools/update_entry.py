"""update_entry: change fields of one note and/or append to its body."""

from __future__ import annotations

from typing import Any

from tools.base import REF_SCHEMA, Tool, ToolContext, ToolError, ToolOutput, entry_data
from tools.rules.dates import today_in, with_dates

# Fields the bot owns: changing them would break links, receipts and buttons.
PROTECTED = ("id", "created", "path", "updated")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": REF_SCHEMA,
        "updates": {
            "type": "object",
            "description": "Fields to set, e.g. {\"status\": \"done\"}",
            "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z0-9_-]{0,39}$"},
            "maxProperties": 20,
            "additionalProperties": {
                "anyOf": [
                    {"type": ["string", "number", "boolean", "null"]},
                    {"type": "array", "items": {"type": "string"}},
                ],
            },
        },
        "append": {"type": "string", "maxLength": 4000, "description": "Text to add to the body"},
    },
    "required": ["path"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Change fields of an existing note (status, next_action, due_date, tags, name...) or "
    "append text to it. Use when the user adds to or corrects a note. Category changes: "
    "move_entry."
)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    updates: dict[str, Any] = dict(args.get("updates") or {})
    append: str | None = args.get("append")
    if append is not None and not append.strip():
        append = None
    if not updates and append is None:
        raise ToolError("invalid", "nothing to update: give updates or append")
    protected = sorted(k for k in updates if k in PROTECTED)
    if protected:
        raise ToolError("invalid", f"cannot change {', '.join(protected)}: set by the vault")
    if "category" in updates:
        raise ToolError("invalid", "cannot change category here: use move_entry")
    try:  # "tomorrow" becomes its day, as in a capture; "2026-13-45" is refused
        updates = with_dates(updates, today_in(ctx.deps.tz))
    except ValueError as exc:
        raise ToolError("invalid", str(exc)) from None
    path = await ctx.deps.store.resolve(args["path"], by_words=True)  # one note, never a guess
    entry = await ctx.deps.store.update(path, updates, append_body=append)
    changed = list(updates) + (["body"] if append else [])
    data = entry_data(entry)
    data["changed_fields"] = changed
    return ToolOutput(kind="update", data=data,
                      text=f"Updated {entry.name}: {', '.join(changed)}")


TOOL = Tool(name="update_entry", description=DESCRIPTION, parameters=SCHEMA, run=run,
            read_only=False)
