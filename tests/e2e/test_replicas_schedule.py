"""Digests and reminders go out once when several replicas run their schedulers at the same
time: two `brain serve --http` processes on one PostgreSQL database start together with a
digest slot and a reminder due, so both schedulers' first ticks see the same due work; then
both are restarted together and tick again. One digest and one reminder reach Slack.

Plus the same race without processes, exactly simultaneous: several digest schedulers, each with
its own connection pool, ticking at once on one PostgreSQL database.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.digest.schedule import DigestScheduler
from storage import repositories
from storage.db import Database
from storage.repositories import SubscriptionRow
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import postgres_url
from tests.e2e import replicas as rs
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, USER
from tests.e2e.test_slack_serve import clean_env

pytestmark = pytest.mark.slow

TZ = "Asia/Tokyo"  # what the fake users.info says of every user
DM = "D" + USER[1:]  # what the fake conversations.open answers


async def _due_work(url: str, data: Path, now: datetime) -> None:
    """A daily digest whose slot passed five minutes ago (last sent the day before), and a
    note due today (Tokyo) of a person who has filed before."""
    local = now.astimezone(ZoneInfo(TZ))
    slot = local - timedelta(minutes=5)
    db = await Database.open(url)
    try:
        note = await Store(Vault(data / "vaults" / USER), db).create(
            "admin", "Renew passport", {"status": "todo",
                                        "due_date": local.date().isoformat()}, "")
        async with db.session() as s:
            sub = await repositories.upsert_subscription(s, USER, "daily", slot.hour,
                                                         slot.minute, None, TZ, DM)
            await repositories.mark_sent(s, sub.id, slot - timedelta(days=1))
            await repositories.add_receipt(s, user_id=USER, original_text="Renew passport",
                                           entry_id=note.id or "", path=note.path,
                                           category="admin", confidence=0.9, status="filed")
            await s.commit()
    finally:
        await db.close()


def _morning_started(now: datetime) -> str:
    """A reminder time an hour ago in Tokyo (so now is in the morning window)."""
    local = now.astimezone(ZoneInfo(TZ))
    start = max(local - timedelta(hours=1), local.replace(hour=0, minute=0))
    return f"{start.hour:02d}:{start.minute:02d}"


async def test_two_replicas_send_one_digest_and_one_reminder(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    if (now.astimezone(ZoneInfo(TZ)) + timedelta(minutes=2)).date() != \
            now.astimezone(ZoneInfo(TZ)).date():
        pytest.skip("too close to midnight in Tokyo for a reminder window")
    url = postgres_url(tmp_path, "schedule")
    data = tmp_path / "data"
    await _due_work(url, data, now)
    fake = await FakeSlack().start()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(data), DATABASE_URL=url,
                    BRAIN_LLM="offline", BRAIN_REMINDER_TIME=_morning_started(now),
                    BRAIN_LOG_LEVEL="WARNING")
    replicas: list[rs.Replica] = []
    try:
        for _ in range(2):  # together, then restarted together
            replicas = await rs.start_all(2, env, tmp_path)
            await fake.wait_for("chat.postMessage", 2, timeout=30)
            await asyncio.sleep(1.0)  # time for a second delivery, if there were one
            await rs.idle(replicas)
            assert [await rs.stop(r) for r in replicas] == [0, 0]
        posts = [c.body for c in fake.calls_to("chat.postMessage")]
        reminders = [p for p in posts if str(p.get("text")).startswith("Due today")]
        digests = [p for p in posts if str(p.get("text")).startswith("Daily digest")]
        assert len(posts) == 2, posts
        assert len(reminders) == 1 and reminders[0]["channel"] == DM, posts
        assert len(digests) == 1 and digests[0]["channel"] == DM, posts
        for replica in replicas:
            assert replica.log_text() == "", replica.log_text()[-3000:]
    finally:
        await rs.close_all(replicas)
        await fake.stop()


async def test_schedulers_ticking_at_the_same_instant_send_each_digest_once(
        tmp_path: Path) -> None:
    url = postgres_url(tmp_path, "ticks")
    dbs = [await Database.open(url) for _ in range(4)]  # four replicas' connection pools
    now = datetime(2027, 3, 1, 9, 0, tzinfo=ZoneInfo("Europe/Paris"))
    async with dbs[0].session() as s:
        for u in range(20):
            sub = await repositories.upsert_subscription(s, f"U{u:08d}", "daily", 8, 30, None,
                                                         "Europe/Paris", None)
            await repositories.mark_sent(s, sub.id, now - timedelta(days=1))
        await s.commit()
    sent: list[tuple[str, datetime]] = []

    async def record(s: object, sub: SubscriptionRow, slot: datetime) -> None:
        sent.append((sub.user_id, slot))
        await asyncio.sleep(0.01)

    try:
        for minutes in (0, 0, 1, 30):  # the same slot seen again and again, by all four
            ticks = [DigestScheduler(db, record, clock=lambda m=minutes: now +
                                     timedelta(minutes=m)).tick() for db in dbs]
            await asyncio.gather(*ticks)
    finally:
        for db in dbs:
            await db.close()
    assert sorted(u for u, _ in sent) == [f"U{u:08d}" for u in range(20)]
