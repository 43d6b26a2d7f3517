"""Digest subscriptions and the scheduler that sends them.

A subscription fires at HH:MM in the user's own time zone (daily, or weekly on one weekday).
The scheduler polls: for each subscription it takes the latest slot at or before now; the
slot is due when it is after the last send (or, for a new subscription, after its creation).
A due slot less than MISSED_GRACE late is sent (so one missed while the bot was down goes out
once at start); an older one is skipped and the next slot is waited for.

Never twice: the slot is claimed in the database (compare-and-set on `last_sent_at`,
committed) before delivery. That makes sending at most once per slot, across restarts and
replicas; a delivery that fails after the claim is logged and not retried, since a duplicate
digest is worse than a missed one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.schedule.ticker import Ticker
from storage import repositories
from storage.db import Database
from storage.repositories import SubscriptionRow
from storage.repositories.digest_data import claim_digest_slot

log = logging.getLogger(__name__)

MISSED_GRACE = timedelta(hours=3)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

Deliver = Callable[[SubscriptionRow, datetime], Awaitable[None]]

def latest_slot(sub: SubscriptionRow, now: datetime) -> datetime:
    """The latest scheduled time at or before `now`, aware, in the subscription's zone."""
    zone = ZoneInfo(sub.tz)
    local = now.astimezone(zone)
    day = local.date()
    at = time(sub.hour, sub.minute)
    if sub.kind == "weekly" and sub.weekday is not None:
        day -= timedelta(days=(day.weekday() - sub.weekday) % 7)
    slot = datetime.combine(day, at, tzinfo=zone)
    step = timedelta(days=7 if sub.kind == "weekly" else 1)
    while slot > local:
        slot = datetime.combine(slot.date() - step, at, tzinfo=zone)
    return slot


def next_slot(sub: SubscriptionRow, now: datetime) -> datetime:
    slot = latest_slot(sub, now)
    step = timedelta(days=7 if sub.kind == "weekly" else 1)
    return datetime.combine(slot.date() + step, time(sub.hour, sub.minute), tzinfo=slot.tzinfo)


def due_slot(sub: SubscriptionRow, now: datetime) -> datetime | None:
    """The slot to send now, or None (not due yet, already sent, or missed by too much)."""
    slot = latest_slot(sub, now)
    baseline = sub.last_sent_at or sub.created_at
    if slot <= baseline and not (sub.last_sent_at is None and slot == baseline):
        return None
    if now - slot >= MISSED_GRACE:
        return None  # skipped; the next slot will be sent
    return slot


class DigestScheduler(Ticker):
    """Polls the subscriptions and delivers what is due. `deliver(sub, slot)` gets the slot
    as an aware datetime in the user's zone (`slot.date()` is the digest's day)."""

    what = "digest scheduler"

    def __init__(self, db: Database, deliver: Deliver, clock: Callable[[], datetime],
                 poll_seconds: float = 60) -> None:
        super().__init__(clock, poll_seconds)
        self.db = db
        self.deliver = deliver

    async def tick(self) -> list[tuple[SubscriptionRow, datetime]]:
        """Send every due digest once; returns what was sent (claimed and delivered)."""
        now = self.now()
        async with self.db.session() as s:
            subs = await repositories.list_subscriptions(s)
        sent = []
        for sub in subs:
            try:
                slot = due_slot(sub, now)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                log.warning("digest subscription %s has a bad schedule: %s", sub.id, exc)
                continue
            if slot is None:
                continue
            async with self.db.session() as s:
                claimed = await claim_digest_slot(s, sub.id, slot)
                await s.commit()
            if not claimed:
                continue  # another tick or replica took it
            try:
                await self.deliver(sub, slot)
            except Exception:  # one user's failure must not stop the others
                log.exception("digest %s for %s at %s was not delivered",
                              sub.kind, sub.user_id, slot.isoformat())
                continue
            sent.append((sub, slot))
        return sent


def describe(sub: SubscriptionRow) -> str:
    when = f"{sub.hour:02d}:{sub.minute:02d} ({sub.tz})"
    if sub.kind == "weekly" and sub.weekday is not None:
        return f"weekly on {WEEKDAYS[sub.weekday].capitalize()} at {when}"
    return f"daily at {when}"
