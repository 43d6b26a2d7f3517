"""The intake journal under several claimers at once, as replicas use it: each on its own
connection pool (as separate processes are), on the suite's database.

Invariants: a job is run by one claimer at a time and finished once; a lane's jobs run one at a
time in the order they were recorded; a claimer whose lease ran out and was taken over can no
longer record effects or the end (fencing), and the job keeps who finished it.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.db import Database
from storage.repositories import journal
from storage.repositories.common import clock
from tests.databases import fresh_url

LEASE = timedelta(seconds=30)


@pytest.fixture
async def pools(tmp_path: Path) -> AsyncIterator[list[Database]]:
    url = fresh_url(tmp_path)
    dbs = [await Database.open(url) for _ in range(4)]
    yield dbs
    for db in dbs:
        await db.close()


async def _record(db: Database, lanes: int, per_lane: int) -> None:
    async with db.session() as s:
        for k in range(per_lane):
            for lane in range(lanes):
                await journal.record(s, key=f"job:{lane}:{k}", kind="turn", user_id="U1",
                                     lane=f"lane{lane}", payload={"k": k})
        await s.commit()


async def test_claimers_at_once_run_each_job_once_and_each_lane_in_order(
        pools: list[Database]) -> None:
    lanes, per_lane = 8, 6
    await _record(pools[0], lanes, per_lane)
    running: dict[str, int] = {}  # lane -> job id running now
    order: dict[str, list[int]] = defaultdict(list)
    finished: list[int] = []
    rng = random.Random(7)

    async def claimer(db: Database, name: str) -> None:
        idle = 0
        while idle < 5:
            async with db.session() as s:
                got = await journal.claim(s, name, limit=3, lease=LEASE)
                await s.commit()
            if not got:
                idle += 1
                await asyncio.sleep(0.01)
                continue
            idle = 0

            async def run(job: journal.JobRow) -> None:
                assert job.lane not in running, f"{job.lane} runs {running.get(job.lane)} " \
                    f"and {job.id} at once"
                running[job.lane] = job.id
                order[job.lane].append(job.id)
                await asyncio.sleep(rng.uniform(0, 0.01))
                del running[job.lane]
                async with db.session() as s:
                    assert await journal.finish(s, job.id, "done", owner=name)
                    await s.commit()
                finished.append(job.id)

            await asyncio.gather(*(run(job) for job in got))

    await asyncio.gather(*(claimer(db, f"host:{i}:w") for i, db in enumerate(pools)))
    assert sorted(finished) == sorted(set(finished)) and len(finished) == lanes * per_lane
    for ids in order.values():
        assert ids == sorted(ids) and len(ids) == per_lane
    async with pools[0].session() as s:
        assert (await journal.counts(s))["done"] == lanes * per_lane


async def test_a_taken_over_job_is_fenced_off_from_its_old_holder(
        pools: list[Database]) -> None:
    a, b = pools[0], pools[1]
    await _record(a, 1, 2)
    async with a.session() as s:
        (first,) = await journal.claim(s, "old", limit=1, lease=timedelta(milliseconds=200))
        await s.commit()
    await asyncio.sleep(0.3)  # the old holder stalls past its lease
    async with b.session() as s:
        (again,) = await journal.claim(s, "new", limit=1, lease=LEASE)
        await s.commit()
    assert again.id == first.id and again.attempts == 2
    async with a.session() as s:  # the old holder wakes up: nothing it does counts
        assert await journal.renew(s, "old", [first.id], LEASE) == []
        assert not await journal.set_result(s, first.id, {"reply_ts": "1.2"}, owner="old")
        assert not await journal.finish(s, first.id, "done", owner="old")
        assert not await journal.retry_later(s, "old", first.id, timedelta(seconds=1), "x")
        await s.commit()
    async with b.session() as s:
        assert await journal.renew(s, "new", [first.id], LEASE) == [first.id]
        assert await journal.set_result(s, first.id, {"reply_ts": "9.9"}, owner="new")
        # the lane's next job waits while the first is open, whoever holds it
        assert await journal.claim(s, "third", limit=5, lease=LEASE) == []
        assert await journal.finish(s, first.id, "done", owner="new")
        await s.commit()
        done = await journal.get(s, first.id)
    assert done is not None and done.state == "done"
    assert done.lease_owner == "new" and done.result == {"reply_ts": "9.9"}  # who finished it


async def test_leases_are_measured_on_the_database_clock(pools: list[Database]) -> None:
    async with pools[0].session() as s:
        server = await clock(s)
    assert server.tzinfo is not None
    assert abs(server - datetime.now(UTC)) < timedelta(seconds=5)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=12), min_size=1,
                        max_size=4))
async def test_a_batch_records_each_new_key_once_in_order(
        tmp_path_factory: pytest.TempPathFactory, batches: list[list[str]]) -> None:
    """The intake's group commit (`record_many`): within and across batches, a key's first
    delivery is new and every later one finds the same job; new jobs get ids in the order
    they arrived (a lane runs in that order)."""
    db = await Database.open(fresh_url(tmp_path_factory.mktemp("batch")))
    try:
        seen: dict[str, int] = {}
        for batch in batches:
            async with db.session() as s:
                got = await journal.record_many(s, [
                    {"key": f"k:{key}", "kind": "turn", "user_id": "U1", "lane": "lane",
                     "payload": {"n": n}} for n, key in enumerate(batch)])
                await s.commit()
            new_ids = []
            for key, (job_id, first) in zip(batch, got, strict=True):
                assert first == (key not in seen), (batch, got)
                if first:
                    new_ids.append(job_id)
                    seen[key] = job_id
                assert job_id == seen[key]
            assert new_ids == sorted(new_ids) and len(set(new_ids)) == len(new_ids)
    finally:
        await db.close()
