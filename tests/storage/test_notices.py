"""Work recorded by one process wakes another's worker at once (storage/notices.py, PostgreSQL's
LISTEN/NOTIFY): a job recorded by a real second process is heard; this process's own records,
and a record rolled back, are not; a listener whose connection the server ends listens again
and hears what comes after."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from storage import notices
from storage.db import Database
from storage.processes import application_name
from storage.repositories import journal
from tests.databases import fresh_url
from tests.shared import patience

pytestmark = pytest.mark.postgres_only

REPO = Path(__file__).resolve().parents[2]
# Another process: opens the database as a replica does and records one job.
RECORDS = """
import asyncio, sys
from storage.db import Database
from storage.repositories import journal

async def main():
    db = await Database.open(sys.argv[1])
    async with db.session() as s:
        await journal.record(s, key=sys.argv[2], kind="turn", user_id="U1", lane=sys.argv[2],
                             payload={})
        await s.commit()
    await db.close()

asyncio.run(main())
"""


class Ears:
    """A listener's calls: the first comes when it starts listening."""

    def __init__(self) -> None:
        self.heard = 0

    def __call__(self) -> None:
        self.heard += 1

    async def reach(self, n: int, what: str) -> None:
        deadline = time.monotonic() + patience(20)
        while self.heard < n:
            assert time.monotonic() < deadline, f"{what}: heard {self.heard}, wanted {n}"
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def listening(db: Database) -> AsyncIterator[Ears]:
    ears = Ears()
    task = asyncio.create_task(notices.listen(db, ears))
    try:
        await ears.reach(1, "listening")
        yield ears
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def record_elsewhere(url: str, key: str) -> None:
    subprocess.run([sys.executable, "-c", RECORDS, url, key], cwd=REPO, check=True,
                   timeout=patience(60))


async def test_a_job_another_process_records_is_heard_and_our_own_is_not(
        tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    try:
        async with listening(db) as ears:
            async with db.session() as s:  # this process: its worker is woken without notices
                await journal.record(s, key="event:mine", kind="turn", user_id="U1",
                                     lane="a", payload={})
                await s.commit()
            async with db.session() as s:  # rolled back: nothing was recorded
                await journal.record(s, key="event:undone", kind="turn", user_id="U1",
                                     lane="b", payload={})
                await s.rollback()
            await asyncio.to_thread(record_elsewhere, db.url, "event:theirs")
            await ears.reach(2, "the other process's job")
            await asyncio.to_thread(record_elsewhere, db.url, "event:theirs")  # seen before
            await asyncio.to_thread(record_elsewhere, db.url, "event:more")
            await ears.reach(3, "its next job")
            assert ears.heard == 3  # not ours, not the rollback, not a key seen before
    finally:
        await db.close()


async def test_a_listener_whose_connection_is_ended_listens_again(tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    try:
        async with listening(db) as ears:
            async with db.session() as s:  # the server ends the listener's connection
                ended = await s.scalar(text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                    "application_name = :me AND pid <> pg_backend_pid() AND query LIKE "
                    "'LISTEN%'"), {"me": application_name()})
            assert ended == 1
            await ears.reach(2, "listening again")  # and it wakes its worker then
            await asyncio.to_thread(record_elsewhere, db.url, "event:after")
            await ears.reach(3, "a job recorded after")
    finally:
        await db.close()
