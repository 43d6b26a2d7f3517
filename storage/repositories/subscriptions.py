"""Digest subscriptions: one per user and kind (daily, weekly), with when it was last sent and
when the scheduler next looks at it (`due_at`: the scheduler reads only the rows due, never
everyone's)."""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import InvalidValue, NotFound
from storage.models import DigestSubscription, utcnow
from storage.repositories.common import aware, dialect_insert, not_empty, one_of, rowcount

DIGEST_KINDS = ("daily", "weekly")


@dataclass(frozen=True)
class SubscriptionRow:
    id: int
    user_id: str
    kind: str
    weekday: int | None
    hour: int
    minute: int
    tz: str
    channel: str | None
    last_sent_at: datetime | None
    created_at: datetime
    due_at: datetime | None = None  # when the scheduler next looks (None: at its next tick)


def _subscription(d: DigestSubscription) -> SubscriptionRow:
    return SubscriptionRow(d.id, d.user_id, d.kind, d.weekday, d.hour, d.minute, d.tz,
                           d.channel, d.last_sent_at, d.created_at, d.due_at)



# --- digest subscriptions -------------------------------------------------------------------


def _check_subscription(kind: str, hour: int, minute: int, weekday: int | None,
                        tz: str) -> None:
    one_of(kind, DIGEST_KINDS, "digest kind")
    if not isinstance(hour, int) or not 0 <= hour <= 23:
        raise InvalidValue(f"hour must be 0..23, not {hour!r}")
    if not isinstance(minute, int) or not 0 <= minute <= 59:
        raise InvalidValue(f"minute must be 0..59, not {minute!r}")
    if kind == "weekly" and weekday is None:
        raise InvalidValue("a weekly digest needs a weekday (0 = Monday .. 6 = Sunday)")
    if weekday is not None and (not isinstance(weekday, int) or not 0 <= weekday <= 6):
        raise InvalidValue(f"weekday must be 0 (Monday) .. 6 (Sunday), not {weekday!r}")
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError) as exc:
        raise InvalidValue(f"unknown time zone {tz!r}") from exc


async def upsert_subscription(s: AsyncSession, user_id: str, kind: str, hour: int, minute: int,
                              weekday: int | None, tz: str,
                              channel: str | None) -> SubscriptionRow:
    """The user's one subscription of `kind`, created or changed. A daily digest ignores
    `weekday` (stored as None); `last_sent_at` is kept so a change does not resend today, and
    `due_at` is cleared so the scheduler works out the new schedule's next slot."""
    not_empty(user_id, "user_id")
    _check_subscription(kind, hour, minute, weekday, tz)
    if kind == "daily":
        weekday = None
    values = {"hour": hour, "minute": minute, "weekday": weekday, "tz": tz, "channel": channel,
              "due_at": None}
    stmt = dialect_insert(s, DigestSubscription)
    if stmt is not None:
        await s.execute(stmt.values(user_id=user_id, kind=kind, created_at=utcnow(), **values)
                        .on_conflict_do_update(index_elements=["user_id", "kind"], set_=values))
    else:
        result = await s.execute(update(DigestSubscription).where(
            DigestSubscription.user_id == user_id, DigestSubscription.kind == kind)
            .values(**values))
        if rowcount(result) == 0:
            s.add(DigestSubscription(user_id=user_id, kind=kind, created_at=utcnow(), **values))
            await s.flush()
    row = await s.scalar(select(DigestSubscription)
                         .where(DigestSubscription.user_id == user_id,
                                DigestSubscription.kind == kind)
                         .execution_options(populate_existing=True))
    assert row is not None
    return _subscription(row)


async def delete_subscriptions(s: AsyncSession, user_id: str, kind: str | None = None) -> int:
    """Remove the user's subscriptions (of one kind, or all); returns how many went."""
    query = delete(DigestSubscription).where(DigestSubscription.user_id == user_id)
    if kind is not None:
        one_of(kind, DIGEST_KINDS, "digest kind")
        query = query.where(DigestSubscription.kind == kind)
    result = await s.execute(query)
    return rowcount(result)


async def list_subscriptions(s: AsyncSession, user_id: str | None = None,
                             ) -> list[SubscriptionRow]:
    """One person's subscriptions (App Home, `/digest status`: an index probe), or without
    `user_id` everyone's (a whole-table read: the tests' look at the table; the scheduler
    reads only those due, `due_subscriptions`)."""
    query = select(DigestSubscription).order_by(DigestSubscription.id)
    if user_id is not None:
        query = query.where(DigestSubscription.user_id == user_id)
    return [_subscription(d) for d in await s.scalars(query)]


async def due_subscriptions(s: AsyncSession, now: datetime) -> list[SubscriptionRow]:
    """The subscriptions the scheduler looks at now: due by `due_at`, or never worked out
    (an index probe: the rows of people whose digest is not due are not read)."""
    aware(now, "now")
    # Ordered here: with ORDER BY id SQLite walks the table in id order instead of probing
    # the two ends of the index (tests/e2e/test_slack_query_plans.py).
    query = select(DigestSubscription).where(
        or_(DigestSubscription.due_at.is_(None), DigestSubscription.due_at <= now))
    return sorted((_subscription(d) for d in await s.scalars(query)), key=lambda r: r.id)


def unchanged(sub: SubscriptionRow) -> ColumnElement[bool]:
    """The row still has the schedule `sub` was read with (a change since clears `due_at`:
    what was worked out from the old one must not overwrite it)."""
    weekday = DigestSubscription.weekday
    return (DigestSubscription.id == sub.id) & (DigestSubscription.kind == sub.kind) \
        & (DigestSubscription.hour == sub.hour) & (DigestSubscription.minute == sub.minute) \
        & (DigestSubscription.tz == sub.tz) \
        & (weekday.is_(None) if sub.weekday is None else weekday == sub.weekday)


async def set_due(s: AsyncSession, sub: SubscriptionRow, due_at: datetime) -> bool:
    """Remember when `sub` is next due, unless its schedule changed since it was read."""
    aware(due_at, "due_at")
    result = await s.execute(update(DigestSubscription).where(unchanged(sub))
                             .values(due_at=due_at))
    return rowcount(result) == 1


async def mark_sent(s: AsyncSession, sub_id: int, sent_at: datetime) -> None:
    aware(sent_at, "sent_at")
    result = await s.execute(update(DigestSubscription).where(DigestSubscription.id == sub_id)
                             .values(last_sent_at=sent_at, due_at=None))
    if rowcount(result) == 0:
        raise NotFound(f"no digest subscription {sub_id}")
