"""The digest schedule over a real SQLite database with a controllable clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.digest.command import digest_command
from bot.digest.schedule import (
    MISSED_GRACE,
    DigestScheduler,
    due_slot,
    latest_slot,
    next_slot,
)
from storage import repositories
from storage.db import Database
from storage.repositories import SubscriptionRow
from tests.databases import fresh_url


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(fresh_url(tmp_path))
    yield database
    await database.close()


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Outbox:
    """Records each delivery (in the claim's transaction, as the journal's job would be)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, datetime]] = []

    async def __call__(self, s: object, sub: SubscriptionRow, slot: datetime) -> None:
        self.sent.append((sub.user_id, sub.kind, slot))


async def subscribe(db: Database, user: str, kind: str, hour: int, minute: int, tz: str,
                    weekday: int | None = None, created: datetime | None = None) -> None:
    async with db.session() as s:
        sub = await repositories.upsert_subscription(s, user, kind, hour, minute, weekday, tz,
                                                     "D1")
        if created is not None:  # pretend it was made earlier
            await repositories.mark_sent(s, sub.id, created)
        await s.commit()


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


async def test_due_is_sent_once_and_not_before(db: Database) -> None:
    await subscribe(db, "U1", "daily", 8, 0, "UTC", created=utc(2026, 11, 1, 9))
    clock, out = Clock(utc(2026, 11, 2, 7, 59)), Outbox()
    sched = DigestScheduler(db, out, clock)
    assert await sched.tick() == []  # not due yet
    clock.now = utc(2026, 11, 2, 8, 0, 30)
    await sched.tick()
    await sched.tick()  # the same slot again: nothing
    clock.now = utc(2026, 11, 2, 20, 0)
    await sched.tick()
    assert out.sent == [("U1", "daily", datetime(2026, 11, 2, 8, tzinfo=ZoneInfo("UTC")))]
    clock.now = utc(2026, 11, 3, 8, 1)
    await sched.tick()
    assert [s[2].date().isoformat() for s in out.sent] == ["2026-11-02", "2026-11-03"]


async def test_new_subscription_waits_for_its_first_slot(db: Database) -> None:
    # Made two hours after today's slot: nothing today, the first digest comes tomorrow.
    async with db.session() as s:
        made = datetime.now(UTC)
        before = made - timedelta(hours=2)
        await repositories.upsert_subscription(s, "U1", "daily", before.hour, before.minute,
                                               None, "UTC", None)
        await s.commit()
    clock, out = Clock(made + timedelta(minutes=1)), Outbox()
    sched = DigestScheduler(db, out, clock)
    await sched.tick()
    assert out.sent == []
    clock.now = before + timedelta(days=1, seconds=30)
    await sched.tick()
    assert len(out.sent) == 1


async def test_missed_less_than_three_hours_is_sent_once_at_start(db: Database) -> None:
    await subscribe(db, "U1", "daily", 8, 0, "UTC", created=utc(2026, 11, 1, 9))
    out = Outbox()
    # The bot was down at 08:00 and starts at 10:30.
    first = DigestScheduler(db, out, Clock(utc(2026, 11, 2, 10, 30)))
    await first.tick()
    assert len(out.sent) == 1
    # A restart: a new scheduler over the same database does not send it again.
    second = DigestScheduler(db, out, Clock(utc(2026, 11, 2, 10, 31)))
    await second.tick()
    assert len(out.sent) == 1


async def test_missed_more_than_three_hours_is_skipped_to_the_next_slot(db: Database) -> None:
    await subscribe(db, "U1", "daily", 8, 0, "UTC", created=utc(2026, 11, 1, 9))
    clock, out = Clock(utc(2026, 11, 2, 11, 0)), Outbox()  # exactly 3 h late
    sched = DigestScheduler(db, out, clock)
    await sched.tick()
    clock.now = utc(2026, 11, 2, 23, 0)
    await sched.tick()
    assert out.sent == []
    clock.now = utc(2026, 11, 3, 8, 0)
    await sched.tick()
    assert [s[2].day for s in out.sent] == [3]


async def test_time_zones_new_york_and_tokyo(db: Database) -> None:
    start = utc(2026, 11, 1, 0)
    await subscribe(db, "NY", "daily", 8, 0, "America/New_York", created=start)
    await subscribe(db, "TK", "daily", 8, 0, "Asia/Tokyo", created=start)
    clock, out = Clock(utc(2026, 11, 2, 23, 0)), Outbox()  # 08:00 in Tokyo on the 3rd
    sched = DigestScheduler(db, out, clock)
    await sched.tick()
    assert [s[0] for s in out.sent] == ["TK"]
    assert out.sent[0][2] == datetime(2026, 11, 3, 8, tzinfo=ZoneInfo("Asia/Tokyo"))
    clock.now = utc(2026, 11, 3, 13, 0)  # 08:00 in New York (EST, UTC-5)
    await sched.tick()
    assert [s[0] for s in out.sent] == ["TK", "NY"]
    assert out.sent[1][2].date().isoformat() == "2026-11-03"


async def test_weekly_fires_on_its_weekday_only(db: Database) -> None:
    await subscribe(db, "U1", "weekly", 9, 0, "Europe/Berlin", weekday=4,
                    created=utc(2026, 11, 1, 0))
    clock, out = Clock(utc(2026, 11, 5, 8, 30)), Outbox()  # Thursday 09:30 Berlin
    sched = DigestScheduler(db, out, clock)
    await sched.tick()
    assert out.sent == []
    clock.now = utc(2026, 11, 6, 8, 5)  # Friday 09:05 Berlin
    await sched.tick()
    assert len(out.sent) == 1 and out.sent[0][2].weekday() == 4


async def test_a_failing_record_does_not_stop_others_and_leaves_its_slot_for_the_next_tick(
        db: Database) -> None:
    """The claim and the delivery's job are one transaction: when recording the job fails,
    the slot is not claimed either, and the next tick records it (once)."""
    await subscribe(db, "BAD", "daily", 8, 0, "UTC", created=utc(2026, 11, 1, 0))
    await subscribe(db, "OK", "daily", 8, 0, "UTC", created=utc(2026, 11, 1, 0))
    calls: list[str] = []

    async def record(s: object, sub: SubscriptionRow, slot: datetime) -> None:
        calls.append(sub.user_id)
        if sub.user_id == "BAD" and calls.count("BAD") == 1:
            raise RuntimeError("the database went away")

    sched = DigestScheduler(db, record, Clock(utc(2026, 11, 2, 8, 1)))
    first = await sched.tick()
    second = await sched.tick()
    third = await sched.tick()
    assert [s.user_id for s, _ in first] == ["OK"]
    assert [s.user_id for s, _ in second] == ["BAD"] and third == []
    assert sorted(calls) == ["BAD", "BAD", "OK"]


async def test_run_and_stop(db: Database) -> None:
    await subscribe(db, "U1", "daily", 8, 0, "UTC", created=utc(2026, 11, 1, 0))
    out = Outbox()
    sched = DigestScheduler(db, out, Clock(utc(2026, 11, 2, 8, 1)), poll_seconds=0.01)

    async def record_then_stop(s: object, sub: SubscriptionRow, slot: datetime) -> None:
        await out(s, sub, slot)
        sched.stop()

    sched.record = record_then_stop
    await sched.run()
    assert len(out.sent) == 1


async def test_a_changed_schedule_is_not_held_to_the_old_ones_next_slot(db: Database) -> None:
    """A tick remembers when each subscription is next due and reads only those; changing the
    time must not leave the digest waiting for the old time."""
    await subscribe(db, "U1", "daily", 8, 0, "UTC", created=utc(2026, 11, 1, 9))
    clock, out = Clock(utc(2026, 11, 2, 7, 0)), Outbox()
    sched = DigestScheduler(db, out, clock)
    assert await sched.tick() == []  # worked out: next due at 08:00
    await digest_command(db, "U1", "subscribe daily 07:30", channel="D1", tz="UTC")
    clock.now = utc(2026, 11, 2, 7, 31)
    await sched.tick()
    assert out.sent == [("U1", "daily", datetime(2026, 11, 2, 7, 30, tzinfo=ZoneInfo("UTC")))]


async def test_a_tick_reads_only_the_subscriptions_due(db: Database) -> None:
    for n in range(30):
        await subscribe(db, f"U{n}", "daily", 8 + n % 3, 0, "Europe/Berlin",
                        created=utc(2026, 11, 1, 0))
    sched = DigestScheduler(db, Outbox(), Clock(utc(2026, 11, 2, 5, 0)))
    await sched.tick()
    async with db.session() as s:
        assert await repositories.due_subscriptions(s, utc(2026, 11, 2, 6, 59)) == []
        at_eight = await repositories.due_subscriptions(s, utc(2026, 11, 2, 7, 0))  # Berlin 8:00
    assert sorted(x.user_id for x in at_eight) == sorted(f"U{n}" for n in range(0, 30, 3))


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["daily", "weekly"]), hour=st.integers(0, 23),
       minute=st.sampled_from([0, 15, 59]), weekday=st.integers(0, 6),
       tz=st.sampled_from(["UTC", "Asia/Tokyo", "America/New_York", "Europe/Berlin",
                           "Australia/Lord_Howe"]),
       steps=st.lists(st.integers(1, 60 * 30), min_size=1, max_size=25))
async def test_reading_only_the_due_rows_sends_what_reading_every_row_would(
        tmp_path_factory: pytest.TempPathFactory, kind: str, hour: int, minute: int,
        weekday: int, tz: str, steps: list[int]) -> None:
    """The scheduler against the rule it stands for: at each tick, the latest slot is sent
    if it is after the last one sent and less than MISSED_GRACE late (`due_slot` over the
    row as it stands), whatever the ticks' spacing (minutes apart, or a day's outage)."""
    db = await Database.open(fresh_url(tmp_path_factory.mktemp("due")))
    try:
        start = utc(2026, 10, 20, 0)
        await subscribe(db, "U1", kind, hour, minute, tz, weekday=weekday, created=start)
        clock, out = Clock(start), Outbox()
        sched = DigestScheduler(db, out, clock)
        async with db.session() as s:
            [row] = await repositories.list_subscriptions(s)
        expected = []
        for step in steps:
            clock.now += timedelta(minutes=step)
            slot = due_slot(row, clock.now)
            if slot is not None:
                expected.append(slot)
                row = SubscriptionRow(**{**row.__dict__, "last_sent_at": slot})
            await sched.tick()
        assert [x[2] for x in out.sent] == expected
    finally:
        await db.close()


@settings(max_examples=200, deadline=None)
@given(
    now=st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31),
                     timezones=st.just(UTC)),
    hour=st.integers(0, 23), minute=st.integers(0, 59), weekday=st.integers(0, 6),
    kind=st.sampled_from(["daily", "weekly"]),
    tz=st.sampled_from(["UTC", "America/New_York", "Asia/Tokyo", "Europe/Berlin",
                        "Australia/Lord_Howe"]),
)
def test_latest_slot_is_the_last_time_at_or_before_now(now: datetime, hour: int, minute: int,
                                                       weekday: int, kind: str,
                                                       tz: str) -> None:
    sub = SubscriptionRow(1, "U", kind, weekday if kind == "weekly" else None, hour, minute,
                          tz, None, None, now - timedelta(days=30))
    slot = latest_slot(sub, now)
    assert slot <= now < next_slot(sub, now)
    assert (slot.hour, slot.minute) == (hour, minute)  # wall-clock time in the user's zone
    assert slot.tzinfo == ZoneInfo(tz)
    if kind == "weekly":
        assert slot.weekday() == weekday
    due = due_slot(sub, now)
    assert due is None or now - due < MISSED_GRACE


# -- /digest subscribe | off | status ------------------------------------------------------


async def test_subscribe_daily_default_and_custom(db: Database) -> None:
    reply = await digest_command(db, "U1", "subscribe daily", channel="D1", tz="Asia/Tokyo")
    assert "daily at 08:00 (Asia/Tokyo)" in reply
    reply = await digest_command(db, "U1", "subscribe daily 07:30", channel="D1",
                                 tz="Asia/Tokyo")
    assert "07:30" in reply
    async with db.session() as s:
        [sub] = await repositories.list_subscriptions(s)
    assert (sub.kind, sub.hour, sub.minute, sub.tz, sub.channel) == (
        "daily", 7, 30, "Asia/Tokyo", "D1")


async def test_subscribe_weekly_with_day_and_time(db: Database) -> None:
    reply = await digest_command(db, "U1", "subscribe weekly fri 16:00", channel=None,
                                 tz="America/New_York")
    assert "weekly on Friday at 16:00" in reply
    async with db.session() as s:
        [sub] = await repositories.list_subscriptions(s)
    assert (sub.weekday, sub.hour, sub.minute) == (4, 16, 0)


@pytest.mark.parametrize("text", [
    "subscribe", "subscribe hourly", "subscribe daily 25:00", "subscribe daily 8",
    "subscribe weekly someday 09:00", "subscribe weekly fri 9am", "off forever", "whatever",
])
async def test_bad_input_gets_usage_and_changes_nothing(db: Database, text: str) -> None:
    reply = await digest_command(db, "U1", text, channel=None, tz="UTC")
    assert "/digest subscribe daily" in reply
    async with db.session() as s:
        assert await repositories.list_subscriptions(s) == []


async def test_unknown_time_zone_is_refused(db: Database) -> None:
    reply = await digest_command(db, "U1", "subscribe daily", channel=None, tz="Mars/Base")
    assert "time zone" in reply
    async with db.session() as s:
        assert await repositories.list_subscriptions(s) == []


async def test_off_and_status(db: Database) -> None:
    await digest_command(db, "U1", "subscribe daily", channel=None, tz="UTC")
    await digest_command(db, "U1", "subscribe weekly", channel=None, tz="UTC")
    await digest_command(db, "U2", "subscribe daily", channel=None, tz="UTC")
    status = await digest_command(db, "U1", "status", channel=None, tz="UTC")
    assert "daily at 08:00" in status and "weekly on Monday at 09:00" in status
    assert "turned off" in await digest_command(db, "U1", "off weekly", channel=None, tz="UTC")
    assert "turned off" in await digest_command(db, "U1", "off", channel=None, tz="UTC")
    assert "no scheduled" in await digest_command(db, "U1", "off", channel=None, tz="UTC")
    await digest_command(db, "U1", "subscribe daily", channel=None, tz="UTC")
    assert "turned off" in await digest_command(db, "U1", "unsubscribe", channel=None, tz="UTC")
    async with db.session() as s:
        assert [x.user_id for x in await repositories.list_subscriptions(s)] == ["U2"]
        assert await repositories.list_subscriptions(s, "U1") == []
    status = await digest_command(db, "U2", "status", channel=None, tz="UTC")
    assert status == "Scheduled: daily at 08:00 (UTC)."  # U2's own, not U1's weekly
