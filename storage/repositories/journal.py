"""The intake journal: every unit of work from Slack, recorded before the ack.

A job is pending until a worker claims it with a lease, running while the lease holds, then
done or failed. A lease that runs out (its process died or hung) makes the job claimable again,
by any process. Jobs of one lane (a conversation) run one at a time, in the order they were
recorded, across processes: a job is claimable only when no earlier job of its lane is still
pending or running.

Every function takes an explicit `AsyncSession`; the caller commits. The claim is a
compare-and-set (`UPDATE ... WHERE state = <what we read>`), so two claimers never both win;
on PostgreSQL the candidate rows are read `FOR UPDATE SKIP LOCKED`, so replicas do not queue
on each other's rows.

Leases are fenced: given its owner, recording an effect or the end of a job succeeds only while
that owner still holds the lease, so a worker whose lease ran out (stalled, cut off from the
database) cannot finish a job another worker has taken over. A finished job keeps the owner
that finished it (`lease_owner`: which replica ran it). Lease times come from the database's
clock on PostgreSQL (replicas on several machines need not agree on the time), from this
machine's on SQLite (one machine).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    Table,
    Text,
    bindparam,
    cast,
    delete,
    func,
    literal,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from storage import notices
from storage.errors import InvalidValue
from storage.models import Job, utcnow
from storage.repositories.common import clock, dialect_insert
from storage.repositories.fencing import end_transactions_of
from storage.repositories.shares import OPEN_STATES, Shares, claimable, fair_order
from storage.text import clean_value

STATES = ("pending", "running", "done", "failed")


@dataclass(frozen=True)
class JobRow:
    id: int
    key: str
    kind: str
    user_id: str
    lane: str
    payload: Any
    state: str
    attempts: int
    lease_owner: str | None
    lease_until: datetime | None
    result: Any
    error: str | None
    created_at: datetime
    finished_at: datetime | None


def _row(j: Job) -> JobRow:
    return JobRow(j.id, j.key, j.kind, j.user_id, j.lane, j.payload, j.state, j.attempts,
                  j.lease_owner, j.lease_until, j.result, j.error, j.created_at, j.finished_at)


async def record(s: AsyncSession, *, key: str, kind: str, user_id: str, lane: str,
                 payload: Any) -> tuple[int, bool]:
    """Record a job; (id, True) the first time `key` is seen, (id of the first, False) after.

    The unique key is the dedupe record: a retried delivery finds the job already there.
    """
    return (await record_many(s, [{"key": key, "kind": kind, "user_id": user_id,
                                   "lane": lane, "payload": payload}]))[0]


# Rows per INSERT: 9 values each, well under SQLite's 32,766 bound variables.
RECORD_CHUNK = 500


async def record_many(s: AsyncSession, jobs: list[dict[str, Any]]) -> list[tuple[int, bool]]:
    """`record` for several jobs at once, in order: one multi-row INSERT (and one SELECT for
    keys seen before) instead of a statement each, so a burst's group commit stays a few
    statements. A key repeated within `jobs` is recorded once (the later ones get False).
    Other processes' workers hear of new work when the transaction commits (notices.py)."""
    result = await _record_rows(s, jobs)
    if any(first for _, first in result):
        await notices.tell(s)
    return result


async def _record_rows(s: AsyncSession, jobs: list[dict[str, Any]]) -> list[tuple[int, bool]]:
    for job in jobs:
        for name in ("key", "kind", "lane"):
            value = job.get(name)
            if not isinstance(value, str) or not value.strip():
                raise InvalidValue(f"job {name} must be a non-empty string")
    now = utcnow()
    insert = dialect_insert(s, Job)
    if insert is None:  # a database without INSERT ... ON CONFLICT: a savepoint each
        return [await _record_portably(s, j["key"], j["kind"], j["user_id"], j["lane"],
                                       j["payload"], now) for j in jobs]
    firsts: dict[str, dict[str, Any]] = {}
    for job in jobs:
        firsts.setdefault(job["key"], job)
    ids: dict[str, int] = {}
    rows = [{"key": j["key"], "kind": j["kind"], "user_id": j["user_id"] or "",
             "lane": j["lane"], "payload": clean_value(j["payload"]), "state": "pending",
             "attempts": 0, "created_at": now, "updated_at": now} for j in firsts.values()]
    table = Job.__table__
    assert isinstance(table, Table)
    for start in range(0, len(rows), RECORD_CHUNK):
        statement = (dialect_insert(s, table).values(rows[start:start + RECORD_CHUNK])
                     .on_conflict_do_nothing(index_elements=["key"])
                     .returning(table.c.id, table.c.key))
        ids.update({key: int(job_id) for job_id, key in (await s.execute(statement)).all()})
    new = set(ids)
    seen = [key for key in firsts if key not in new]
    for start in range(0, len(seen), RECORD_CHUNK):
        found = await s.execute(select(Job.id, Job.key).where(
            Job.key.in_(seen[start:start + RECORD_CHUNK])))
        ids.update({key: int(job_id) for job_id, key in found.all()})
    result: list[tuple[int, bool]] = []
    for job in jobs:
        key = job["key"]
        if key not in ids:  # pragma: no cover - the conflict row cannot vanish in a transaction
            raise InvalidValue(f"job {key!r} neither inserted nor found")
        first = key in new
        new.discard(key)  # a repeat of the key within this batch was seen before
        result.append((ids[key], first))
    return result


async def _record_portably(s: AsyncSession, key: str, kind: str, user_id: str, lane: str,
                           payload: Any, now: datetime) -> tuple[int, bool]:
    existing = await s.scalar(select(Job.id).where(Job.key == key))
    if existing is not None:
        return int(existing), False
    job = Job(key=key, kind=kind, user_id=user_id or "", lane=lane, payload=payload,
              state="pending", attempts=0, created_at=now, updated_at=now)
    try:
        async with s.begin_nested():
            s.add(job)
    except IntegrityError:  # a concurrent delivery of the same key won
        found = await s.scalar(select(Job.id).where(Job.key == key))
        if found is None:
            raise
        return int(found), False
    return job.id, True


# A job is claimable when it is pending (and its retry pause is over), or running under a lease
# that ran out; and no earlier job of its lane is open (storage/repositories/shares.py). Built once.
_NOW = bindparam("now", type_=Job.__table__.c.lease_until.type)
_SINCE = bindparam("since", type_=Job.__table__.c.finished_at.type)
_CLAIMABLE = claimable(Job, _NOW)


@functools.lru_cache(maxsize=64)
def _picked(dialect: str, limit: int, shares: Shares | None,
            kinds: tuple[str, ...] | None) -> Any:
    """What a claim takes (built once per shape: building it costs more than running it): on
    PostgreSQL a CTE of (id, was: the lease owner it had), elsewhere a subquery of ids."""
    fair = fair_order(dialect, limit, shares, _NOW, _SINCE, kinds)
    if dialect == "postgresql":
        # Window functions cannot be locked: lock the picked rows of `jobs` themselves. As a
        # materialized CTE: a plain `IN (... LIMIT n FOR UPDATE SKIP LOCKED)` may be run again
        # for the rows the UPDATE scans, each run skipping the rows the last one locked, and
        # a claim of 2 took 4 jobs (past a person's share, out of turn).
        return (select(Job.id, Job.lease_owner.label("was"))
                .join(fair, fair.c.id == Job.id).where(_CLAIMABLE)
                .order_by(fair.c.turn, Job.id).limit(limit)
                .with_for_update(of=Job, skip_locked=True)
                .cte("picked").prefix_with("MATERIALIZED"))
    picked = select(fair.c.id).order_by(fair.c.turn, fair.c.id).limit(limit)
    return picked.correlate(None).scalar_subquery()


async def claim(s: AsyncSession, owner: str, *, limit: int, lease: timedelta,
                kinds: tuple[str, ...] | None = None,
                shares: Shares | None = None) -> list[JobRow]:
    """Take up to `limit` claimable jobs for `owner`; each gets a lease. Taken round-robin over
    the people the jobs are for, each person's in the order recorded, within `shares`' limits
    (storage/repositories/shares.py); oldest first without them.

    One `UPDATE ... RETURNING` of the picked rows: on SQLite the statement runs under the
    database's write lock, on PostgreSQL the picked rows are locked `FOR UPDATE SKIP LOCKED`
    (rows another replica is claiming are skipped, not waited for) and re-checked, and a job
    taken over from a stalled process ends that process's open transactions (fencing.py)."""
    if limit <= 0:
        return []
    now = await clock(s)
    dialect = s.get_bind().dialect.name
    picked = _picked(dialect, limit, shares, kinds)
    window = shares.window if shares is not None else timedelta(0)
    params = {"now": now, "since": now - window}
    claimed = (update(Job).values(state="running", lease_owner=owner, lease_until=now + lease,
                                  attempts=Job.attempts + 1, updated_at=now)
               .execution_options(synchronize_session=False, populate_existing=True))
    # SQLite picks the rows in this very statement, under its write lock (and a second check
    # there made it scan every waiting job); PostgreSQL re-checks the rows it locked.
    if dialect != "postgresql":
        rows = list(await s.scalars(claimed.where(Job.id.in_(picked)).returning(Job), params))
    else:  # and a job taken over from another process fences that process
        found = (await s.execute(claimed.where(Job.id == picked.c.id, _CLAIMABLE)
                                 .returning(Job, picked.c.was), params)).all()
        rows = [job for job, _was in found]
        await end_transactions_of(s, [was for _job, was in found if was], owner)
    return sorted((_row(j) for j in rows), key=lambda r: r.id)


async def renew(s: AsyncSession, owner: str, job_ids: list[int], lease: timedelta) -> list[int]:
    """Extend the leases `owner` still holds; returns the ids it still holds (a job missing
    was taken over by another worker after its lease ran out, or ended meanwhile)."""
    if not job_ids:
        return []
    now = await clock(s)
    held = await s.scalars(
        update(Job).where(Job.id.in_(job_ids), Job.lease_owner == owner,
                          Job.state == "running")
        .values(lease_until=now + lease, updated_at=now)
        .returning(Job.id)
        .execution_options(synchronize_session=False))
    return sorted(held)


def _merged(s: AsyncSession, patch: dict[str, Any]) -> Any:
    """`result` with `patch`'s keys set, in SQL (one statement, no read first)."""
    value = json.dumps(clean_value(patch))
    if s.get_bind().dialect.name == "postgresql":
        def jsonb(text: str) -> Any:  # text parsed by the server, not re-encoded by the driver
            return cast(literal(text, Text), JSONB)

        current = func.coalesce(func.nullif(cast(Job.result, JSONB), jsonb("null")),
                                jsonb("{}"))
        return cast(current.op("||")(jsonb(value)), JSON)
    return func.json_patch(func.coalesce(Job.result, "{}"), value)


def holding(job_id: int, owner: str | None) -> list[Any]:
    """The job, and (given an owner) only while that owner holds it (the conditions of a
    statement's WHERE)."""
    cond = [Job.id == job_id]
    if owner is not None:
        cond += [Job.lease_owner == owner, Job.state == "running"]
    return cond


async def set_result(s: AsyncSession, job_id: int, result: dict[str, Any],
                     owner: str | None = None) -> bool:
    """Merge `result` into the job's record of effects already made (e.g. a posted reply).
    With `owner`: only while it holds the lease (False, nothing written, when it does not)."""
    done = await s.execute(update(Job).where(*holding(job_id, owner))
                           .values(result=_merged(s, result), updated_at=utcnow())
                           .execution_options(synchronize_session=False))
    return int(done.rowcount) == 1  # type: ignore[attr-defined]


async def finish(s: AsyncSession, job_id: int, state: str, error: str | None = None,
                 owner: str | None = None, result: dict[str, Any] | None = None) -> bool:
    """The job ends done or failed, with `result` (effects recorded with the end) merged in.
    With `owner`: only while it holds the lease (False when another worker took the job
    over), and the job keeps it as who finished it."""
    if state not in ("done", "failed"):
        raise InvalidValue(f"a job finishes done or failed, not {state!r}")
    now = utcnow()
    values: dict[str, Any] = {"state": state, "error": error, "lease_owner": owner,
                              "lease_until": None, "finished_at": now, "updated_at": now}
    if result:
        values["result"] = _merged(s, result)
    done = await s.execute(update(Job).where(*holding(job_id, owner)).values(**values)
                           .execution_options(synchronize_session=False))
    return int(done.rowcount) == 1  # type: ignore[attr-defined]


async def release(s: AsyncSession, owner: str, job_ids: list[int]) -> int:
    """Give claimed jobs back (a clean shutdown before they started): pending again, and the
    attempt does not count."""
    if not job_ids:
        return 0
    result = await s.execute(
        update(Job).where(Job.id.in_(job_ids), Job.lease_owner == owner,
                          Job.state == "running")
        .values(state="pending", lease_owner=None, lease_until=None,
                attempts=Job.attempts - 1,
                updated_at=utcnow())
        .execution_options(synchronize_session=False))
    if result.rowcount:  # type: ignore[attr-defined]
        await notices.tell(s)  # another process takes them up at once
    return int(result.rowcount)  # type: ignore[attr-defined]


async def retry_later(s: AsyncSession, owner: str, job_id: int, delay: timedelta,
                      error: str, *, counted: bool = True,
                      result: dict[str, Any] | None = None) -> bool:
    """A failed attempt: pending again, claimable after `delay` (its lane waits for it).
    Not `counted`: the attempt is given back (the job waited on something else: storage that
    could not be written), so waiting never uses up its attempts. `result` is merged in.
    False when `owner` no longer held the job."""
    now = await clock(s)
    values: dict[str, Any] = {"state": "pending", "lease_owner": None,
                              "lease_until": now + delay, "error": error, "updated_at": now}
    if not counted:
        values["attempts"] = Job.attempts - 1
    if result:
        values["result"] = _merged(s, result)
    done = await s.execute(update(Job).where(*holding(job_id, owner)).values(**values)
                           .execution_options(synchronize_session=False))
    return int(done.rowcount) == 1  # type: ignore[attr-defined]


async def get(s: AsyncSession, job_id: int) -> JobRow | None:
    found = await s.get(Job, job_id, populate_existing=True)
    return _row(found) if found is not None else None


async def by_key(s: AsyncSession, key: str) -> JobRow | None:
    found = await s.scalar(select(Job).where(Job.key == key)
                           .execution_options(populate_existing=True))
    return _row(found) if found is not None else None


async def counts(s: AsyncSession) -> dict[str, int]:
    """Jobs per state (for /health and `brain doctor`)."""
    rows = await s.execute(select(Job.state, func.count()).group_by(Job.state))
    out = dict.fromkeys(STATES, 0)
    for state, n in rows:
        out[str(state)] = int(n)
    return out


async def open_counts(s: AsyncSession) -> dict[str, int]:
    """Jobs pending and running (for /health and a worker's idle check)."""
    by_kind = (await open_by_kind(s)).items()
    return {state: sum(n for (_kind, st), n in by_kind if st == state) for state in OPEN_STATES}


async def open_by_kind(s: AsyncSession) -> dict[tuple[str, str], int]:
    """Jobs pending and running by (kind, state) (and /metrics): through the state index, so
    the cost follows the open work, not the day of finished jobs kept."""
    rows = await s.execute(select(Job.kind, Job.state, func.count())
                           .where(Job.state.in_(OPEN_STATES)).group_by(Job.kind, Job.state))
    return {(str(kind), str(state)): int(n) for kind, state, n in rows}


async def prune(s: AsyncSession, older_than: datetime) -> int:
    """Forget finished jobs older than `older_than` (their dedupe window is long past)."""
    result = await s.execute(delete(Job).where(Job.state.in_(("done", "failed")),
                                               Job.finished_at < older_than))
    return int(result.rowcount)  # type: ignore[attr-defined]


async def cancel_pending(s: AsyncSession, reason: str, user_ids: list[str] | None = None,
                         *, prefix: str | None = None, plain: bool = False) -> int:
    """Fail the pending jobs (of these users, or all; of owners whose key starts with
    `prefix`; with `plain`, of owners whose key has no `-`: a workspace's people, see
    bot/tenancy/people.py): the app was uninstalled or a token revoked, so the work can no longer be
    done. Running jobs end on their own."""
    now = utcnow()
    query = update(Job).where(Job.state == "pending")
    if user_ids is not None:
        if not user_ids:
            return 0
        query = query.where(Job.user_id.in_(user_ids))
    if prefix is not None:
        query = query.where(Job.user_id.startswith(prefix, autoescape=True))
    if plain:
        query = query.where(~Job.user_id.contains("-", autoescape=True))
    result = await s.execute(query.values(state="failed", error=reason, lease_owner=None,
                                          lease_until=None, finished_at=now, updated_at=now)
                             .execution_options(synchronize_session=False))
    return int(result.rowcount)  # type: ignore[attr-defined]
