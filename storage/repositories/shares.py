"""How the journal's claim shares the work among people (issue 31: one person's flood must
not delay everyone else).

A job's owner is the person it is for (`jobs.user_id`). The claim takes jobs round-robin over
owners: each owner's first claimable job comes before any owner's second, then the seconds,
and so on (counting the jobs each owner has running); within an owner, in the order
recorded. For *metered* kinds (the ones that run the model: turns, saves, digests) an owner
also has at most `running` jobs running at once and at most `rate` started per `window`
(running now or finished within it); past them the owner's jobs wait in the journal and are
claimed as the owner's load falls. Nothing is dropped.

A claim looks at each waiting owner's first few ready jobs only (through an index, in id
order: a claim of `limit` takes no more of one owner), so its cost follows the number of
people waiting, not the size of one person's backlog. Everything is computed inside the claim
statement from the journal itself, so it holds across processes and replicas (on PostgreSQL
the picked rows are then locked `SKIP LOCKED` and re-checked; two replicas claiming at the
same instant may, in a rare race with a retry that becomes due, run one more of an owner's
jobs than `running` for that moment).

`arrivals` counts an owner's metered jobs recorded within the window, for the intake's one
"slow down" notice (`record_notice`: one per owner at most every `NOTICE_EVERY`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    case,
    delete,
    exists,
    func,
    literal,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from storage.models import Job
from storage.repositories.common import dialect_insert

NOTICE_EVERY = timedelta(hours=1)  # an owner is told to slow down at most this often


@dataclass(frozen=True)
class Shares:
    """The limits of one owner's metered work; 0 turns a limit off."""

    running: int = 0  # metered jobs of one owner running at once
    rate: int = 0  # metered jobs of one owner started per `window`
    window: timedelta = timedelta(minutes=1)
    metered: tuple[str, ...] = ()  # the kinds the limits count (others are only ordered)

    @property
    def limited(self) -> bool:
        return bool(self.metered) and (self.running > 0 or self.rate > 0)


def _load(metered: tuple[str, ...], now: ColumnElement[Any], since: ColumnElement[Any]) -> Any:
    """Per owner: jobs running under a live lease (`busy`), the metered ones among them
    (`running`), and those plus the metered ones finished since `since` (`recent`). A job
    whose lease lapsed is not running: it is claimable again."""
    live = and_(Job.state == "running", Job.lease_until >= now)
    counted = Job.kind.in_(metered) if metered else literal(False)
    recently = and_(counted, Job.state.in_(("done", "failed")), Job.finished_at >= since)
    return (select(Job.user_id.label("owner"),
                   func.count(case((live, 1))).label("busy"),
                   func.count(case((and_(live, counted), 1))).label("running"),
                   func.count(case((counted, 1))).label("recent"))
            .where(or_(live, recently))
            .group_by(Job.user_id).subquery("load"))


OPEN_STATES = ("pending", "running")


def ready(t: Any, now: ColumnElement[Any]) -> ColumnElement[bool]:
    """`t` (jobs or an alias) is pending with its retry pause over."""
    return and_(t.state == "pending", or_(t.lease_until.is_(None), t.lease_until <= now))


def lapsed(t: Any, now: ColumnElement[Any]) -> ColumnElement[bool]:
    """`t` runs under a lease that ran out (its worker died or hung)."""
    return and_(t.state == "running", t.lease_until < now)


def lane_head(t: Any) -> ColumnElement[bool]:
    """No earlier job of `t`'s lane is still open (a conversation's turns run in order)."""
    earlier = aliased(Job)
    return ~exists().where(earlier.lane == t.lane, earlier.id < t.id,
                           earlier.state.in_(OPEN_STATES))


def claimable(t: Any, now: ColumnElement[Any]) -> ColumnElement[bool]:
    return and_(or_(ready(t, now), lapsed(t, now)), lane_head(t))


def _candidates(dialect: str, per_owner: int, metered: tuple[str, ...],
                kinds: tuple[str, ...] | None, now: ColumnElement[Any]) -> Any:
    """(id, owner, metered) of the claimable jobs a claim needs to look at: each owner's
    first `per_owner` ready metered jobs and first `per_owner` others (a claim takes no more
    of one owner), and every job whose lease lapsed. Bounded by the number of people
    waiting, not by how much one of them sent: a flood of 5,000 is 8 rows here."""
    owners = select(Job.user_id.label("owner")).where(Job.state == "pending").distinct() \
        .subquery("owners")
    parts = []
    for counted in ((True, False) if metered else (None,)):
        q = aliased(Job)
        conditions = [q.user_id == owners.c.owner, ready(q, now), lane_head(q)]
        if counted is not None:
            conditions.append(q.kind.in_(metered) if counted else q.kind.not_in(metered))
        if kinds:
            conditions.append(q.kind.in_(kinds))
        first = select(q.id).where(*conditions).order_by(q.id).limit(per_owner)
        if dialect == "postgresql":
            firsts = first.lateral("firsts")
            parts.append(select(firsts.c.id).select_from(owners.join(firsts, true())))
        else:  # SQLite: the per-owner list drives rowid lookups (no LATERAL there)
            parts.append(select(Job.id).select_from(owners).join(
                Job, Job.id.in_(first.scalar_subquery())))
    lapsed_ones = select(Job.id).where(lapsed(Job, now), lane_head(Job))
    if kinds:
        lapsed_ones = lapsed_ones.where(Job.kind.in_(kinds))
    ids = union_all(*parts, lapsed_ones).subquery("ids")
    is_metered = case((Job.kind.in_(metered), 1), else_=0) if metered else literal(0)
    return (select(Job.id, Job.user_id.label("owner"), is_metered.label("metered"))
            .join(ids, ids.c.id == Job.id).subquery("c"))


def fair_order(dialect: str, limit: int, shares: Shares | None, now: ColumnElement[Any],
               since: ColumnElement[Any], kinds: tuple[str, ...] | None = None) -> Any:
    """The claimable jobs a claim of `limit` may take, as a subquery of (id, turn): each job
    `shares` allows, with its owner's turn: the owner's jobs running now plus its place among
    the owner's candidates. Claimed by (turn, id), the owners with the least running come
    first, and a person's flood never goes ahead of anyone else's first job."""
    metered = shares.metered if shares is not None and shares.limited else ()
    candidates = _candidates(dialect, limit, metered, kinds, now)
    c = candidates.c
    load = _load(metered, now, since)
    # One window (one sort): the place among the owner's candidates, and among their
    # metered ones (a running count).
    step = (select(c.id, c.metered,
                   func.row_number().over(partition_by=c.owner, order_by=c.id).label("nth"),
                   func.sum(c.metered).over(partition_by=c.owner, order_by=c.id)
                   .label("nth_metered"),
                   func.coalesce(load.c.busy, 0).label("busy"),
                   func.coalesce(load.c.running, 0).label("running"),
                   func.coalesce(load.c.recent, 0).label("recent"))
            .select_from(candidates.outerjoin(load, load.c.owner == c.owner))
            .subquery("s"))
    s = step.c
    limits = []
    if shares is not None and metered and shares.running > 0:
        limits.append(s.running + s.nth_metered <= shares.running)
    if shares is not None and metered and shares.rate > 0:
        limits.append(s.recent + s.nth_metered <= shares.rate)
    allowed = select(s.id, (s.busy + s.nth).label("turn"))
    if limits:
        allowed = allowed.where(or_(s.metered == 0, and_(*limits)))
    return allowed.subquery("fair")


async def arrivals(s: AsyncSession, owners: list[str], shares: Shares,
                   now: datetime) -> dict[str, int]:
    """Each owner's metered jobs recorded within the window up to `now`."""
    if not owners or not shares.metered:
        return {}
    rows = await s.execute(
        select(Job.user_id, func.count())
        .where(Job.user_id.in_(owners), Job.kind.in_(shares.metered),
               Job.created_at >= now - shares.window)
        .group_by(Job.user_id))
    return {str(owner): int(n) for owner, n in rows}


async def record_notice(s: AsyncSession, *, key: str, kind: str, user_id: str,
                        payload: Any, now: datetime,
                        every: timedelta = NOTICE_EVERY) -> bool:
    """Record the job `key` unless one was recorded within `every` (a finished one older than
    that is replaced); True when recorded now. Two processes at once record it once (the
    key is unique)."""
    await s.execute(delete(Job).where(Job.key == key, Job.state.in_(("done", "failed")),
                                      Job.created_at < now - every))
    statement = dialect_insert(s, Job)
    row = {"key": key, "kind": kind, "user_id": user_id, "lane": key, "payload": payload,
           "state": "pending", "attempts": 0, "created_at": now, "updated_at": now}
    if statement is None:  # a database without INSERT ... ON CONFLICT
        if await s.scalar(select(Job.id).where(Job.key == key)) is not None:
            return False
        s.add(Job(**row))
        await s.flush()
        return True
    done = await s.execute(statement.values(row).on_conflict_do_nothing(index_elements=["key"])
                           .returning(Job.id))
    return done.first() is not None
