"""Receipts: the record of every capture, in one place: what was filed where, with what
confidence, what became of it (fixed by a move or an undo), and which Slack message shows it.

Every writer and reader of receipts (the capture, a move, an undo, a saved message, the turn
that lists its thread's notes, the Slack card) goes through `Receipts`; the row functions below
take the caller's session."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.errors import InvalidValue, NotFound
from storage.models import Receipt, utcnow
from storage.repositories.common import aware, not_empty, one_of, rowcount
from storage.types import ReceiptDraft

RECEIPT_STATUSES = ("filed", "needs_review", "fixed")


@dataclass(frozen=True)
class ReceiptRow:
    id: int
    user_id: str
    conversation_id: int | None
    turn_id: int | None
    original_text: str
    entry_id: str
    path: str
    category: str
    confidence: float | None
    status: str
    channel: str | None
    thread_ts: str | None
    message_ts: str | None
    created_at: datetime
    updated_at: datetime



def _capture(c: Receipt) -> ReceiptRow:
    return ReceiptRow(c.id, c.user_id, c.conversation_id, c.turn_id, c.original_text,
                      c.entry_id, c.path, c.category, c.confidence, c.status, c.channel,
                      c.thread_ts, c.message_ts, c.created_at, c.updated_at)


# --- captures -------------------------------------------------------------------------------


async def add_receipt(s: AsyncSession, *, user_id: str, original_text: str, entry_id: str,
                      path: str, category: str, confidence: float | None, status: str,
                      conversation_id: int | None = None, turn_id: int | None = None,
                      channel: str | None = None, thread_ts: str | None = None,
                      job_id: int | None = None) -> int:
    """The receipt of a capture. A capture made by a job that runs again (after a crash) has
    the same entry id: the first receipt stands and its id is returned."""
    one_of(status, RECEIPT_STATUSES, "capture status")
    not_empty(user_id, "user_id")
    not_empty(entry_id, "entry_id")
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise InvalidValue(f"confidence must be between 0 and 1, not {confidence!r}")
    if job_id is not None:
        existing = await s.scalar(select(Receipt.id).where(Receipt.job_id == job_id,
                                                           Receipt.entry_id == entry_id))
        if existing is not None:
            return int(existing)
    now = utcnow()
    capture = Receipt(user_id=user_id, original_text=original_text, entry_id=entry_id, path=path,
                      category=category, confidence=confidence, status=status,
                      conversation_id=conversation_id, turn_id=turn_id, channel=channel,
                      thread_ts=thread_ts, created_at=now, updated_at=now, job_id=job_id)
    s.add(capture)
    await s.flush()
    return capture.id


async def set_receipt_message(s: AsyncSession, capture_id: int, message_ts: str) -> None:
    """Remember the Slack message that shows the receipt, to update it in place later."""
    result = await s.execute(update(Receipt).where(Receipt.id == capture_id)
                             .values(message_ts=message_ts, updated_at=utcnow()))
    if rowcount(result) == 0:
        raise NotFound(f"no capture {capture_id}")


async def receipts_for_conversation(s: AsyncSession, conversation_id: int) -> list[ReceiptRow]:
    """The captures filed in a conversation, in the order they were made."""
    rows = await s.scalars(select(Receipt).where(Receipt.conversation_id == conversation_id)
                           .order_by(Receipt.id))
    return [_capture(c) for c in rows]


async def receipt_for_entry(s: AsyncSession, entry_id: str) -> ReceiptRow | None:
    """The latest capture that filed `entry_id`."""
    found = await s.scalar(select(Receipt).where(Receipt.entry_id == entry_id)
                           .order_by(Receipt.id.desc()).limit(1))
    return _capture(found) if found is not None else None


async def mark_receipt(s: AsyncSession, entry_id: str, status: str, path: str | None = None,
                       category: str | None = None) -> ReceiptRow | None:
    """Set the status (and where the entry now is) on the captures of `entry_id`; returns the
    latest one, or None when the entry was not captured by us (a hand-written note)."""
    one_of(status, RECEIPT_STATUSES, "capture status")
    values: dict[str, Any] = {"status": status, "updated_at": utcnow()}
    if path is not None:
        values["path"] = path
    if category is not None:
        values["category"] = category
    await s.execute(update(Receipt).where(Receipt.entry_id == entry_id).values(**values))
    # The bulk update leaves loaded objects stale; read the row fresh.
    found = await s.scalar(select(Receipt).where(Receipt.entry_id == entry_id)
                           .order_by(Receipt.id.desc()).limit(1)
                           .execution_options(populate_existing=True))
    return _capture(found) if found is not None else None


async def drop_receipts(s: AsyncSession, entry_id: str) -> int:
    """Remove the receipts of `entry_id` (a capture whose note could not be written after its
    receipt was); returns how many went."""
    return rowcount(await s.execute(delete(Receipt).where(Receipt.entry_id == entry_id)))


async def receipts_since(s: AsyncSession, user_id: str, since: datetime,
                         limit: int = 50) -> list[ReceiptRow]:
    """The user's captures made at or after `since`, newest first."""
    aware(since, "since")
    rows = await s.scalars(select(Receipt)
                           .where(Receipt.user_id == user_id, Receipt.created_at >= since)
                           .order_by(Receipt.created_at.desc(), Receipt.id.desc()).limit(limit))
    return [_capture(c) for c in rows]


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

    @asynccontextmanager
    async def _committed(self, session: AsyncSession | None) -> AsyncIterator[AsyncSession]:
        """A write committed on the way out, in the caller's transaction if given (its reads
        and this write are one transaction); a failure rolls that transaction back."""
        if session is None:
            async with self._session(None) as s:
                yield s
            return
        try:
            yield session
            await session.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                await session.rollback()
            raise

    async def record(self, draft: ReceiptDraft, entry_id: str, path: str, *,
                     session: AsyncSession | None = None) -> bool:
        """The receipt of a capture whose note is (about to be) at `path`, committed (with the
        caller's `session`: its transaction). A failure is logged and returned as False, never
        raised: the note stands, and a caller that raised would make the model capture the
        thought a second time."""
        try:
            async with self._committed(session) as s:
                await add_receipt(
                    s, user_id=draft.user_id, original_text=draft.original_text,
                    entry_id=entry_id, path=path, category=draft.category,
                    confidence=draft.confidence, status=draft.status,
                    conversation_id=draft.conversation_id, turn_id=draft.turn_id,
                    channel=draft.channel, thread_ts=draft.thread_ts, job_id=draft.job_id)
            return True
        except Exception:
            log.exception("capture receipt for %s not recorded", path)
            return False

    async def fixed(self, entry_id: str, *, path: str, category: str) -> ReceiptRow | None:
        """The note was re-filed (a move) or undone (category "trash"): its receipt follows.
        None when we never captured it (a hand-written note): nothing changes then."""
        async with self._session(None) as s:
            return await mark_receipt(s, entry_id, "fixed", path=path,
                                                   category=category)

    async def placed(self, entry_id: str, *, path: str, category: str, status: str,
                     session: AsyncSession | None = None) -> bool:
        """A capture's note was written somewhere else than its receipt said (the receipt is
        written first: storage/vault/ids.py), or written again after it was deleted by hand. A
        failure is logged and returned as False, as `record`'s."""
        try:
            async with self._committed(session) as s:
                await mark_receipt(s, entry_id, status, path=path,
                                                category=category)
            return True
        except Exception:
            log.exception("capture receipt for %s not moved to %s", entry_id, path)
            return False

    async def held(self, entry_id: str, user_id: str) -> str | None:
        """Where the note this person's receipt of `entry_id` records is; None when no note
        was made under the id (or it was undone since: it may be made again)."""
        return _held_at(await self.for_entry(entry_id), user_id)

    async def held_with_recent(self, entry_id: str, user_id: str, since: datetime,
                               limit: int = 50) -> tuple[str | None, list[ReceiptRow] | None]:
        """`held`, and the person's receipts `since`, read in one transaction (the second
        None when its read failed: a caller that needs them reads them again)."""
        async with self.db.session() as s:
            row = await receipt_for_entry(s, entry_id)
            try:
                recent: list[ReceiptRow] | None = await receipts_since(s, user_id, since,
                                                                       limit=limit)
            except Exception:
                log.warning("could not read the receipts since %s", since, exc_info=True)
                recent = None
        return _held_at(row, user_id), recent

    async def drop(self, entry_id: str) -> None:
        """The note of a receipt written first could not be written: the receipt goes."""
        async with self._session(None) as s:
            await drop_receipts(s, entry_id)

    async def since(self, user_id: str, since: datetime, limit: int = 50) -> list[ReceiptRow]:
        """The person's receipts made at or after `since`, newest first."""
        async with self.db.session() as s:
            return await receipts_since(s, user_id, since, limit=limit)

    async def for_entry(self, entry_id: str) -> ReceiptRow | None:
        """The latest receipt of the note `entry_id`."""
        async with self.db.session() as s:
            return await receipt_for_entry(s, entry_id)

    async def for_conversation(self, conversation_id: int, *,
                               session: AsyncSession | None = None) -> list[ReceiptRow]:
        """The receipts of a conversation, oldest first (in the caller's transaction if given)."""
        async with self._session(session) as s:
            return await receipts_for_conversation(s, conversation_id)

    async def shown_in(self, capture_id: int, message_ts: str, *,
                       session: AsyncSession | None = None) -> None:
        """Remember the Slack message that shows the receipt (to update it in place later)."""
        async with self._session(session) as s:
            await set_receipt_message(s, capture_id, message_ts)

    async def for_entry_in(self, session: AsyncSession, entry_id: str) -> ReceiptRow | None:
        """`for_entry`, in the caller's transaction."""
        return await receipt_for_entry(session, entry_id)


def _held_at(row: ReceiptRow | None, user_id: str) -> str | None:
    """Where the note of this person's receipt `row` is; None: no note made under its id (or
    undone since)."""
    if row is None or row.user_id != user_id or row.category == "trash":
        return None
    return row.path


class ReceiptClaim:
    """A capture's claim on its derived id (storage/vault/ids.py `Claim`): its receipt,
    written before the note, moved with it, and the only thing that says the note was made."""

    def __init__(self, receipts: Receipts, draft: ReceiptDraft, entry_id: str) -> None:
        self.receipts, self.draft, self.entry_id = receipts, draft, entry_id
        self.known = False  # a receipt of the id is there (ours, or an earlier run's)
        self.mine = False  # this object wrote it
        self.ok = True  # False: it could not be written (logged); the note stands

    async def held(self, session: AsyncSession | None = None) -> str | None:
        row = await (self.receipts.for_entry(self.entry_id) if session is None
                     else self.receipts.for_entry_in(session, self.entry_id))
        if row is None or row.user_id != self.draft.user_id:
            return None
        self.known = True
        return None if row.category == "trash" else row.path  # undone: made again

    async def record(self, path: str, session: AsyncSession | None = None) -> None:
        if self.known:
            self.ok = await self.receipts.placed(self.entry_id, path=path,
                                                 category=self.draft.category,
                                                 status=self.draft.status, session=session)
            return
        self.ok = await self.receipts.record(self.draft, self.entry_id, path, session=session)
        self.known = self.mine = self.ok

    async def release(self) -> None:
        if self.mine:
            await self.receipts.drop(self.entry_id)
