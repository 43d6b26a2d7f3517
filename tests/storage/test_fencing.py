"""A process frozen in the middle of a transaction does not hold up the worker that takes its
job over (storage/repositories/fencing.py): a real process, frozen with SIGSTOP while its
transaction holds a new conversation's key, and a claim of its lapsed job from this one."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, make_url, select, text, update

from bot.jobs import owners
from bot.jobs.owners import owner_id
from bot.jobs.queue import JobQueue
from storage.db import Database
from storage.models import Conversation, Job
from storage.processes import application_name
from storage.repositories import get_or_create_conversation, journal
from tests.databases import fresh_url, postgres

pytestmark = pytest.mark.postgres_only

REPO = Path(__file__).resolve().parents[2]
KEY = "slack:D1:1767700000.000100:U1"
# The stalled process: opens the database as the bot does, starts the turn's conversation in a
# transaction, says its name, and freezes before it commits.
FROZEN = f"""
import asyncio, os, signal, sys
from storage.db import Database
from storage.processes import process_name
from storage.repositories import get_or_create_conversation

async def main():
    db = await Database.open(sys.argv[1])
    async with db.session() as s:
        await get_or_create_conversation(s, {KEY!r}, "U1")
        print(process_name(), flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)
        await s.commit()

asyncio.run(main())
"""


@contextlib.contextmanager
def frozen_in_a_transaction(url: str) -> Iterator[str]:
    """A process frozen while its transaction holds KEY; yields its process name."""
    child = subprocess.Popen([sys.executable, "-c", FROZEN, url], cwd=REPO,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        yield child.stdout.readline().strip()
    finally:
        child.kill()
        child.wait()


async def _job(db: Database, key: str, owner: str | None) -> int:
    """A turn job; with `owner`, one that owner was running when its lease ran out."""
    async with db.session() as s:
        job_id, _ = await journal.record(s, key=key, kind="turn", user_id="U1", lane=key,
                                         payload={})
        if owner is not None:
            await s.execute(update(Job).where(Job.id == job_id).values(
                state="running", lease_owner=owner, attempts=1,
                lease_until=func.now() - timedelta(seconds=1)))
        await s.commit()
    return job_id


async def _open_transactions_of(db: Database, name: str) -> int:
    async with db.session() as s:
        return int(await s.scalar(text(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = :n "
            "AND xact_start IS NOT NULL"), {"n": f"brain {name}"}) or 0)


async def test_taking_over_a_frozen_processs_job_ends_its_transaction(tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    try:
        with frozen_in_a_transaction(db.url) as name:
            assert await _open_transactions_of(db, name) == 1
            me = owner_id()
            # A claim that takes nothing of the frozen process's leaves it alone
            plain = await _job(db, "event:plain", None)
            async with db.session() as s:
                assert [j.id for j in await journal.claim(
                    s, me, limit=1, lease=timedelta(minutes=1))] == [plain]
                await s.commit()
            assert await _open_transactions_of(db, name) == 1
            # Its job, its lease run out, taken over: its transaction ends, its key is free
            stalled = await _job(db, "event:stalled", f"{name}.abc123")
            async with db.session() as s:
                assert [j.id for j in await journal.claim(
                    s, me, limit=1, lease=timedelta(minutes=1))] == [stalled]
                await s.commit()
            async with db.session() as s:
                await s.execute(text("SET lock_timeout = '60s'"))  # a failure, not a hang
                mine = await get_or_create_conversation(s, KEY, "U1")
                await s.commit()
            assert await _open_transactions_of(db, name) == 0
        async with db.session() as s:
            assert await s.scalar(select(Conversation.id).where(Conversation.key == KEY)) \
                == mine.id
    finally:
        await db.close()


async def test_a_job_taken_back_by_its_own_process_ends_nothing(tmp_path: Path) -> None:
    """A worker's own process is never fenced (a lease it let lapse, claimed again here)."""
    db = await Database.open(fresh_url(tmp_path))
    try:
        async with db.session() as s:  # an open transaction of this very process
            await get_or_create_conversation(s, KEY, "U1")
            mine = owner_id()
            await _job(db, "event:mine", mine.rsplit(".", 1)[0] + ".other")
            async with db.session() as other:
                assert len(await journal.claim(other, mine, limit=1,
                                               lease=timedelta(minutes=1))) == 1
                await other.commit()
            await s.commit()  # still alive: it was not ended
    finally:
        await db.close()



# -- a process of another machine that died: no connection left ------------------------------

ELSEWHERE = "far-host:4242:0000beef.777"  # a process name of another place


async def _look(db: Database, unseen_before: set[str], settled: timedelta,
                ) -> tuple[int, set[str]]:
    """A worker's look for jobs of dead processes (bot/jobs/worker.py `_free_dead`)."""
    return await JobQueue(db).free_dead(owners.dead, owners.elsewhere, unseen_before, settled)


async def test_a_process_of_another_machine_without_connections_loses_its_jobs_at_the_second_look(
        tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    try:
        job = await _job(db, "event:far", f"{ELSEWHERE}.abc123")
        async with db.session() as s:  # still within its lease
            await s.execute(update(Job).where(Job.id == job).values(
                lease_until=func.now() + timedelta(minutes=5)))
            await s.commit()
        freed, unseen = await _look(db, set(), timedelta(0))
        assert (freed, unseen) == (0, {ELSEWHERE})  # once is not enough: a blink
        assert await _look(db, unseen, timedelta(0)) == (1, {ELSEWHERE})
        async with db.session() as s:
            assert [j.id for j in await journal.claim(s, owner_id(), limit=1,
                                                      lease=timedelta(minutes=1))] == [job]
    finally:
        await db.close()


async def test_a_connected_process_of_another_machine_keeps_its_jobs(tmp_path: Path) -> None:
    import asyncpg

    db = await Database.open(fresh_url(tmp_path))
    server = postgres()
    database = make_url(db.url).database
    conn = await asyncpg.connect(host=str(server.socket_dir), user="postgres", database=database,
                                 server_settings={"application_name": application_name(ELSEWHERE)})
    try:
        await _job(db, "event:far", f"{ELSEWHERE}.abc123")
        seen: set[str] = set()
        for _ in range(3):
            freed, seen = await _look(db, seen, timedelta(0))
            assert (freed, seen) == (0, set())
    finally:
        await conn.close()
        await db.close()


async def test_right_after_a_server_start_absence_is_not_trusted(tmp_path: Path) -> None:
    """The processes that live reconnect at their next statement: a server younger than
    `settled` leaves the jobs to their leases."""
    db = await Database.open(fresh_url(tmp_path))
    try:
        await _job(db, "event:far", f"{ELSEWHERE}.abc123")
        never = timedelta(days=365)
        assert await _look(db, set(), never) == (0, set())
        assert await _look(db, {ELSEWHERE}, never) == (0, set())
    finally:
        await db.close()
