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

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from storage import repositories
from storage.db import Database
from storage.digest_data import claim_digest_slot
from storage.repositories import SubscriptionRow

log = logging.getLogger(__name__)

MISSED_GRACE = timedelta(hours=3)
DEFAULT_DAILY = (8, 0)
DEFAULT_WEEKLY = (0, 9, 0)  # Monday 09:00
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

Deliver = Callable[[SubscriptionRow, datetime], Awaitable[None]]

USAGE = (
    "Usage: /digest daily | weekly (show one now)\n"
    "       /digest subscribe daily [HH:MM]        (default 08:00, your time zone)\n"
    "       /digest subscribe weekly [DAY HH:MM]   (default mon 09:00)\n"
    "       /digest off [daily|weekly]             (stop scheduled digests)\n"
    "       /digest status"
)


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


class DigestScheduler:
    """Polls the subscriptions and delivers what is due. `deliver(sub, slot)` gets the slot
    as an aware datetime in the user's zone (`slot.date()` is the digest's day)."""

    def __init__(self, db: Database, deliver: Deliver, clock: Callable[[], datetime],
                 poll_seconds: float = 60) -> None:
        self.db = db
        self.deliver = deliver
        self.clock = clock
        self.poll_seconds = poll_seconds
        self._stop = asyncio.Event()

    async def tick(self) -> list[tuple[SubscriptionRow, datetime]]:
        """Send every due digest once; returns what was sent (claimed and delivered)."""
        now = self.clock()
        if now.tzinfo is None:
            raise ValueError("the scheduler clock must return aware datetimes")
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

    async def run(self) -> None:
        """Tick until stop(); the first tick runs at once (catches up a missed digest)."""
        self._stop.clear()
        while not self._stop.is_set():
            try:
                await self.tick()
            except Exception:
                log.exception("digest scheduler tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self.poll_seconds)

    def stop(self) -> None:
        self._stop.set()


# -- the /digest subscribe | off | status command --------------------------------------------

_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def _parse_time(text: str) -> tuple[int, int] | None:
    m = _TIME.match(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _parse_weekday(text: str) -> int | None:
    word = text.lower()
    if len(word) < 3:
        return None
    for i, name in enumerate(WEEKDAYS):
        if name.startswith(word):
            return i
    return None


def describe(sub: SubscriptionRow) -> str:
    when = f"{sub.hour:02d}:{sub.minute:02d} ({sub.tz})"
    if sub.kind == "weekly" and sub.weekday is not None:
        return f"weekly on {WEEKDAYS[sub.weekday].capitalize()} at {when}"
    return f"daily at {when}"


async def digest_command(db: Database, user_id: str, text: str, *, channel: str | None,
                         tz: str) -> str:
    """`/digest subscribe daily [HH:MM]`, `subscribe weekly [DAY HH:MM]`, `off [kind]`,
    `status`. Returns the reply; bad input gets the usage and changes nothing."""
    words = text.split()
    verb = words[0].lower() if words else ""
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        return f"Unknown time zone {tz!r}; set your time zone in Slack and try again."
    if verb == "subscribe" and len(words) >= 2 and words[1].lower() in ("daily", "weekly"):
        kind, rest = words[1].lower(), words[2:]
        weekday: int | None = None
        if kind == "daily":
            parsed = _parse_time(rest[0]) if len(rest) == 1 else None
            if rest and parsed is None:
                return f"Not a time: {' '.join(rest)!r} (use HH:MM, e.g. 07:30).\n{USAGE}"
            hour, minute = parsed or DEFAULT_DAILY
        else:
            weekday, hour, minute = DEFAULT_WEEKLY
            if rest:
                day = _parse_weekday(rest[0])
                at = _parse_time(rest[1]) if len(rest) == 2 else (
                    (hour, minute) if len(rest) == 1 else None)
                if day is None or at is None:
                    return (f"Not a day and time: {' '.join(rest)!r} "
                            f"(use e.g. fri 16:00).\n{USAGE}")
                weekday, (hour, minute) = day, at
        async with db.session() as s:
            sub = await repositories.upsert_subscription(s, user_id, kind, hour, minute,
                                                         weekday, tz, channel)
            await s.commit()
        now = datetime.now(UTC)
        nxt = next_slot(sub, now)
        return (f"You will get a {describe(sub)}. Next one: "
                f"{nxt.strftime('%a %d %b %H:%M')}.")
    if verb == "off" and len(words) <= 2:
        kind_off = words[1].lower() if len(words) == 2 else None
        if kind_off not in (None, "daily", "weekly"):
            return f"Not a digest kind: {words[1]!r}.\n{USAGE}"
        async with db.session() as s:
            gone = await repositories.delete_subscriptions(s, user_id, kind_off)
            await s.commit()
        what = f"{kind_off} digest" if kind_off else "digests"
        return f"Scheduled {what} turned off." if gone else f"You had no scheduled {what}."
    if verb == "status" and len(words) == 1:
        async with db.session() as s:
            mine = [x for x in await repositories.list_subscriptions(s) if x.user_id == user_id]
        if not mine:
            return "No scheduled digests. Try `/digest subscribe daily 08:00`."
        return "Scheduled: " + "; ".join(describe(x) for x in mine) + "."
    return USAGE

