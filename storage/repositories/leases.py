"""The job lease a task's work runs under (bot/jobs/worker.py sets it around a job's handler),
for the writes that check it in their own transaction: the database store's writes
(storage/vault/locks.py), so a worker whose job was taken over commits nothing."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Job
from storage.repositories.journal import holding

# The job lease the work of this task runs under (`working_for`), for the writes that check
# it in their own transaction (`lease_holds`).
_LEASE: contextvars.ContextVar[tuple[int, str] | None] = contextvars.ContextVar(
    "brain_lease", default=None)


@contextlib.contextmanager
def working_for(job_id: int, owner: str | None) -> Iterator[None]:
    """Within the block, this task works for job `job_id` under `owner`'s lease (None: not
    fenced)."""
    token = _LEASE.set((job_id, owner) if owner is not None else None)
    try:
        yield
    finally:
        _LEASE.reset(token)


async def lease_holds(s: AsyncSession) -> bool:
    """Does the lease this task works under (`working_for`) still hold? True when it works
    under none. Read last in a write's transaction, before its commit: a takeover after the
    read ends that transaction itself (`fencing.end_transactions_of`), so the write commits
    only while its lease holds (and the job's row is not locked: a claim never waits)."""
    lease = _LEASE.get()
    if lease is None:
        return True
    return await s.scalar(select(Job.id).where(*holding(*lease))) is not None
