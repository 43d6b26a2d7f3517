"""The worker when another replica takes its job over (its lease ran out while it stalled):
it stops the job and records nothing more of it, neither an effect nor the end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from bot.jobs.queue import JobContext, JobQueue, LeaseLost
from bot.jobs.worker import Worker
from storage.db import Database
from storage.models import Job
from tests.databases import fresh_url


@pytest.fixture
async def queue(tmp_path: Path) -> AsyncIterator[JobQueue]:
    db = await Database.open(fresh_url(tmp_path))
    yield JobQueue(db)
    await db.close()


async def _take_over(queue: JobQueue, job_id: int) -> None:
    """What another replica's claim does to a job whose lease ran out: its own name and lease
    (a minute: on a loaded machine this worker's old lease may run out before it stops, and
    the job must not look free to it then)."""
    until = datetime.now(UTC) + timedelta(minutes=1)
    async with queue.db.session() as s:
        await s.execute(update(Job).where(Job.id == job_id).values(
            lease_owner="elsewhere:1:x", lease_until=until))
        await s.commit()


async def test_a_job_taken_over_is_stopped_and_not_finished_here(queue: JobQueue) -> None:
    started, stopped = asyncio.Event(), asyncio.Event()

    async def slow(ctx: JobContext) -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.set()
            raise

    # Renewed every third of the lease: the takeover is seen within 0.4 s, and the worker is
    # stopped well before the lease it last renewed runs out (once it has, the job is
    # claimable again, by this worker too: with 0.3 s, a claim under load took it back).
    worker = Worker(queue, {"turn": slow}, poll=0.05, lease=timedelta(seconds=1.2))
    job_id, _ = await queue.record(key="k1", kind="turn", user_id="U1", lane="l1", payload={})
    worker.start()
    try:
        await asyncio.wait_for(started.wait(), 5)
        await _take_over(queue, job_id)
        await asyncio.wait_for(stopped.wait(), 5)  # the next renewal saw it gone
    finally:
        await worker.stop(drain_timeout=1)
    job = await queue.get(job_id)
    assert job is not None and job.state == "running" and job.lease_owner == "elsewhere:1:x"
    assert worker.done == 0


async def test_an_effect_after_the_takeover_is_refused(queue: JobQueue) -> None:
    seen: list[str] = []
    job_id, _ = await queue.record(key="k2", kind="turn", user_id="U1", lane="l2", payload={})

    async def handler(ctx: JobContext) -> None:
        await ctx.remember(reply_posting=True)
        await _take_over(queue, job_id)
        try:
            await ctx.remember(reply_ts="1.1")
        except LeaseLost:
            seen.append("lease lost")
            raise

    worker = Worker(queue, {"turn": handler}, poll=0.05)
    worker.start()
    try:
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.02)
    finally:
        await worker.stop(drain_timeout=1)
    job = await queue.get(job_id)
    assert seen == ["lease lost"]
    assert job is not None and job.result == {"reply_posting": True}  # not the late effect
    assert job.state == "running" and job.attempts == 1  # not retried, not finished here


async def test_a_failure_after_the_takeover_leaves_the_job_to_its_new_worker(
        queue: JobQueue, caplog: pytest.LogCaptureFixture) -> None:
    """A stalled run that fails once thawed (its connections ended by the worker that took
    the job over) gives nothing back to the journal, and its log says why."""
    job_id, _ = await queue.record(key="k3", kind="turn", user_id="U1", lane="l3", payload={})
    failed = asyncio.Event()

    async def handler(ctx: JobContext) -> None:
        await _take_over(queue, job_id)
        failed.set()
        raise RuntimeError("the connection was closed")

    worker = Worker(queue, {"turn": handler}, poll=0.05)
    worker.start()
    try:
        await asyncio.wait_for(failed.wait(), 5)
        while worker.busy:
            await asyncio.sleep(0.02)
    finally:
        await worker.stop(drain_timeout=1)
    job = await queue.get(job_id)
    assert job is not None and job.state == "running" and job.lease_owner == "elsewhere:1:x"
    assert f"job {job_id}: taken over by another worker" in caplog.text
