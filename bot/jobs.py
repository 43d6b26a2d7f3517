"""Durable intake: the journal as the adapters see it, and the worker that runs it.

An adapter records a job (`JobQueue.record`) before it acknowledges the request, so a request
Slack saw acknowledged is in the database. `Worker` claims jobs with a lease and runs the
handler registered for their kind; a lease that runs out (the process died) makes the job
claimable again, here or in another process. Jobs of one lane (a conversation) run one at a
time, in the order they were recorded, across processes (the claim enforces it).

Handlers make their effects idempotent with `JobContext.result` / `JobContext.remember`: an
effect already recorded there (a reply posted) is not made again when the job runs twice.

Replicas share the journal. A worker that loses a job's lease (it stalled past the lease, or
lost the database for that long, and another worker took the job over) stops that job: the
renewal finds it gone and cancels it, and recording an effect or the end raises `LeaseLost`,
so two workers never both carry a job's effects through.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from storage import journal
from storage.db import Database
from storage.journal import JobRow

log = logging.getLogger(__name__)

__all__ = ["JobContext", "JobQueue", "JobRow", "LeaseLost", "Worker"]

LEASE = timedelta(seconds=60)
MAX_ATTEMPTS = 5
RETRY_DELAYS = (1.0, 4.0, 15.0, 60.0)  # seconds before attempt 2, 3, 4, 5
CLAIM_BATCH = 4  # jobs taken per claim
JOB_MEMORY = timedelta(days=1)  # finished jobs are kept this long (retries come within minutes)


class JobKind(StrEnum):
    """What a job is: the worker runs the handler registered for its kind."""

    TURN = "turn"  # a message: one turn of a conversation
    BUTTON = "button"  # a card's button (move, undo)
    DIGEST = "digest"  # /digest
    THREAD_STARTED = "thread_started"  # the assistant panel opened a thread
    THREAD_CONTEXT = "thread_context"  # the channel beside an assistant thread changed
    SAVE = "save"  # the Save-to-brain shortcut or the capture reaction
    HOME = "home"  # the App Home opened
    HOME_ACTION = "home_action"  # a button or select on the App Home
    REMINDER = "reminder"  # a due-date reminder to deliver
    REMINDER_BUTTON = "reminder_button"  # Done / Snooze on a reminder
    OPEN_NOTE = "open_note"  # a source button under an answer: the note in a modal


class LeaseLost(Exception):
    """This worker no longer holds the job: another one took it over."""


class JobQueue:
    """The journal over the shared database; no SQL leaves this object."""

    def __init__(self, db: Database) -> None:
        self.db = db
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
                    recorded = await journal.record_many(s, [job for job, _ in batch])
                    await s.commit()
            except Exception as exc:  # nothing of the batch is recorded: each caller is told
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                continue
            for (_, done), result in zip(batch, recorded, strict=True):
                if not done.done():
                    done.set_result(result)

    async def claim(self, owner: str, limit: int, lease: timedelta = LEASE) -> list[JobRow]:
        async with self.db.session() as s:
            rows = await journal.claim(s, owner, limit=limit, lease=lease)
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

    async def retry_later(self, owner: str, job_id: int, delay: float, error: str) -> bool:
        async with self.db.session() as s:
            held = await journal.retry_later(s, owner, job_id, timedelta(seconds=delay), error)
            await s.commit()
        return held

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
        async with self.db.session() as s:
            return await journal.counts(s)

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

    @property
    def first_attempt(self) -> bool:
        return self.job.attempts <= 1

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


Handler = Callable[[JobContext], Awaitable[None]]
GiveUp = Callable[[JobContext, str], Awaitable[None]]


def worker_id() -> str:
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"


class Worker:
    """Claims jobs and runs them; one per process is enough (it runs many jobs at once)."""

    def __init__(self, queue: JobQueue, handlers: dict[str, Handler], *,
                 give_up: GiveUp | None = None, concurrency: int = 64, poll: float = 1.0,
                 batch: int = CLAIM_BATCH,
                 lease: timedelta = LEASE, max_attempts: int = MAX_ATTEMPTS,
                 retry_delays: tuple[float, ...] = RETRY_DELAYS,
                 more: Callable[[], None] | None = None) -> None:
        self.queue = queue
        self.more = more  # called when there is more claimable work than this one takes
        self.handlers = handlers
        self.give_up = give_up
        self.concurrency = concurrency
        self.batch = max(batch, 1)
        self.poll = poll
        self.lease = lease
        self.max_attempts = max_attempts
        self.retry_delays = retry_delays
        self.owner = worker_id()
        self._wake = asyncio.Event()
        self._running: dict[int, asyncio.Task[None]] = {}
        self._ending: set[int] = set()  # jobs whose end is being recorded
        self._stopping = False
        self._loop_task: asyncio.Task[None] | None = None
        self._renew_task: asyncio.Task[None] | None = None
        self.done = 0  # jobs finished by this worker (for /health and benchmarks)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        self._loop_task = asyncio.create_task(self._loop(), name="jobs:claim")
        self._renew_task = asyncio.create_task(self._renew_loop(), name="jobs:renew")

    def wake(self) -> None:
        """New work was recorded by this process: claim now instead of at the next poll."""
        self._wake.set()

    @property
    def busy(self) -> int:
        return len(self._running)

    async def idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing is running and nothing claimable is left (tests, benchmarks)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if not self._running:
                counts = await self.queue.counts()
                if counts["pending"] == 0 and counts["running"] == 0:
                    return True
            if deadline is not None and loop.time() >= deadline:
                return False
            self.wake()
            await asyncio.sleep(0.02)

    async def stop(self, drain_timeout: float = 30.0) -> None:
        """Stop claiming; let running jobs finish within `drain_timeout`; give the rest back
        (pending again, for the next start or another replica). Never half-done: a job cut
        off here runs again from its recorded effects."""
        self._stopping = True
        self._wake.set()
        if self._loop_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._loop_task
        running = list(self._running.values())
        if running:
            _, pending = await asyncio.wait(running, timeout=drain_timeout)
            if pending:
                log.warning("shutdown: %d job(s) still running after %.0f s; giving them back",
                            len(pending), drain_timeout)
                ids = [i for i, t in self._running.items() if t in pending]
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                with contextlib.suppress(Exception):
                    await self.queue.release(self.owner, ids)
        if self._renew_task is not None:
            self._renew_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renew_task

    # -- claiming -----------------------------------------------------------------------------

    async def _loop(self) -> None:
        while not self._stopping:
            # A few at a time: replicas each take a share of a burst (each claims the work it
            # took in at once), instead of the first to look taking all of it.
            room = min(self.concurrency - len(self._running), self.batch)
            claimed: list[JobRow] = []
            if room > 0:
                try:
                    claimed = await self.queue.claim(self.owner, room, self.lease)
                except Exception as exc:  # the database is busy or down: try again soon
                    log.warning("claiming jobs failed: %s", exc)
            for job in claimed:
                running = self._running.get(job.id)
                if running is not None and not running.done():
                    # Our own run, whose lease ran out before a late renewal (a loaded
                    # machine): the lease is ours again and that run goes on. A second run
                    # here would pass the lease fence too, and do the work twice.
                    log.warning("job %s: lease had lapsed; claimed back by its own run", job.id)
                    continue
                log.debug("job %s claimed: %s, attempt %d", job.id, job.kind, job.attempts)
                self._running[job.id] = asyncio.create_task(self._run(job), name=f"job:{job.id}")
            if claimed and len(claimed) == room:
                if self.more is not None:
                    self.more()  # other processes may take a share
                continue  # there may be more
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.poll)

    async def _renew_loop(self) -> None:
        interval = max(self.lease.total_seconds() / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            if self._running:
                ids = list(self._running)
                try:
                    held = set(await self.queue.renew(self.owner, ids, self.lease))
                except Exception as exc:
                    log.warning("renewing job leases failed: %s", exc)
                    continue
                for job_id in ids:
                    task = self._running.get(job_id)
                    if job_id not in held and job_id not in self._ending and \
                            task is not None and not task.done():
                        # Ended meanwhile, or taken over: our run must not go on.
                        log.warning("job %s: lease lost (another worker has it); stopping "
                                    "it here", job_id)
                        task.cancel()

    async def _run(self, job: JobRow) -> None:
        ctx = JobContext(job, self.queue, dict(job.result or {}), self.owner)
        try:
            if job.attempts > self.max_attempts:
                await self._give_up(ctx, f"gave up after {job.attempts - 1} attempts")
                return
            handler = self.handlers.get(job.kind)
            if handler is None:
                await self._end(job, "failed", f"no handler for kind {job.kind!r}")
                log.error("job %s: no handler for kind %r", job.id, job.kind)
                return
            try:
                await handler(ctx)
            except asyncio.CancelledError:
                raise
            except LeaseLost:
                log.warning("job %s: taken over by another worker (this one's lease ran "
                            "out); stopped here", job.id)
                return
            except Exception as exc:
                log.exception("job %s (%s) failed on attempt %d", job.id, job.kind,
                              job.attempts)
                reason = f"{type(exc).__name__}: {exc}"[:500]
                if job.attempts >= self.max_attempts:
                    await self._give_up(ctx, reason)
                else:  # again after a pause, here or in another process
                    self._ending.add(job.id)
                    step = min(job.attempts, len(self.retry_delays)) - 1
                    await self.queue.retry_later(self.owner, job.id,
                                                 self.retry_delays[max(step, 0)], reason)
                return
            if await self._end(job, "done", result=ctx.noted or None):
                self.done += 1
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("job %s: could not record its end; it will run again", job.id)
        finally:
            self._running.pop(job.id, None)
            self._ending.discard(job.id)
            self._wake.set()  # the lane's next job may be claimable now

    async def _give_up(self, ctx: JobContext, reason: str) -> None:
        log.error("job %s (%s) failed for good: %s", ctx.job.id, ctx.job.kind, reason)
        if self.give_up is not None:
            try:
                await self.give_up(ctx, reason)
            except Exception:
                log.exception("job %s: the give-up handler failed", ctx.job.id)
        await self._end(ctx.job, "failed", reason)

    async def _end(self, job: JobRow, state: str, error: str | None = None,
                   result: dict[str, Any] | None = None) -> bool:
        """Record the job's end while this worker holds it; False when it was taken over."""
        self._ending.add(job.id)  # the renewal must not cancel it while its end is written
        if await self.queue.finish(job.id, state, error, owner=self.owner, result=result):
            return True
        log.warning("job %s: taken over by another worker before it ended here; its end is "
                    "theirs to record", job.id)
        return False
