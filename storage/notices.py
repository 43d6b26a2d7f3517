"""Work recorded by one process wakes the workers of the others at once, on PostgreSQL.

A transaction that records claimable work (a new job, jobs given back or freed from a dead
process) ends with `tell`: a `NOTIFY` on CHANNEL, sent by the server when it commits (a
rolled-back one tells nothing; several in one transaction are one notice). Every worker
`listen`s on a connection of its own and is woken by the notices of other processes (its own
process wakes it without the database). Polling stays: on SQLite, which has no notices, and
for what no notice says (a lease that ran out, a retry's time come); a listener whose
connection is lost makes it again after a pause, and wakes its worker then, for what was
recorded while it was not listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.processes import process_name

log = logging.getLogger(__name__)

CHANNEL = "brain_work"
PAUSES = (1.0, 2.0, 5.0, 10.0, 30.0)  # seconds before listening again, one after another


async def tell(s: AsyncSession) -> None:
    """Wake the other processes' workers when this transaction commits (PostgreSQL only)."""
    if s.get_bind().dialect.name == "postgresql":
        await s.execute(text("SELECT pg_notify(:channel, :sender)"),
                        {"channel": CHANNEL, "sender": process_name()})


async def listen(db: Database, heard: Callable[[], None]) -> None:
    """Until cancelled: `heard()` for each notice of another process, and each time the
    connection is made (what was recorded meanwhile). Returns at once on SQLite."""
    if db.engine.dialect.name != "postgresql":
        return
    me = process_name()

    def on_notice(_conn: Any, _pid: int, _channel: str, sender: str) -> None:
        if sender != me:
            heard()

    failures = 0
    while True:
        try:
            await _listening(db, on_notice, heard)
            failures = 0
        except Exception as exc:  # the server is down or restarting: listen again later
            if failures == 0:
                log.warning("not hearing other processes' work (%s); polling meanwhile",
                            str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            failures += 1
        await asyncio.sleep(PAUSES[min(failures, len(PAUSES) - 1)])


async def _listening(db: Database, on_notice: Callable[..., None],
                     heard: Callable[[], None]) -> None:
    """Listen on a connection of the locks' engine until it is lost (the worker's own pool
    is for its work). The connection is closed after, never given back with its LISTEN."""
    conn = await db.lock_engine().connect()
    try:
        raw = (await conn.get_raw_connection()).driver_connection
        assert raw is not None
        lost = asyncio.Event()
        raw.add_termination_listener(lambda _conn: lost.set())
        await raw.add_listener(CHANNEL, on_notice)
        heard()
        await lost.wait()
    finally:
        with contextlib.suppress(Exception):
            await conn.invalidate()
        with contextlib.suppress(Exception):
            await conn.close()
