"""News of someone who already has a note goes into that note: "Sara mentioned she is moving
to Berlin" adds a dated line to people/sara.md instead of filing a second note named Sara.

A person is known when exactly one people note carries the name (as its name or an alias, in
any case); two people of the same name, or a name that only some other note carries, and the
thought is filed as a new note as before (with a link to the related ones). A job that runs
again adds the line once. The change is in the vault's history, so the reply's *Undo changes*
takes it back.
"""

from __future__ import annotations

from storage.errors import StorageError
from storage.types import Entry
from tools.base import ToolContext, ToolOutput, entry_data
from tools.rules.dates import today_in


async def known_person(ctx: ToolContext, name: str) -> Entry | None:
    """The one people note that `name` names, or None."""
    wanted = name.strip().casefold()
    if not wanted:
        return None
    try:
        entry = await ctx.deps.store.get(name)
    except StorageError:  # no note, or several: not one known person
        return None
    aliases = entry.fields.get("aliases")
    names = {entry.name.casefold(),
             *(str(a).casefold() for a in (aliases if isinstance(aliases, list) else []))}
    return entry if entry.category == "people" and wanted in names else None


async def add_to_person(ctx: ToolContext, person: Entry, text: str) -> ToolOutput:
    """The thought as a dated line of the person's note (once), and last_touched today."""
    today = today_in(ctx.deps.tz).isoformat()
    entry = person
    if text.strip() in person.body and not ctx.retried:  # the same news again: said so
        return ToolOutput(kind="entry", data=entry_data(person), text=(
            f"Already in {person.name}'s note ({person.path}); nothing new was saved."))
    if text.strip() not in person.body:  # (a retried job finds its line there)
        entry = await ctx.deps.store.update(person.path, {"last_touched": today},
                                       append_body=f"- {today}: {text.strip()}")
    data = entry_data(entry)
    data["added"] = text.strip()
    return ToolOutput(kind="update", data=data,
                      text=f"Added to {entry.name} (people), who has a note already: "
                           f"{entry.path}")
