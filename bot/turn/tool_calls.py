"""Tools run for a person: the one place a `ToolContext` is built (for a turn's calls, a
saved message, an MCP client's call, a reminder's button), and one tool called directly
outside a conversation, through the same registry the model's calls go through, so the
validation and error results are exactly the ones the model gets.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from bot.core import Core
from bot.digest.service import Digests
from storage.history import Tally
from tools.base import ToolContext, ToolDeps
from tools.readers.sections import Read
from tools.registry import Execution, execute
from tools.web.links import shared_links


@dataclass(frozen=True)
class Batch:
    """The writes of one MCP session: bounded (BRAIN_MCP_MAX_WRITES within any
    BRAIN_MCP_WRITE_WINDOW seconds) and kept together, so one Undo puts them all back."""

    tally: Tally
    over_cap: str

    @property
    def changes(self) -> list[str]:
        """The history's ids of the session's changes, oldest first."""
        return self.tally.changes


class ToolCalls:
    def __init__(self, core: Core, digests: Digests) -> None:
        self.core = core
        self.digests = digests

    def context(self, user_id: str, **fields: Any) -> ToolContext:
        """The context a tool runs in for `user_id`: their Store, the confidence threshold,
        the zone, the classifier's nearest-notes hook and the digest engine; `fields` say
        where the call comes from (conversation, turn, job, Slack thread)."""
        core = self.core
        store = core.store_for(user_id)
        settings = core.settings

        async def read_links(urls: list[str]) -> Read:
            return await shared_links(urls, allow_hosts=settings.fetch_allow_hosts,
                                      limits=settings.reader_limits(user_id))

        deps = ToolDeps(store=store, db=core.db, user_id=user_id,
                        confidence_threshold=settings.confidence_threshold,
                        tz=settings.tz, similar=core.stores.turn_similar(store),
                        make_digest=self.digests.maker(store, user_id), read_links=read_links)
        return ToolContext(deps=deps, **fields)

    def batch(self) -> Batch:
        """A new MCP session's bound on writes, from the settings."""
        limit, window = self.core.settings.mcp_max_writes, self.core.settings.mcp_write_window
        minutes = f"{window / 60:g} minutes" if window >= 60 else f"{window:g} seconds"
        return Batch(Tally(limit=limit, window=window), over_cap=(
            f"this session made {limit} changes in the last {minutes}, the most one session "
            "may make (BRAIN_MCP_MAX_WRITES, BRAIN_MCP_WRITE_WINDOW); this call changed "
            "nothing. Call undo_session to put this session's changes back, or try again "
            "later."))

    async def call(self, *, user_id: str, name: str, arguments: dict[str, Any] | None,
                   source: str = "mcp", batch: Batch | None = None) -> Execution:
        """Run one tool for `user_id` outside a conversation (an MCP client, a button); a
        capture writes its receipt like any other. With `batch` (an MCP session's) its
        writes count there, and are refused past its bound."""
        bound = {} if batch is None else {"tally": batch.tally, "over_cap": batch.over_cap}
        ctx = self.context(user_id, source=source, **bound)
        return await execute(ctx, f"{source}_{uuid.uuid4().hex[:12]}", name, arguments)
