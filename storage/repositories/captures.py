"""Captures: the receipt of every capture (what was filed where, with what confidence)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import InvalidValue, NotFound
from storage.models import Capture, utcnow
from storage.repositories.common import aware, not_empty, one_of, rowcount

CAPTURE_STATUSES = ("filed", "needs_review", "fixed")


@dataclass(frozen=True)
class CaptureRow:
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



def _capture(c: Capture) -> CaptureRow:
    return CaptureRow(c.id, c.user_id, c.conversation_id, c.turn_id, c.original_text,
                      c.entry_id, c.path, c.category, c.confidence, c.status, c.channel,
                      c.thread_ts, c.message_ts, c.created_at, c.updated_at)


# --- captures -------------------------------------------------------------------------------


async def add_capture(s: AsyncSession, *, user_id: str, original_text: str, entry_id: str,
                      path: str, category: str, confidence: float | None, status: str,
                      conversation_id: int | None = None, turn_id: int | None = None,
                      channel: str | None = None, thread_ts: str | None = None,
                      job_id: int | None = None) -> int:
    """The receipt of a capture. A capture made by a job that runs again (after a crash) has
    the same entry id: the first receipt stands and its id is returned."""
    one_of(status, CAPTURE_STATUSES, "capture status")
    not_empty(user_id, "user_id")
    not_empty(entry_id, "entry_id")
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise InvalidValue(f"confidence must be between 0 and 1, not {confidence!r}")
    if job_id is not None:
        existing = await s.scalar(select(Capture.id).where(Capture.job_id == job_id,
                                                           Capture.entry_id == entry_id))
        if existing is not None:
            return int(existing)
    now = utcnow()
    capture = Capture(user_id=user_id, original_text=original_text, entry_id=entry_id, path=path,
                      category=category, confidence=confidence, status=status,
                      conversation_id=conversation_id, turn_id=turn_id, channel=channel,
                      thread_ts=thread_ts, created_at=now, updated_at=now, job_id=job_id)
    s.add(capture)
    await s.flush()
    return capture.id


async def set_capture_message(s: AsyncSession, capture_id: int, message_ts: str) -> None:
    """Remember the Slack message that shows the receipt, to update it in place later."""
    result = await s.execute(update(Capture).where(Capture.id == capture_id)
                             .values(message_ts=message_ts, updated_at=utcnow()))
    if rowcount(result) == 0:
        raise NotFound(f"no capture {capture_id}")


async def captures_for_conversation(s: AsyncSession, conversation_id: int) -> list[CaptureRow]:
    """The captures filed in a conversation, in the order they were made."""
    rows = await s.scalars(select(Capture).where(Capture.conversation_id == conversation_id)
                           .order_by(Capture.id))
    return [_capture(c) for c in rows]


async def capture_for_entry(s: AsyncSession, entry_id: str) -> CaptureRow | None:
    """The latest capture that filed `entry_id`."""
    found = await s.scalar(select(Capture).where(Capture.entry_id == entry_id)
                           .order_by(Capture.id.desc()).limit(1))
    return _capture(found) if found is not None else None


async def mark_capture(s: AsyncSession, entry_id: str, status: str, path: str | None = None,
                       category: str | None = None) -> CaptureRow | None:
    """Set the status (and where the entry now is) on the captures of `entry_id`; returns the
    latest one, or None when the entry was not captured by us (a hand-written note)."""
    one_of(status, CAPTURE_STATUSES, "capture status")
    values: dict[str, Any] = {"status": status, "updated_at": utcnow()}
    if path is not None:
        values["path"] = path
    if category is not None:
        values["category"] = category
    await s.execute(update(Capture).where(Capture.entry_id == entry_id).values(**values))
    # The bulk update leaves loaded objects stale; read the row fresh.
    found = await s.scalar(select(Capture).where(Capture.entry_id == entry_id)
                           .order_by(Capture.id.desc()).limit(1)
                           .execution_options(populate_existing=True))
    return _capture(found) if found is not None else None


async def drop_captures(s: AsyncSession, entry_id: str) -> int:
    """Remove the receipts of `entry_id` (a capture whose note could not be written after its
    receipt was); returns how many went."""
    return rowcount(await s.execute(delete(Capture).where(Capture.entry_id == entry_id)))


async def captures_since(s: AsyncSession, user_id: str, since: datetime,
                         limit: int = 50) -> list[CaptureRow]:
    """The user's captures made at or after `since`, newest first."""
    aware(since, "since")
    rows = await s.scalars(select(Capture)
                           .where(Capture.user_id == user_id, Capture.created_at >= since)
                           .order_by(Capture.created_at.desc(), Capture.id.desc()).limit(limit))
    return [_capture(c) for c in rows]


