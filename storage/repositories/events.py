"""Processed Slack events: claim an event id once (dedupe of retries), forget old ones."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import ProcessedEvent, utcnow
from storage.repositories.common import aware, dialect_insert, not_empty, rowcount

# --- processed events -----------------------------------------------------------------------


async def claim_event(s: AsyncSession, event_id: str) -> bool:
    """True the first time `event_id` is claimed, False ever after.

    Race-free through the primary key (`ON CONFLICT DO NOTHING`). The caller must commit right
    away: until then a concurrent claimer waits on the row, and a rollback un-claims it.
    """
    not_empty(event_id, "event_id")
    stmt = dialect_insert(s, ProcessedEvent)
    if stmt is not None:
        result = await s.execute(stmt.values(event_id=event_id, received_at=utcnow())
                                 .on_conflict_do_nothing(index_elements=["event_id"]))
        return bool(rowcount(result) == 1)
    try:
        async with s.begin_nested():
            s.add(ProcessedEvent(event_id=event_id, received_at=utcnow()))
    except IntegrityError:
        return False
    return True


async def prune_events(s: AsyncSession, older_than: datetime) -> int:
    """Forget events received before `older_than` (Slack retries come within minutes)."""
    aware(older_than, "older_than")
    result = await s.execute(delete(ProcessedEvent)
                             .where(ProcessedEvent.received_at < older_than))
    return rowcount(result)


