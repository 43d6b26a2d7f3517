"""The worker: claims jobs of the journal (bot/jobs/queue.py) with a lease and runs them.

A lease that runs out (the process died) makes the job claimable again, here or in another
process; a failed attempt runs again after a pause, up to `max_attempts`, then the person is
told. A job that failed because storage could not be written (the vault or the database
read-only, full or gone: `storage.errors.unwritable`) is not a failed attempt: it goes back to
the journal with a growing pause and runs when storage is back, however long that takes, and
the person is told once that it waits (`waiting`). With `ready`, a job that would write is
not started while storage is known to be down (no model call is spent on it). A database
server that stops answering (a restart, a failover: `storage.errors.unreachable`) is storage
down too, but brief: its jobs wait the same way, and nobody is told. A job's end the database
cannot take now is tried again until it answers, not left for its lease to run out.

A worker that loses a job's lease (it stalled past the lease, or lost the database for that
long, and another worker took the job over) stops that job: the renewal finds it gone and
cancels it, recording an effect or the end raises `LeaseLost`, and a write of the database
store commits nothing (`Fenced`: its transaction checks the lease, `leases.working_for`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from bot import metrics
from bot.jobs import owners
from bot.jobs.queue import LEASE, GiveUp, Handler, JobContext, JobQueue, JobRow, LeaseLost
from storage.errors import Fenced, unreachable, unwritable
from storage.repositories import leases

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
RETRY_DELAYS = (1.0, 4.0, 15.0, 60.0)  # seconds before attempt 2, 3, 4, 5
STORAGE_DELAYS = (1.0, 2.0, 4.0, 8.0, 15.0)  # seconds between tries while storage is down
CLAIM_BATCH = 4  # jobs taken per claim
DEAD_LOOK = 10.0  # seconds between looks for jobs whose owner died
CONFIRM_LOOK = 3.0  # seconds to the look that confirms a process of another machine is gone
# seconds between tries of recording a job's end while the database does not answer
RECORD_DELAYS = (0.2, 0.5, 1.0, 2.0)
T = TypeVar("T")

# Whether a job may start now: None, or why storage cannot take its work (bot/health.py).
Ready = Callable[[JobRow], Awaitable[str | None]]


class Worker:
    """Claims jobs and runs them; one per process is enough (it runs many jobs at once)."""

    def __init__(self, queue: JobQueue, handlers: dict[str, Handler], *,
                 give_up: GiveUp | None = None, concurrency: int = 64, poll: float = 1.0,
                 batch: int = CLAIM_BATCH,
                 lease: timedelta = LEASE, max_attempts: int = MAX_ATTEMPTS,
                 retry_delays: tuple[float, ...] = RETRY_DELAYS,
                 more: Callable[[], None] | None = None, ready: Ready | None = None,
                 waiting: GiveUp | None = None,
                 storage_delays: tuple[float, ...] = STORAGE_DELAYS) -> None:
        self.queue = queue
        self.ready = ready  # None, or why a job cannot start now (storage is down)
        self.waiting = waiting  # tells the person, once, that their job waits for storage
        self.storage_delays = storage_delays
        self.more = more  # called when there is more claimable work than this one takes
        self.handlers = handlers
        self.give_up = give_up
        self.concurrency = concurrency
        self.batch = max(batch, 1)
        self.poll = poll
        self.lease = lease
        self.max_attempts = max_attempts
        self.retry_delays = retry_delays
        self.owner = owners.owner_id()
        self._looked_for_dead = -DEAD_LOOK  # when running jobs' owners were last looked at
        self._unseen: set[str] = set()  # processes of other machines unconnected at that look
        self._wake = asyncio.Event()
        self._claiming = asyncio.Lock()  # one claim at a time: `_room` holds across it
        self._running: dict[int, asyncio.Task[None]] = {}
        self._ending: set[int] = set()  # jobs whose end is being recorded
        self._stopping = False
        self._loop_task: asyncio.Task[None] | None = None
        self._renew_task: asyncio.Task[None] | None = None
        self._listen_task: asyncio.Task[None] | None = None
        self.done = 0  # jobs finished by this worker (for /health and benchmarks)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        self._loop_task = asyncio.create_task(self._loop(), name="jobs:claim")
        self._renew_task = asyncio.create_task(self._renew_loop(), name="jobs:renew")
        # Work another process records wakes this one at once (PostgreSQL's notices).
        self._listen_task = asyncio.create_task(self.queue.listen(self.wake), name="jobs:listen")

    def wake(self) -> None:
        """New work was recorded by this process: claim now instead of at the next poll."""
        self._wake.set()

    @property
    def busy(self) -> int:
        return len(self._running)

    async def idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing runs or ends (its work after the end included) and nothing
        claimable is left (tests, benchmarks)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if not self._running and not self._ending:
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
        async with self._claiming:  # a job's end claiming meanwhile has started what it took
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
        for other in (self._renew_task, self._listen_task):
            if other is not None:
                other.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await other

    # -- claiming -----------------------------------------------------------------------------

    async def _loop(self) -> None:
        while not self._stopping:
            await self._free_dead()
            async with self._claiming:
                room = 0 if self._stopping else self._room()
                claimed: list[JobRow] = []
                if room > 0:
                    try:
                        claimed = await self.queue.claim(self.owner, room, self.lease)
                    except Exception as exc:  # the database is busy or down: try again soon
                        log.warning("claiming jobs failed: %s", exc)
                if self._started(claimed, room):
                    continue  # there may be more
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.poll)

    def _room(self, ending: int = 0) -> int:
        """How many jobs to claim now (`ending`: jobs of ours whose end is being written). A
        few at a time: replicas each take a share of a burst (each claims the work it took in
        at once), instead of the first to look taking all of it."""
        return min(self.concurrency - len(self._running) + ending, self.batch)

    def _started(self, claimed: list[JobRow], room: int) -> bool:
        """Run the jobs claimed; True when the claim was full (there may be more)."""
        for job in claimed:
            running = self._running.get(job.id)
            if running is not None and not running.done():
                # Our own run, whose lease ran out before a late renewal (a loaded machine):
                # the lease is ours again and that run goes on. A second run here would pass
                # the lease fence too, and do the work twice.
                log.warning("job %s: lease had lapsed; claimed back by its own run", job.id)
                continue
            log.debug("job %s claimed: %s, attempt %d", job.id, job.kind, job.attempts)
            self._running[job.id] = asyncio.create_task(self._run(job), name=f"job:{job.id}")
        full = bool(claimed) and len(claimed) == room
        if full and self.more is not None:
            self.more()  # other processes may take a share
        return full

    async def _free_dead(self) -> None:
        """Make the jobs of a process that died claimable now, not when their leases run out
        (a restart after `kill -9` takes its work up at once; a machine lost, within seconds).
        At the first claim, then every DEAD_LOOK seconds, or CONFIRM_LOOK seconds after a look
        that found a process of another machine unconnected (gone at two looks: dead)."""
        now = asyncio.get_running_loop().time()
        if now - self._looked_for_dead < DEAD_LOOK:
            return
        self._looked_for_dead = now
        try:
            freed, unseen = await self.queue.free_dead(owners.dead, owners.elsewhere,
                                                       self._unseen, self.lease)
        except Exception as exc:  # the database is busy or down: the leases still decide
            log.warning("looking for jobs of dead processes failed: %s", exc)
            return
        if unseen - self._unseen:
            self._looked_for_dead = now - DEAD_LOOK + CONFIRM_LOOK
        self._unseen = unseen
        if freed:
            log.info("%d job(s) of a process that died taken up at once", freed)

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
            handler = await self._startable(ctx)
            if handler is None:
                return
            started = time.perf_counter()
            finished = await self._attempt(ctx, handler)
            metrics.job_ran(job.kind, finished, time.perf_counter() - started)
            if not finished:
                return
            if await self._done(ctx):
                self.done += 1
                await ctx.ended()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if unreachable(exc) is None:
                log.exception("job %s: could not record its end; it will run again", job.id)
            else:  # for longer than its lease: whoever holds the job then runs it again
                log.warning("job %s: could not record its end (%s); it will run again",
                            job.id, unreachable(exc))
        finally:
            claimed_next = self._running.pop(job.id, None) is None  # `_done` claimed already
            self._ending.discard(job.id)
            if not claimed_next:
                self._wake.set()  # the lane's next job may be claimable now

    async def _startable(self, ctx: JobContext) -> Handler | None:
        """The job's handler when the job may run now; None when it was ended or sent back
        instead (out of attempts, no handler, storage down)."""
        job = ctx.job
        if job.attempts > self.max_attempts:
            await self._give_up(ctx, f"gave up after {job.attempts - 1} attempts")
            return None
        handler = self.handlers.get(job.kind)
        if handler is None:
            await self._end(job, "failed", f"no handler for kind {job.kind!r}")
            log.error("job %s: no handler for kind %r", job.id, job.kind)
            return None
        down = await self.ready(job) if self.ready is not None else None
        if down is not None:
            await self._wait_for_storage(ctx, down)
            return None
        return handler

    async def _attempt(self, ctx: JobContext, handler: Handler) -> bool:
        """Run the handler once; True when it finished, False when its failure was dealt
        with (taken over, waiting for storage, to retry, given up)."""
        try:
            with leases.working_for(ctx.job.id, self.owner):  # writes that check it: fenced
                await handler(ctx)
        except asyncio.CancelledError:
            raise
        except (LeaseLost, Fenced):
            log.warning("job %s: taken over by another worker (this one's lease ran "
                        "out); stopped here", ctx.job.id)
            return False
        except Exception as exc:
            await self._failed(ctx, exc)
            return False
        return True

    async def _failed(self, ctx: JobContext, exc: Exception) -> None:
        """A failed attempt: wait for storage when it could not be written, else run again
        after a pause, or give up after the last attempt. Called while `exc` is handled (the
        log shows its traceback)."""
        job = ctx.job
        down = unwritable(exc)
        if down is not None:
            await self._wait_for_storage(ctx, down, tell=unreachable(exc) is None)
            return
        log.exception("job %s (%s) failed on attempt %d", job.id, job.kind,
                      job.attempts)
        reason = f"{type(exc).__name__}: {exc}"[:500]
        if job.attempts >= self.max_attempts:
            await self._give_up(ctx, reason)
        else:  # again after a pause, here or in another process
            self._ending.add(job.id)
            step = min(job.attempts, len(self.retry_delays)) - 1
            await self._send_back(job.id, lambda: self.queue.retry_later(
                self.owner, job.id, self.retry_delays[max(step, 0)], reason))

    async def _wait_for_storage(self, ctx: JobContext, reason: str, *,
                                tell: bool = True) -> None:
        """Storage cannot be written: the job goes back to the journal (its attempt not
        counted) and runs again after a pause that grows while storage stays down; the
        person is told once that it waits (not when the database merely stopped answering,
        `tell=False`: a restart takes seconds, and they get their answer then)."""
        waits = int(ctx.result.get("storage_waits") or 0)
        log.warning("job %s (%s) waits for storage (%s); try %d", ctx.job.id,
                    ctx.job.kind, reason, waits + 1)
        told = bool(ctx.result.get("storage_told"))
        if self.waiting is not None and tell and not told:
            try:
                await self.waiting(ctx, reason)
                told = True
            except Exception:  # the job waits all the same; it says so on a later try
                log.exception("job %s: telling the person it waits failed", ctx.job.id)
        delay = self.storage_delays[min(waits, len(self.storage_delays) - 1)]
        self._ending.add(ctx.job.id)
        result = {**ctx.noted, "storage_waits": waits + 1, "storage_told": told}
        await self._send_back(ctx.job.id, lambda: self.queue.retry_later(
            self.owner, ctx.job.id, delay, f"storage: {reason}"[:500], counted=False,
            result=result))

    async def _send_back(self, job_id: int, write: Callable[[], Awaitable[bool]]) -> None:
        """Give the job back to the journal (`write`), unless another worker has it by now
        (this one stalled past its lease): then it is theirs, and the log says so."""
        if not await self._recorded(job_id, write):
            log.warning("job %s: taken over by another worker (this one's lease ran out); "
                        "stopped here", job_id)

    async def _give_up(self, ctx: JobContext, reason: str) -> None:
        log.error("job %s (%s) failed for good: %s", ctx.job.id, ctx.job.kind, reason)
        if self.give_up is not None:
            try:
                await self.give_up(ctx, reason)
            except Exception:
                log.exception("job %s: the give-up handler failed", ctx.job.id)
        await self._end(ctx.job, "failed", reason)

    async def _done(self, ctx: JobContext) -> bool:
        """`_end` done, with its writes (`JobContext.at_end`) and the next jobs claimed in its
        transaction (the lane's next one claimable from then); False: it was taken over."""
        self._ending.add(ctx.job.id)
        async with self._claiming:
            room = 0 if self._stopping else self._room(ending=1)
            held, claimed = await self._recorded(ctx.job.id, lambda: self.queue.finish_and_claim(
                ctx.job.id, self.owner, room, self.lease, ctx.noted or None, ctx.ending))
            self._running.pop(ctx.job.id, None)
            if self._started(claimed, room):
                self._wake.set()  # there may be more
        if not held:
            log.warning("job %s: taken over by another worker before it ended here; its end "
                        "is theirs to record", ctx.job.id)
        return held

    async def _end(self, job: JobRow, state: str, error: str | None = None,
                   result: dict[str, Any] | None = None) -> bool:
        """Record the job's end while this worker holds it; False when it was taken over."""
        self._ending.add(job.id)  # the renewal must not cancel it while its end is written
        if await self._recorded(job.id, lambda: self.queue.finish(
                job.id, state, error, owner=self.owner, result=result)):
            return True
        log.warning("job %s: taken over by another worker before it ended here; its end is "
                    "theirs to record", job.id)
        return False

    async def _recorded(self, job_id: int, write: Callable[[], Awaitable[T]]) -> T:
        """`write()` (a job's end, or its return to the journal), tried again while the
        database does not answer: the job stays this worker's, its lease renewed once the
        database is back, instead of waiting for the lease to run out. Raises when this
        worker stops meanwhile, or after a lease's time (the lease decides then)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lease.total_seconds()
        tries = 0
        while True:
            try:
                return await write()
            except Exception as exc:
                gone = unreachable(exc)
                if gone is None or self._stopping or loop.time() >= deadline:
                    raise
                if tries == 0:
                    log.warning("job %s: %s; its end is recorded when it answers again",
                                job_id, gone)
            await asyncio.sleep(RECORD_DELAYS[min(tries, len(RECORD_DELAYS) - 1)])
            tries += 1

