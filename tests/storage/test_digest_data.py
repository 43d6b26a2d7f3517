"""storage.repositories.digest_data on real SQLite: capture windows, counts, the send-once claim."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from storage import repositories
from storage.db import Database
from storage.errors import InvalidValue
from storage.models import Receipt
from storage.repositories import digest_data
from tests.databases import fresh_url


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(fresh_url(tmp_path))
    yield database
    await database.close()


T0 = datetime(2026, 3, 10, 0, 0, tzinfo=UTC)


async def add(db: Database, user: str, at: datetime, category: str = "ideas",
              status: str = "filed") -> None:
    async with db.session() as s:
        s.add(Receipt(user_id=user, original_text="t", entry_id="e_1", path="ideas/t.md",
                      category=category, status=status, created_at=at, updated_at=at))
        await s.commit()


async def test_capture_window_is_half_open_and_per_user(db: Database) -> None:
    await add(db, "U1", T0 - timedelta(microseconds=1))
    await add(db, "U1", T0, "projects")
    await add(db, "U1", T0 + timedelta(hours=23, minutes=59), "projects", "needs_review")
    await add(db, "U1", T0 + timedelta(days=1))
    await add(db, "U2", T0 + timedelta(hours=1))
    end = T0 + timedelta(days=1)
    async with db.session() as s:
        rows = await digest_data.receipts_between(s, "U1", T0, end)
        assert [r.created_at for r in rows] == [T0 + timedelta(hours=23, minutes=59), T0]
        unsure = await digest_data.receipts_between(s, "U1", T0, end,
                                                    statuses=["needs_review"])
        assert len(unsure) == 1
        assert await digest_data.capture_counts(s, "U1", T0, end) == {"projects": 2}
        assert len(await digest_data.receipts_between(s, "U1", T0, end, limit=1)) == 1


async def test_naive_window_is_refused(db: Database) -> None:
    async with db.session() as s:
        with pytest.raises(InvalidValue):
            await digest_data.receipts_between(s, "U1", datetime(2026, 1, 1), T0)


async def _subscription(db: Database) -> int:
    async with db.session() as s:
        sub = await repositories.upsert_subscription(s, "U1", "daily", 8, 0, None, "UTC", None)
        await s.commit()
    return sub.id


async def test_claim_is_once_per_slot(db: Database) -> None:
    sub_id = await _subscription(db)
    slot = datetime(2026, 3, 10, 8, tzinfo=UTC)
    async with db.session() as s:
        assert await digest_data.claim_digest_slot(s, sub_id, slot) is True
        assert await digest_data.claim_digest_slot(s, sub_id, slot) is False
        assert await digest_data.claim_digest_slot(s, sub_id, slot - timedelta(days=1)) is False
        assert await digest_data.claim_digest_slot(s, sub_id, slot + timedelta(days=1)) is True
        await s.commit()
        [row] = await repositories.list_subscriptions(s)
    assert row.last_sent_at == slot + timedelta(days=1)


async def test_concurrent_claims_have_one_winner(db: Database) -> None:
    sub_id = await _subscription(db)
    slot = datetime(2026, 3, 10, 8, tzinfo=UTC)

    async def claim() -> bool:
        async with db.session() as s:
            won = await digest_data.claim_digest_slot(s, sub_id, slot)
            await s.commit()
            return won

    results = await asyncio.gather(*(claim() for _ in range(5)))
    assert sorted(results) == [False] * 4 + [True]


async def test_claim_refuses_naive_slot_and_unknown_subscription(db: Database) -> None:
    async with db.session() as s:
        with pytest.raises(InvalidValue):
            await digest_data.claim_digest_slot(s, 1, datetime(2026, 3, 10, 8))
        assert await digest_data.claim_digest_slot(s, 999, T0) is False


async def test_notes_of_an_empty_vault(db: Database) -> None:
    async with db.session() as s:
        assert await digest_data.notes(s, "/nowhere", category="projects") == []
        assert await digest_data.notes_by_ids(s, "/nowhere", []) == {}
        assert await digest_data.open_loop_projects(s, "/nowhere", stale_before=0.0,
                                                    limit=5) == []
