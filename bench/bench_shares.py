"""What sharing the work among people costs the journal's claim (storage/repositories/shares.py).

    .venv/bin/python bench/bench_shares.py [--backlog 400 5000] [--database postgres]

A journal holding a day's finished jobs (5,000 of 50 people) and a backlog of one person's
pending jobs (each its own lane, as top-level DMs are); the median of 40 claims of a batch of 4
(rolled back, so every claim sees the same backlog), taken in turn: the claim before issue 31
(oldest first, `ARRIVAL_ORDER` below, kept here only to compare), round-robin without a share,
and with the default share (BRAIN_USER_RUNNING=2, BRAIN_USER_RATE=30/min). The fair claim
reads every claimable job to order them by person, so its time grows with the backlog.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import select, update  # noqa: E402
from sqlalchemy.ext.asyncio import AsyncSession  # noqa: E402

from bot.jobs.queue import METERED  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.models import Job  # noqa: E402
from storage.repositories import journal
from storage.repositories.shares import Shares  # noqa: E402
from tests import databases  # noqa: E402

DEFAULT = Shares(running=2, rate=30, window=timedelta(minutes=1), metered=tuple(METERED))


async def _journal(url: str, backlog: int) -> Database:
    db = await Database.open(url)
    async with db.session() as s:
        await journal.record_many(s, [
            {"key": f"done:{i}", "kind": "turn", "user_id": f"U{i % 50:03d}",
             "lane": f"done:{i}", "payload": {"text": "x" * 200}} for i in range(5000)])
        await s.execute(update(Job).values(state="done",
                                           finished_at=datetime.now(UTC) - timedelta(hours=1)))
        await journal.record_many(s, [
            {"key": f"flood:{i}", "kind": "turn", "user_id": "UFLOOD", "lane": f"flood:{i}",
             "payload": {"text": "x" * 200}} for i in range(backlog)])
        await s.commit()
    return db


async def _arrival_order(s: AsyncSession) -> None:
    """The claim before issue 31: the 4 oldest claimable jobs."""
    now = datetime.now(UTC)
    picked = (select(Job.id).where(journal._CLAIMABLE).order_by(Job.id).limit(4)
              .correlate(None).scalar_subquery())
    await s.execute(update(Job).where(Job.id.in_(picked), journal._CLAIMABLE)
                    .values(state="running", lease_owner="bench",
                            lease_until=now + timedelta(seconds=60))
                    .execution_options(synchronize_session=False), {"now": now})


async def _fair(s: AsyncSession, shares: Shares | None) -> None:
    await journal.claim(s, "bench", limit=4, lease=timedelta(seconds=60), shares=shares)


async def _claims(db: Database, n: int = 40) -> list[float]:
    ways: list[Callable[[AsyncSession], Awaitable[None]]] = [
        _arrival_order, lambda s: _fair(s, None), lambda s: _fair(s, DEFAULT)]
    took: list[list[float]] = [[] for _ in ways]
    for i in range(n + 3):  # the first 3 rounds warm up
        for k, way in enumerate(ways):
            began = time.perf_counter()
            async with db.session() as s:
                await way(s)
                await s.rollback()
            if i >= 3:
                took[k].append(time.perf_counter() - began)
    return [statistics.median(t) * 1000 for t in took]


async def main(backlogs: list[int], database: str) -> None:
    if database == "postgres":
        databases.set_backend("postgres")
    print(f"claim of a batch of 4 on {database}, median of 40 (ms)")
    print(f"{'backlog':>8}  {'oldest first':>12}  {'round-robin':>12}  {'with the share':>15}")
    for backlog in backlogs:
        url = databases.fresh_url(Path(tempfile.mkdtemp(prefix="bench-shares-")))
        db = await _journal(url, backlog)
        try:
            before, plain, shared = await _claims(db)
        finally:
            await db.close()
            databases.drop_created()
        print(f"{backlog:>8}  {before:>12.1f}  {plain:>12.1f}  {shared:>15.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backlog", type=int, nargs="+", default=[0, 400, 5000])
    parser.add_argument("--database", choices=databases.BACKENDS, default="sqlite")
    args = parser.parse_args()
    asyncio.run(main(args.backlog, args.database))
