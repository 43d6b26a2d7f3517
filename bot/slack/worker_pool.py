"""`brain serve --workers N`: N-1 helper processes run journal work beside the serving one.

One process is one core. The serving process binds the HTTP port (or holds the Socket Mode
connection), runs the schedulers and answers the CLI's socket; each helper is `brain serve
--work-only` on the same data directory and database, a replica whose HTTP front is the
serving process's listening socket, inherited: the kernel hands each new connection to
whichever process accepts first, so acks of a burst use every core too. They share the work through the jobs
journal exactly as replicas do (claims, leases, one running job per lane, replies posted
once), so the promises of docs/reliability.md are the journal's and hold for any N.

The serving process wakes the helpers when it records work by writing a byte to each one's
stdin (a helper also polls, so a lost wake costs at most a poll). A helper's stdin closing
means its parent is gone, `kill -9` included: it stops taking work, finishes what it runs
within the drain time and exits; what it could not finish stays in the journal for whoever
serves next. A helper that dies while the parent serves is started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
import threading
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.config import Settings

log = logging.getLogger(__name__)

RESTART_PAUSE = 1.0  # seconds before a helper that died is started again
STOP_GRACE = 35.0  # a helper's drain (30 s) plus its exit
READY = b"brain-helper-ready"  # what a helper prints once it takes work


class WorkerPool:
    """The helper processes of one `brain serve`; `wake()` after recording work."""

    def __init__(self, helpers: int, log_level: str,
                 listener: socket.socket | None = None,
                 address: tuple[str, int] | None = None) -> None:
        self.helpers = max(helpers, 0)
        self.log_level = log_level
        self.address = address  # `--host`, `--port`: the git remotes' default address
        self.listener = listener  # HTTP: the helpers accept and ack on this socket too
        self._procs: list[asyncio.subprocess.Process | None] = [None] * self.helpers
        self._ready: set[int] = set()  # slots whose helper said it is taking work
        self._watchers: list[asyncio.Task[None]] = []
        self._stopping = False
        self._wake_queued = False

    async def start(self) -> None:
        for slot in range(self.helpers):
            await self._spawn(slot)
            self._watchers.append(asyncio.create_task(self._watch(slot),
                                                      name=f"worker-pool:{slot}"))
        if self.helpers:
            log.info("serving with %d worker processes (this one and %d helper(s))",
                     self.helpers + 1, self.helpers)

    async def _spawn(self, slot: int) -> None:
        front: list[str] = []
        fds: tuple[int, ...] = ()
        if self.listener is not None:
            fds = (self.listener.fileno(),)
            front = ["--listen-fd", str(fds[0])]
        if self.address is not None:
            front += ["--host", self.address[0], "--port", str(self.address[1])]
        self._procs[slot] = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "serve", "--work-only", *front,
            "--log-level", self.log_level, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, pass_fds=fds)

    async def _watch(self, slot: int) -> None:
        while not self._stopping:
            proc = self._procs[slot]
            assert proc is not None and proc.stdout is not None
            async for line in proc.stdout:  # until it exits: READY once it takes work
                if line.strip() == READY:
                    self._ready.add(slot)
                else:
                    sys.stdout.buffer.write(line)
                    sys.stdout.buffer.flush()
            code = await proc.wait()
            self._ready.discard(slot)
            if self._stopping:
                return
            log.warning("worker process %d (pid %d) exited with %s; starting it again",
                        slot + 1, proc.pid, code)
            await asyncio.sleep(RESTART_PAUSE)
            if not self._stopping:
                await self._spawn(slot)

    def status(self) -> dict[str, int]:
        """For /health: how many processes run the work, and how many helpers are ready."""
        return {"processes": self.helpers + 1, "ready": len(self._ready)}

    def wake(self) -> None:
        """New work is in the journal: tell the helpers, once per turn of the event loop
        however many requests were recorded in it."""
        if not self.helpers or self._wake_queued:
            return
        self._wake_queued = True
        asyncio.get_running_loop().call_soon(self._send_wake)

    def _send_wake(self) -> None:
        self._wake_queued = False
        for proc in self._procs:
            if proc is None or proc.returncode is not None or proc.stdin is None \
                    or proc.stdin.is_closing():
                continue
            with contextlib.suppress(Exception):  # a helper that just died: it is restarted
                proc.stdin.write(b"w")

    async def stop(self) -> None:
        """Close every helper's stdin (they drain and exit); kill one that outstays its
        grace. Work a killed helper held is taken up again after its lease."""
        self._stopping = True
        for task in self._watchers:
            task.cancel()
        for proc in self._procs:
            if proc is not None and proc.stdin is not None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
        for proc in self._procs:
            if proc is None:
                continue
            try:
                await asyncio.wait_for(proc.wait(), STOP_GRACE)
            except TimeoutError:
                log.warning("worker process pid %d did not stop; killing it", proc.pid)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()


def _read_parent(loop: asyncio.AbstractEventLoop, wake: asyncio.Event,
                 gone: asyncio.Event) -> None:
    """In a thread: each byte from the parent is a wake; end of file means it is gone."""
    fd = sys.stdin.fileno()
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if not data:
            loop.call_soon_threadsafe(gone.set)
            return
        loop.call_soon_threadsafe(wake.set)


async def work_only(settings: Settings, stop: asyncio.Event, listen_fd: int | None,
                    address: tuple[str, int] | None = None) -> None:
    """`brain serve --work-only`: run journal work (and, given the parent's listening socket,
    take Slack's requests on it too) until the parent goes or a signal comes."""
    from bot.brain import Brain
    from bot.slack.app import SlackBot

    brain = await Brain.start(settings)
    brain.stores.keep_fresh()  # this process's writes are embedded by this process
    if address is not None:
        brain.remotes.serving_at(*address)
    bot = SlackBot(brain, settings, concurrency=settings.workers,
                   lease=timedelta(seconds=settings.job_lease_seconds))
    loop = asyncio.get_running_loop()
    wake, gone = asyncio.Event(), asyncio.Event()
    threading.Thread(target=_read_parent, args=(loop, wake, gone), daemon=True,
                     name="worker-pool:parent").start()

    async def relay() -> None:
        while True:
            await wake.wait()
            wake.clear()
            bot.worker.wake()

    relaying = asyncio.create_task(relay())
    runner = None
    try:
        bot.start(scheduler=False)  # the serving process runs the schedulers
        if listen_fd is not None:
            runner = await bot.serve_on(socket.socket(fileno=listen_fd))
        with contextlib.suppress(OSError):  # the parent died meanwhile: EOF ends us below
            os.write(sys.stdout.fileno(), READY + b"\n")
        ended = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(gone.wait())]
        await asyncio.wait(ended, return_when=asyncio.FIRST_COMPLETED)
        for task in ended:
            task.cancel()
    finally:
        relaying.cancel()
        if runner is not None:
            await runner.cleanup()  # stop taking requests, then finish accepted work
        await bot.close()
        await brain.close()
