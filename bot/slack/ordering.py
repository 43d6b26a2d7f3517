"""Run turns after the ack: one at a time per conversation, in arrival order, tracked.

State lives on an instance owned by the app object (never module-level), so a process can run
several apps and a test can drain the work it started.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class SerialRunner:
    """Per-key FIFO execution; different keys run concurrently."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._pending: dict[str, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, key: str, work: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        """Queue `work` behind earlier work of the same key. Call without awaiting first:
        the lock is taken in submission order because asyncio.Lock wakes waiters FIFO."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._pending[key] = self._pending.get(key, 0) + 1
        task = asyncio.create_task(self._run(key, lock, work), name=f"turn:{key}")
        self._tasks.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run(self, key: str, lock: asyncio.Lock, work: Callable[[], Awaitable[None]]) -> None:
        try:
            async with lock:
                await work()
        except asyncio.CancelledError:
            raise
        except Exception:  # the work reports its own errors; this is the last net
            log.exception("unhandled error in work for %s", key)
        finally:
            self._pending[key] -= 1
            if self._pending[key] == 0:
                del self._pending[key]
                self._locks.pop(key, None)

    @property
    def busy(self) -> int:
        return len(self._tasks)

    def keys(self) -> set[str]:
        return set(self._locks)

    async def drain(self, timeout: float | None = None) -> bool:
        """Wait for all submitted work (including work submitted meanwhile). True if done."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._tasks:
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return False
            await asyncio.wait(set(self._tasks), timeout=left)
        return True

    async def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
