"""The same thought sent twice in a short while is filed once.

A message sent again within REPEAT_WINDOW, word for word (spaces and case aside), while the
note it made is still there and not done, is a repeat: a double send, a resend after a slow
reply, a script run twice. It makes no second note (no `sara-2.md`): the reply names the note
that holds it. After the window, or once that note is done, undone or gone, the same words
are a new thought ("Buy milk" next week) and are filed again. A message with files or links
is always filed (what it shares may differ). Two identical messages worked on at the very
same moment in two processes may still both be filed: this finds what was filed before.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from tools.base import ToolContext, ToolOutput, entry_data

if TYPE_CHECKING:
    from storage.repositories.receipts import ReceiptRow

log = logging.getLogger(__name__)

REPEAT_WINDOW = timedelta(minutes=10)


def same_words(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def window_start() -> datetime:
    """The receipts made since this moment are the ones a repeat is looked for in."""
    return datetime.now(UTC) - REPEAT_WINDOW


async def filed_already(ctx: ToolContext, text: str, entry_id: str | None = None,
                        recent: list[ReceiptRow] | None = None) -> ToolOutput | None:
    """The note the same message made within the window, as the reply to a repeat; None
    when this is not one. `entry_id`: the id this capture's note gets (another attempt of
    the same job made it: not a repeat). `recent`: the person's receipts since
    `window_start()`, when the caller read them already. Never fails the capture: on an
    error, None."""
    try:
        return await _filed_already(ctx, text, entry_id, recent)
    except Exception:
        log.warning("could not look for an earlier capture of the same words", exc_info=True)
        return None


async def _filed_already(ctx: ToolContext, text: str, entry_id: str | None,
                         recent: list[ReceiptRow] | None) -> ToolOutput | None:
    now = datetime.now(UTC)
    if recent is None:
        recent = await ctx.deps.receipts.since(ctx.deps.user_id, now - REPEAT_WINDOW)
    for receipt in recent:
        if not receipt.entry_id or receipt.entry_id == entry_id \
                or not same_words(receipt.original_text, text):
            continue
        entry = await ctx.deps.store.find_id(receipt.entry_id, look_hard=False)
        if entry is None or entry.path.startswith(".") or entry.fields.get("status") == "done":
            continue
        minutes = int((now - receipt.created_at).total_seconds() // 60)
        ago = "just now" if minutes < 1 else f"{minutes} minute{'s' * (minutes > 1)} ago"
        data = entry_data(entry)
        data["repeat_of"] = receipt.created_at.isoformat()
        return ToolOutput(kind="entry", data=data, text=(
            f"Already in your notes: {entry.name} [{entry.path}], from the same message "
            f"{ago}; nothing new was saved."))
    return None
