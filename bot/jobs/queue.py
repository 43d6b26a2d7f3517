"""Durable intake: the journal as the adapters see it (the worker that runs it is
bot/jobs/worker.py).

An adapter records a job (`JobQueue.record`) before it acknowledges the request, so a request
Slack saw acknowledged is in the database. The `Worker` claims jobs with a lease and runs the
handler registered for their kind; a lease that runs out (the process died) makes the job
claimable again, here or in another process. Jobs of one lane (a conversation) run one at a
time, in the order they were recorded, across processes (the claim enforces it). The claim
shares the work among people (`Shares`, storage/repositories/shares.py): round-robin over them, and each
person's model work within BRAIN_USER_RUNNING and BRAIN_USER_RATE; a person whose messages
arrive faster than the rate is told so once (a `SLOW_DOWN` job recorded with theirs).

Handlers make their effects idempotent with `JobContext.result` / `JobContext.remember`: an
effect already recorded there (a reply posted) is not made again when the job runs twice.

Replicas share the journal. A worker that loses a job's lease (it stalled past the lease, or
lost the database for that long, and another worker took the job over) stops that job: the
renewal finds it gone and cancels it, and recording an effect or the end raises `LeaseLost`,
so two workers never both carry a job's effects through.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from storage import notices
from storage.db import Database, Session
from storage.processes import process_of
from storage.repositories import fencing, journal, shares
from storage.repositories.journal import JobRow
from storage.repositories.shares import Shares

# A write made in a job's end transaction (`JobContext.at_end`), given that transaction
# (`Session`, for the adapters that hand it on to the brain: they never use it themselves).
Ending = Callable[[Session], Awaitable[None]]

log = logging.getLogger(__name__)

__all__ = ["JobContext", "JobQueue", "JobRow", "LeaseLost", "Shares"]

LEASE = timedelta(seconds=60)
JOB_MEMORY = timedelta(days=1)  # finished jobs are kept this long (retries come within minutes)


class JobKind(StrEnum):
    """What a job is: the worker runs the handler registered for its kind."""

    TURN = "turn"  # a message: one turn of a conversation
    BUTTON = "button"  # a card's button (move, undo)
    DIGEST = "digest"  # /digest
    SCHEDULED_DIGEST = "scheduled_digest"  # a subscribed digest's slot, claimed by its scheduler
    THREAD_STARTED = "thread_started"  # the assistant panel opened a thread
    THREAD_CONTEXT = "thread_context"  # the channel beside an assistant thread changed
    CAPTURE = "capture"  # a message captured: the Save-to-brain shortcut or the capture reaction
    HOME = "home"  # the App Home opened
    HOME_ACTION = "home_action"  # a button or select on the App Home
    REMINDER = "reminder"  # a due-date reminder to deliver
    REMINDER_BUTTON = "reminder_button"  # Done / Snooze on a reminder
    OPEN_NOTE = "open_note"  # a source button under an answer: the note in a modal
    SLOW_DOWN = "slow_down"  # a person sends faster than BRAIN_USER_RATE: told once


# What runs the model, counted against a person's share (BRAIN_USER_RUNNING, BRAIN_USER_RATE).
METERED = (JobKind.TURN, JobKind.CAPTURE, JobKind.DIGEST)


class LeaseLost(Exception):
    """This worker no longer holds the job: another one took it over."""


class JobQueue:
    """The journal over the shared database; no SQL leaves this object."""

    def __init__(self, db: Database, shares: Shares | None = None) -> None:
        self.db = db
        self.shares = shares  # each person's share of the work (None: round-robin alone)
        self._waiting: list[tuple[dict[str, Any], asyncio.Future[tuple[int, bool]]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def record(self, *, key: str, kind: str, user_id: str, lane: str,
                     payload: Any) -> tuple[int, bool]:
        """Durably record a job (committed on return); False when `key` was seen before.

        Records that arrive together are committed together (one transaction, on the intake's
        own connection): a burst of deliveries is acknowledged in a few commits, not one each.
        """
        for name, value in (("key", key), ("kind", kind), ("lane", lane)):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"job {name} must be a non-empty string")
        done: asyncio.Future[tuple[int, bool]] = asyncio.get_running_loop().create_future()
        self._waiting.append(({"key": key, "kind": kind, "user_id": user_id, "lane": lane,
                               "payload": payload}, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return await done

    async def _flush(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            try:
                async with self.db.intake_session() as s:
                    jobs = [job for job, _ in batch]
                    recorded = await journal.record_many(s, jobs)
                    await self._tell_the_hasty(s, [j for j, (_, new) in
                                                   zip(jobs, recorded, strict=True) if new])
                    await s.commit()
            except Exception as exc:  # nothing of the batch is recorded: each caller is told
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                continue
            for (_, done), result in zip(batch, recorded, strict=True):
                if not done.done():
                    done.set_result(result)

    async def _tell_the_hasty(self, s: Any, new: list[dict[str, Any]]) -> None:
        """A person whose metered jobs recorded within the rate's period now pass it gets one
        SLOW_DOWN job (at most one an hour): their work waits its turn, and they hear why."""
        limits = self.shares
        if limits is None or limits.rate <= 0:
            return
        owners = sorted({j["user_id"] for j in new if j["kind"] in limits.metered
                         and j["user_id"]})
        now = datetime.now(UTC)
        for owner, count in (await shares.arrivals(s, owners, limits, now)).items():
            if count > limits.rate and await shares.record_notice(
                    s, key=f"slowdown:{owner}", kind=JobKind.SLOW_DOWN, user_id=owner,
                    payload={"user": owner, "rate": limits.rate,
                             "seconds": int(limits.window.total_seconds())}, now=now):
                log.info("%s passed %d messages in %s: told to slow down", owner,
                         limits.rate, limits.window)

    async def claim(self, owner: str, limit: int, lease: timedelta = LEASE) -> list[JobRow]:
        async with self.db.session() as s:
            rows = await journal.claim(s, owner, limit=limit, lease=lease, shares=self.shares)
            await s.commit()
        return rows

    async def renew(self, owner: str, job_ids: list[int],
                    lease: timedelta = LEASE) -> list[int]:
        """The ids of `job_ids` whose leases `owner` still holds (now extended)."""
        async with self.db.session() as s:
            held = await journal.renew(s, owner, job_ids, lease)
            await s.commit()
        return held

    async def remember(self, job_id: int, result: dict[str, Any],
                       owner: str | None = None) -> None:
        """Record effects; with `owner`, LeaseLost when it no longer holds the job."""
        async with self.db.session() as s:
            held = await journal.set_result(s, job_id, result, owner)
            await s.commit()
        if not held:
            raise LeaseLost(f"job {job_id} was taken over by another worker")

    async def finish(self, job_id: int, state: str, error: str | None = None,
                     owner: str | None = None, result: dict[str, Any] | None = None) -> bool:
        """End the job (with effects noted for its end); with `owner`, False (nothing
        written) when it no longer holds it."""
        async with self.db.session() as s:
            held = await journal.finish(s, job_id, state, error, owner, result)
            await s.commit()
        return held

    async def finish_and_claim(self, job_id: int, owner: str, limit: int,
                               lease: timedelta = LEASE, result: dict[str, Any] | None = None,
                               ending: Sequence[Ending] = (),
                               ) -> tuple[bool, list[JobRow]]:
        """`finish` (done) and, in the same transaction, the job's `ending` writes (when the
        end is this worker's: `JobContext.at_end`) and `claim` up to `limit` jobs for the
        worker (the job's lane's next one among them): one transaction where three were."""
        async with self.db.session() as s:
            held = await journal.finish(s, job_id, "done", None, owner, result)
            for write in ending if held else ():
                await write(s)
            rows = await journal.claim(s, owner, limit=limit, lease=lease,
                                       shares=self.shares) if held else []
            await s.commit()
        return held, rows

    async def retry_later(self, owner: str, job_id: int, delay: float, error: str, *,
                          counted: bool = True, result: dict[str, Any] | None = None) -> bool:
        """Again after `delay`; not `counted`: the attempt does not count (the storage was
        down, not the work); `result`: effects merged in."""
        async with self.db.session() as s:
            held = await journal.retry_later(s, owner, job_id, timedelta(seconds=delay), error,
                                             counted=counted, result=result)
            await s.commit()
        return held

    async def free_dead(self, dead: Callable[[str], bool], elsewhere: Callable[[str], bool],
                        unseen_before: set[str], settled: timedelta) -> tuple[int, set[str]]:
        """Make claimable now the running jobs of owners that died: of this machine, those
        `dead` names; of others (`elsewhere`), those whose process has no connection to the
        database now and had none at the look before (`unseen_before`, PostgreSQL only, and
        not while the server is younger than `settled`). How many, and the processes of
        other machines unseen now (for the next look)."""
        async with self.db.session() as s:
            running = await fencing.running_owners(s)
            unseen = await fencing.unconnected(
                s, {process_of(o) for o in running if elsewhere(o)}, settled)
            gone = [o for o in running
                    if dead(o) or process_of(o) in unseen & unseen_before]
            n = await fencing.lapse(s, gone) if gone else 0
            await s.commit()
        return n, unseen

    async def listen(self, heard: Callable[[], None]) -> None:
        """Until cancelled, `heard()` when another process records claimable work (PostgreSQL:
        storage/notices.py; on SQLite returns at once, and polling alone finds it)."""
        await notices.listen(self.db, heard)

    async def release(self, owner: str, job_ids: list[int]) -> int:
        async with self.db.session() as s:
            n = await journal.release(s, owner, job_ids)
            await s.commit()
        return n

    async def get(self, job_id: int) -> JobRow | None:
        async with self.db.session() as s:
            return await journal.get(s, job_id)

    async def by_key(self, key: str) -> JobRow | None:
        async with self.db.session() as s:
            return await journal.by_key(s, key)

    async def counts(self) -> dict[str, int]:
        """Jobs pending and running."""
        async with self.db.session() as s:
            return await journal.open_counts(s)

    async def counts_by_kind(self) -> dict[tuple[str, str], int]:
        """Jobs pending and running, by (kind, state) (/metrics)."""
        async with self.db.session() as s:
            return await journal.open_by_kind(s)

    async def prune(self, memory: timedelta = JOB_MEMORY) -> int:
        async with self.db.session() as s:
            n = await journal.prune(s, datetime.now(UTC) - memory)
            await s.commit()
        return n


@dataclass
class JobContext:
    """What a handler gets besides its job: the effects already made, and a way to record
    one the moment it is made."""

    job: JobRow
    queue: JobQueue
    result: dict[str, Any]
    owner: str | None = None  # the worker holding the lease (None: not fenced)
    noted: dict[str, Any] = field(default_factory=dict)
    ending: list[Ending] = field(default_factory=list)  # see `at_end`
    after: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def remember(self, **effects: Any) -> None:
        """Record effects the moment they are made (a later run must not repeat them);
        LeaseLost when another worker has taken the job over (the handler stops: the effects
        are theirs to make)."""
        await self.queue.remember(self.job.id, effects, self.owner)
        self.result.update(effects)

    def note(self, **effects: Any) -> None:
        """Record effects with the job's end (one write fewer): for effects whose repetition
        is found another way (a posted reply carries the job's key in Slack)."""
        self.result.update(effects)
        self.noted.update(effects)

    def at_end(self, write: Ending, then: Callable[[], Awaitable[None]] | None = None) -> None:
        """`write` made in the job's end transaction, only when the end is this worker's (an
        effect a run after a crash makes again: which message shows a receipt), and `then`
        once that end is committed (a nicety a crash in between loses: a card updated, the
        App Home refreshed; a failure of it is logged, the job is done)."""
        self.ending.append(write)
        if then is not None:
            self.after.append(then)

    async def ended(self) -> None:
        """The job's end is committed: the work `at_end` left for after it (niceties: a
        failure is logged and the job stays done)."""
        for then in self.after:
            try:
                await then()
            except Exception:
                log.exception("job %s: its work after the end failed", self.job.id)


Handler = Callable[[JobContext], Awaitable[None]]
GiveUp = Callable[[JobContext, str], Awaitable[None]]
