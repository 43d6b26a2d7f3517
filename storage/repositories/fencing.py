"""Taking over another process's work: the jobs of one that died freed at once (`lapse`; who
is dead is bot/jobs/owners.py's to say, or `unconnected`'s for other machines), and a process
that stalled past its leases fenced in the database itself.

A lease fences a stalled worker's effects (storage/repositories/journal.py), but not its open
transactions: a replica frozen (SIGSTOP, a VM paused, a swap storm) in the middle of one keeps
its row and advisory locks, and the worker that takes its job over waits on them until it
thaws. PostgreSQL's `idle_in_transaction_session_timeout` does not end them: a connection can
be frozen in the middle of the extended protocol (a statement parsed, not yet run), which the
server counts as active. So the worker that takes a job over ends the previous owner's open
transactions itself: every connection names its process (`application_name`,
storage/processes.py), and `pg_terminate_backend` ends those of the stalled process that are
in a transaction. Its locks go with them; when it thaws, its statements fail, its leases are
gone, and it writes nothing (bot/jobs/worker.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

from sqlalchemy import select, text, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from storage import notices
from storage.models import Job
from storage.processes import application_name, process_of
from storage.repositories.common import clock

log = logging.getLogger(__name__)

_END = text(
    "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
    "WHERE datname = current_database() AND application_name = ANY(:names) "
    "AND xact_start IS NOT NULL AND pid <> pg_backend_pid()")


async def end_transactions_of(s: AsyncSession, owners: Iterable[str], taker: str) -> int:
    """End the open transactions of the processes behind lease `owners` whose jobs `taker`
    took over (never `taker`'s own process's); how many were ended. PostgreSQL only; a role
    that may not end them gets a warning, and the claim stands."""
    mine = process_of(taker)
    names = sorted({application_name(p) for p in map(process_of, owners) if p != mine})
    if not names or s.get_bind().dialect.name != "postgresql":
        return 0
    try:
        async with s.begin_nested():
            ended = [pid for pid, done in (await s.execute(_END, {"names": names})).all()
                     if done]
    except DBAPIError as exc:  # not allowed to (another role's connections)
        log.warning("could not end the open transactions of %s, whose jobs were taken over: "
                    "%s", ", ".join(names), str(exc.orig).splitlines()[0])
        return 0
    if ended:  # the thawed process's own log says what it lost; a dead one's left nothing
        log.info("ended %d open transaction(s) of %s, stalled past its leases (its jobs "
                    "were taken over)", len(ended), ", ".join(names))
    return len(ended)


_CONNECTED = text(
    "SELECT now() - pg_postmaster_start_time(), ARRAY(SELECT DISTINCT application_name "
    "FROM pg_stat_activity WHERE datname = current_database())")


def _printable(name: str) -> bool:
    # PostgreSQL keeps printable ASCII of an application_name and replaces the rest, so only
    # such a name can be looked for.
    return all(" " <= c <= "~" for c in name)


async def unconnected(s: AsyncSession, processes: Iterable[str], settled: timedelta) -> set[str]:
    """Which of `processes` have no connection to this database now: a process on another
    machine that died (or lost the database) has no `application_name` of its own left. None
    on SQLite, or while the server is younger than `settled` (after a restart, the processes
    that live come back one by one, at their next statement), or when this very connection
    does not carry this process's name (a pooler between: the names cannot be trusted)."""
    asked = {p for p in processes if _printable(application_name(p))}
    if not asked or s.get_bind().dialect.name != "postgresql":
        return set()
    up, names = (await s.execute(_CONNECTED)).one()
    connected = set(names)
    if up < settled or application_name() not in connected:
        return set()  # a look that cannot see its own connection (a pooler) trusts none
    return {p for p in asked if application_name(p) not in connected}


async def running_owners(s: AsyncSession) -> list[str]:
    """The owners holding a running job now."""
    found = await s.scalars(select(Job.lease_owner).where(
        Job.state == "running", Job.lease_owner.is_not(None)).distinct())
    return [o for o in found if o]


async def lapse(s: AsyncSession, owners: list[str]) -> int:
    """End the leases of `owners`' running jobs now (their processes died): claimable at
    once, the attempt counted as a lease that ran out counts it."""
    now = await clock(s)
    result = await s.execute(
        update(Job).where(Job.lease_owner.in_(owners), Job.state == "running")
        .values(lease_until=now - timedelta(seconds=1), updated_at=now)
        .execution_options(synchronize_session=False))
    if result.rowcount:  # type: ignore[attr-defined]
        await notices.tell(s)
    return int(result.rowcount)  # type: ignore[attr-defined]
