"""The loop both schedulers share (digests, reminders): `tick()` at once and then every
`poll_seconds` until `stop()`; a failed tick is logged and the loop goes on."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

log = logging.getLogger(__name__)


class Ticker:
    what = "scheduler"  # for the log line of a failed tick

    def __init__(self, clock: Callable[[], datetime], poll_seconds: float) -> None:
        self.clock = clock
        self.poll_seconds = poll_seconds
        self._stop = asyncio.Event()

    def now(self) -> datetime:
        """The clock's time, which must be aware (slots and days are in each user's zone)."""
        now = self.clock()
        if now.tzinfo is None:
            raise ValueError(f"the {self.what} clock must return aware datetimes")
        return now

    async def tick(self) -> Any:
        raise NotImplementedError

    async def run(self) -> None:
        """Tick until stop(); the first tick runs at once (catches up what was missed)."""
        self._stop.clear()
        while not self._stop.is_set():
            try:
                await self.tick()
            except Exception:
                log.exception("%s tick failed", self.what)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self.poll_seconds)

    def stop(self) -> None:
        self._stop.set()
