"""Digest subscriptions and the scheduler that sends them.

A subscription fires at HH:MM in the user's own time zone (daily, or weekly on one weekday).
The scheduler polls: for each subscription due by its `due_at` (or not worked out yet: new,
changed, or just sent) it takes the latest slot at or before now; the slot is due when it is
after the last send (or, for a new subscription, after its creation). A subscription not due
is given the next slot as its `due_at`, so a tick reads only the rows due then.
A due slot less than MISSED_GRACE late is sent (so one missed while the bot was down goes out
once at start); an older one is skipped and the next slot is waited for.

Once per slot: the slot is claimed in the database (compare-and-set on `last_sent_at`) in
the transaction that records its delivery as a job in the journal (`record`), so a slot is
claimed once across restarts and replicas, and the journal's workers make and post the
digests side by side (retried, posted once: bot/slack/handlers/digests.py), never one after
another in the tick.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.schedule.ticker import Ticker
from storage.db import Database
from storage.repositories import SubscriptionRow
from storage.repositories.digest_data import claim_digest_slot
from storage.repositories.subscriptions import due_subscriptions, set_due

log = logging.getLogger(__name__)

MISSED_GRACE = timedelta(hours=3)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# Records the delivery of a claimed slot, in the claim's transaction (`s`; not committed).
Record = Callable[[Any, SubscriptionRow, datetime], Awaitable[None]]

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
    """Polls the subscriptions due and records each due slot's delivery: `record(s, sub,
    slot)` gets the slot as an aware datetime in the user's zone (`slot.date()` is the
    digest's day); `wake()` tells the worker new jobs are there."""

    what = "digest scheduler"

    def __init__(self, db: Database, record: Record, clock: Callable[[], datetime],
                 poll_seconds: float = 60, wake: Callable[[], None] | None = None) -> None:
        super().__init__(clock, poll_seconds)
        self.db = db
        self.record = record
        self.wake = wake

    async def tick(self) -> list[tuple[SubscriptionRow, datetime]]:
        """Claim every due slot once and record its delivery; returns what was recorded.
        Reads only the subscriptions due by their `due_at` (or not worked out yet)."""
        now = self.now()
        async with self.db.session() as s:
            subs = await due_subscriptions(s, now)
        sent = []
        for sub in subs:
            try:
                slot = due_slot(sub, now)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                log.warning("digest subscription %s has a bad schedule: %s", sub.id, exc)
                continue
            try:
                if slot is None:  # sent, missed or too early: look again at the next slot
                    await self._next(sub, now)
                elif await self._claim(sub, slot):
                    sent.append((sub, slot))
            except Exception:  # one user's trouble must not stop the others; tried again
                log.exception("the %s digest for %s was not recorded", sub.kind, sub.user_id)
        if sent and self.wake is not None:
            self.wake()
        return sent

    async def _next(self, sub: SubscriptionRow, now: datetime) -> None:
        """Remember when the subscription is next due."""
        async with self.db.session() as s:
            await set_due(s, sub, next_slot(sub, now))
            await s.commit()

    async def _claim(self, sub: SubscriptionRow, slot: datetime) -> bool:
        """Claim `slot` and record its delivery in one transaction; False when another tick
        or replica took it."""
        async with self.db.session() as s:
            if not await claim_digest_slot(s, sub.id, slot):
                return False
            await self.record(s, sub, slot)
            await s.commit()
        return True


def describe(sub: SubscriptionRow) -> str:
    when = f"{sub.hour:02d}:{sub.minute:02d} ({sub.tz})"
    if sub.kind == "weekly" and sub.weekday is not None:
        return f"weekly on {WEEKDAYS[sub.weekday].capitalize()} at {when}"
    return f"daily at {when}"
