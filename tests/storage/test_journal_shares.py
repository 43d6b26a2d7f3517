"""The journal's claim shares the work among people (storage/repositories/shares.py), on the suite's
database: round-robin over owners, at most `running` metered jobs of one owner at once and at
most `rate` started per window, across several claimers with their own connection pools (as
replicas are); and the intake's "slow down" notice recorded once.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from storage.db import Database
from storage.models import Job
from storage.repositories import journal
from storage.repositories.shares import Shares, arrivals, record_notice
from tests.databases import fresh_url

LEASE = timedelta(seconds=30)
_KEYS = itertools.count()


async def _record(db: Database, owners: list[str], kind: str = "turn") -> list[int]:
    """One job per entry of `owners`, in that order, each in its own lane (as top-level DMs
    are); their ids."""
    keys = [next(_KEYS) for _ in owners]
    async with db.session() as s:
        got = await journal.record_many(s, [
            {"key": f"{kind}:{n}", "kind": kind, "user_id": owner, "lane": f"lane:{n}",
             "payload": {"n": n}} for n, owner in zip(keys, owners, strict=True)])
        await s.commit()
    return [job_id for job_id, _ in got]


async def _claim(db: Database, limit: int, shares: Shares | None = None,
                 name: str = "w") -> list[journal.JobRow]:
    async with db.session() as s:
        got = await journal.claim(s, name, limit=limit, lease=LEASE, shares=shares)
        await s.commit()
    return got


async def _finish(db: Database, job: journal.JobRow, name: str = "w") -> None:
    async with db.session() as s:
        assert await journal.finish(s, job.id, "done", owner=name)
        await s.commit()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(fresh_url(tmp_path))
    yield database
    await database.close()


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(owners=st.lists(st.sampled_from(["A", "B", "C", "D", "E"]), min_size=1, max_size=30),
       limits=st.lists(st.integers(1, 5), min_size=1, max_size=30))
async def test_claims_go_round_robin_over_owners(
        tmp_path_factory: pytest.TempPathFactory, owners: list[str], limits: list[int]) -> None:
    """With k owners queued, the claims take each owner's first job before any owner's
    second, then the seconds, ...; each owner's in the order recorded; whatever the batch
    sizes of the claims."""
    db = await Database.open(fresh_url(tmp_path_factory.mktemp("rr")))
    try:
        ids = await _record(db, owners)
        owner_of = dict(zip(ids, owners, strict=True))
        nth: dict[int, int] = {}
        seen: Counter[str] = Counter()
        for job_id, owner in zip(ids, owners, strict=True):
            seen[owner] += 1
            nth[job_id] = seen[owner]
        def turn(job_id: int) -> tuple[int, int]:
            return nth[job_id], job_id

        claimed: list[int] = []
        for limit in itertools.cycle(limits):  # until every job is claimed
            got = await _claim(db, limit)
            if not got:
                break
            claimed += sorted((j.id for j in got), key=turn)  # a batch starts at once
        assert claimed == sorted(ids, key=turn), [(owner_of[i], nth[i]) for i in claimed]
    finally:
        await db.close()


async def test_a_claim_takes_at_most_its_limit_in_turn(db: Database) -> None:
    """Two people's two jobs and a third's one, claimed two at a time: each claim takes two
    (on PostgreSQL a claim of 2 once took 4, the locked pick run again for the rows the
    UPDATE scanned), firsts before seconds, whoever has fewer running first."""
    ids = await _record(db, ["B", "B", "C", "A", "A"])
    batches = [[j.id for j in await _claim(db, 2)] for _ in range(4)]
    b1, b2, c1, a1, a2 = ids
    assert batches == [[b1, c1], sorted([a1, b2]), [a2], []]


async def test_a_flood_waits_behind_the_cap_and_other_people_come_first(db: Database) -> None:
    shares = Shares(running=2, metered=("turn",))
    flood = await _record(db, ["A"] * 40)
    first = await _claim(db, 10, shares)
    assert [j.id for j in first] == flood[:2]  # two of A's at once, no more
    assert await _claim(db, 10, shares) == []
    (other,) = await _record(db, ["B"], kind="turn")  # recorded after all of A's
    assert [j.id for j in await _claim(db, 10, shares)] == [other]
    free = await _record(db, ["A"] * 3, kind="button")  # not metered: A's buttons still run
    assert [j.id for j in await _claim(db, 10, shares)] == free
    await _finish(db, first[0])
    assert [j.id for j in await _claim(db, 10, shares)] == [flood[2]]


async def test_a_lapsed_lease_is_not_counted_as_running(db: Database) -> None:
    shares = Shares(running=1, metered=("turn",))
    await _record(db, ["A"] * 3)
    async with db.session() as s:
        (job,) = await journal.claim(s, "dead", limit=5, lease=timedelta(milliseconds=1),
                                     shares=shares)
        await s.commit()
    await asyncio.sleep(0.05)  # the claimer died: its lease runs out
    assert [j.id for j in await _claim(db, 5, shares)] == [job.id]  # taken over, not stuck


async def test_the_rate_counts_jobs_started_within_the_window(db: Database) -> None:
    shares = Shares(rate=3, window=timedelta(minutes=1), metered=("turn",))
    ids = await _record(db, ["A"] * 5)
    got = await _claim(db, 10, shares)
    assert [j.id for j in got] == ids[:3]
    for job in got:
        await _finish(db, job)
    assert await _claim(db, 10, shares) == []  # finished within the window: still counted
    async with db.session() as s:  # a minute later
        await s.execute(update(Job).where(Job.id.in_(ids[:3])).values(
            finished_at=datetime.now(UTC) - timedelta(minutes=2)))
        await s.commit()
    assert [j.id for j in await _claim(db, 10, shares)] == ids[3:]


async def test_claimers_at_once_never_run_more_than_the_cap(tmp_path: Path) -> None:
    """Four claimers on their own pools take a flood of three people's jobs: no moment has
    more than `running` of one person's jobs running, and every job runs once."""
    url = fresh_url(tmp_path)
    dbs = [await Database.open(url) for _ in range(4)]
    shares = Shares(running=2, metered=("turn",))
    try:
        owners = ["A"] * 30 + ["B"] * 10 + ["C"] * 10
        ids = await _record(dbs[0], owners)
        owner_of = dict(zip(ids, owners, strict=True))
        running: Counter[str] = Counter()
        peak: dict[str, int] = defaultdict(int)
        ran: list[int] = []
        rng = random.Random(31)

        async def claimer(db: Database, name: str) -> None:
            idle = 0
            while idle < 20:
                got = await _claim(db, 3, shares, name)
                if not got:
                    idle += 1
                    await asyncio.sleep(0.01)
                    continue
                idle = 0
                for job in got:
                    running[owner_of[job.id]] += 1
                    peak[owner_of[job.id]] = max(peak[owner_of[job.id]],
                                                 running[owner_of[job.id]])

                async def run(job: journal.JobRow) -> None:
                    await asyncio.sleep(rng.random() * 0.01)
                    running[owner_of[job.id]] -= 1  # ends before its finish is written
                    ran.append(job.id)
                    await _finish(db, job, name)

                await asyncio.gather(*(run(j) for j in got))

        await asyncio.gather(*(claimer(db, f"c{i}") for i, db in enumerate(dbs)))
        assert sorted(ran) == sorted(ids)
        assert max(peak.values()) <= 2, dict(peak)
    finally:
        for db in dbs:
            await db.close()


async def test_the_slow_down_notice_is_recorded_once_an_hour(db: Database) -> None:
    shares = Shares(rate=3, window=timedelta(minutes=1), metered=("turn",))
    await _record(db, ["A"] * 5 + ["B"])
    now = datetime.now(UTC)
    assert await arrivals(db_session := db.session(), ["A", "B"], shares, now) == \
        {"A": 5, "B": 1}
    await db_session.close()

    async def notice() -> bool:
        async with db.session() as s:
            made = await record_notice(s, key="slowdown:A", kind="notice", user_id="A",
                                       payload={"user": "A"}, now=datetime.now(UTC))
            await s.commit()
        return made

    assert await notice()
    assert not await notice()  # told already
    async with db.session() as s:
        notice_job = await journal.by_key(s, "slowdown:A")
        assert notice_job is not None
        await journal.finish(s, notice_job.id, "done")
        await s.commit()
    assert not await notice()  # finished, but within the hour
    async with db.session() as s:
        await s.execute(update(Job).where(Job.key == "slowdown:A").values(
            created_at=datetime.now(UTC) - timedelta(hours=2)))
        await s.commit()
    assert await notice()  # an hour later: told again
