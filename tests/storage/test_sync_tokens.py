"""The git remotes' tokens (storage/sync/tokens.py) on the test's database: kept only as a
hash, one person each, revocable, refused once unused for the idle time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from storage.db import Database
from storage.models import SyncToken
from storage.sync import tokens
from tests.databases import fresh_url

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
IDLE = timedelta(days=90)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(fresh_url(tmp_path))
    yield database
    await database.close()


async def issued(db: Database, user: str, at: datetime = NOW) -> str:
    async with db.session() as s:
        token = await tokens.issue(s, user, at)
        await s.commit()
    return token


async def owner(db: Database, token: str, at: datetime = NOW) -> str | None:
    async with db.session() as s:
        found = await tokens.owner(s, token, at, IDLE)
        await s.commit()
    return found


async def test_a_token_is_kept_as_a_hash_and_opens_its_persons_remote_only(
        db: Database) -> None:
    mine, theirs = await issued(db, "U1"), await issued(db, "U2")
    assert mine.startswith("bsk_") and len(mine) == 47 and mine != theirs
    assert await owner(db, mine) == "U1" and await owner(db, theirs) == "U2"
    async with db.session() as s:
        rows = (await s.scalars(select(SyncToken))).all()
    stored = " ".join(f"{r.token_hash} {r.shown}" for r in rows)
    assert mine not in stored and theirs not in stored  # never the token itself
    assert {r.shown for r in rows} == {mine[:12], theirs[:12]}


async def test_a_token_unused_for_the_idle_time_is_refused_and_use_keeps_it(
        db: Database) -> None:
    token = await issued(db, "U1")
    assert await owner(db, token, NOW + IDLE - timedelta(minutes=1)) == "U1"  # used: kept
    assert await owner(db, token, NOW + 2 * IDLE - timedelta(minutes=2)) == "U1"
    assert await owner(db, token, NOW + 3 * IDLE) is None  # unused for longer than IDLE
    async with db.session() as s:
        (listed,) = await tokens.listed(s, "U1", IDLE)
    assert listed.last_used is not None and listed.expires == listed.last_used + IDLE


async def test_its_last_use_is_written_at_most_hourly(db: Database) -> None:
    token = await issued(db, "U1")
    await owner(db, token, NOW)
    await owner(db, token, NOW + timedelta(minutes=30))
    async with db.session() as s:
        (first,) = await tokens.listed(s, "U1", IDLE)
    assert first.last_used == NOW
    await owner(db, token, NOW + timedelta(minutes=61))
    async with db.session() as s:
        (later,) = await tokens.listed(s, "U1", IDLE)
    assert later.last_used == NOW + timedelta(minutes=61)


async def test_revoking_one_by_its_start_or_all_of_a_persons(db: Database) -> None:
    one, two, theirs = await issued(db, "U1"), await issued(db, "U1"), await issued(db, "U2")
    async with db.session() as s:
        assert await tokens.revoke(s, "U1", one[:10]) == 1
        assert await tokens.revoke(s, "U1", theirs[:10]) == 0  # not theirs to revoke
        assert await tokens.revoke(s, "U1", "bsk_") == 0  # too short to name one
        await s.commit()
    assert await owner(db, one) is None and await owner(db, two) == "U1"
    async with db.session() as s:
        assert await tokens.revoke(s, "U1", two) == 1  # the whole token names it too
        await s.commit()
    three = await issued(db, "U1")
    async with db.session() as s:
        assert await tokens.revoke(s, "U1", None) == 1
        await s.commit()
    assert await owner(db, three) is None
    assert await owner(db, theirs) == "U2"
    async with db.session() as s:
        assert await tokens.listed(s, "U1", IDLE) == []


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(guess=st.one_of(st.text(max_size=300), st.text(min_size=43, max_size=43).map(
    lambda t: "bsk_" + t)))
async def test_anything_not_issued_opens_nothing(db: Database, guess: str) -> None:
    assert await owner(db, guess) is None
