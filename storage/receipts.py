"""Capture receipts, in one place: what was filed where, with what confidence, and what
became of it (fixed by a move or an undo), and which Slack message shows it.

Every writer and reader of receipts (the capture, a move, an undo, a save, the turn that
lists its thread's notes, the Slack card) goes through `Receipts`; the rows themselves are
`storage/repositories/captures.py`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from storage import repositories
from storage.db import Database
from storage.repositories import CaptureRow

log = logging.getLogger(__name__)


class Receipts:
    def __init__(self, db: Database) -> None:
        self.db = db

    @asynccontextmanager
    async def _session(self, session: AsyncSession | None) -> AsyncIterator[AsyncSession]:
        if session is not None:  # the caller's transaction: it commits
            yield session
            return
        async with self.db.session() as s:
            yield s
            await s.commit()

    async def record(self, *, user_id: str, original_text: str, entry_id: str, path: str,
                     category: str, confidence: float | None, status: str,
                     conversation_id: int | None = None, turn_id: int | None = None,
                     channel: str | None = None, thread_ts: str | None = None,
                     job_id: int | None = None) -> bool:
        """The receipt of a capture whose note is already on disk. A failure is logged and
        returned as False, never raised: the note stands, and a caller that raised would make
        the model capture the thought a second time."""
        try:
            async with self._session(None) as s:
                await repositories.add_capture(
                    s, user_id=user_id, original_text=original_text, entry_id=entry_id,
                    path=path, category=category, confidence=confidence, status=status,
                    conversation_id=conversation_id, turn_id=turn_id, channel=channel,
                    thread_ts=thread_ts, job_id=job_id)
            return True
        except Exception:
            log.exception("capture receipt for %s not recorded", path)
            return False

    async def fixed(self, entry_id: str, *, path: str, category: str) -> CaptureRow | None:
        """The note was re-filed (a move) or undone (category "trash"): its receipt follows.
        None when we never captured it (a hand-written note): nothing changes then."""
        async with self._session(None) as s:
            return await repositories.mark_capture(s, entry_id, "fixed", path=path,
                                                   category=category)

    async def placed(self, entry_id: str, *, path: str, category: str, status: str) -> bool:
        """A capture's note was written somewhere else than its receipt said (the receipt is
        written first: storage/vault/ids.py), or written again after it was deleted by hand. A
        failure is logged and returned as False, as `record`'s."""
        try:
            async with self._session(None) as s:
                await repositories.mark_capture(s, entry_id, status, path=path,
                                                category=category)
            return True
        except Exception:
            log.exception("capture receipt for %s not moved to %s", entry_id, path)
            return False

    async def drop(self, entry_id: str) -> None:
        """The note of a receipt written first could not be written: the receipt goes."""
        async with self._session(None) as s:
            await repositories.drop_captures(s, entry_id)

    async def since(self, user_id: str, since: datetime, limit: int = 50) -> list[CaptureRow]:
        """The person's receipts made at or after `since`, newest first."""
        async with self.db.session() as s:
            return await repositories.captures_since(s, user_id, since, limit=limit)

    async def for_entry(self, entry_id: str) -> CaptureRow | None:
        """The latest receipt of the note `entry_id`."""
        async with self.db.session() as s:
            return await repositories.capture_for_entry(s, entry_id)

    async def for_conversation(self, conversation_id: int, *,
                               session: AsyncSession | None = None) -> list[CaptureRow]:
        """The receipts of a conversation, oldest first (in the caller's transaction if given)."""
        async with self._session(session) as s:
            return await repositories.captures_for_conversation(s, conversation_id)

    async def shown_in(self, capture_id: int, message_ts: str, *,
                       session: AsyncSession | None = None) -> None:
        """Remember the Slack message that shows the receipt (to update it in place later)."""
        async with self._session(session) as s:
            await repositories.set_capture_message(s, capture_id, message_ts)

    async def for_entry_in(self, session: AsyncSession, entry_id: str) -> CaptureRow | None:
        """`for_entry`, in the caller's transaction."""
        return await repositories.capture_for_entry(session, entry_id)
