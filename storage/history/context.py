"""Who is changing the vault and through which door, for the history's commits; and how
many writes one unit of work (a turn, an MCP session) has made, for its cap and its Undo.

The doors (Slack, the CLI, MCP, the scheduler) set it around their work; the Store reads it
when it records a change, so no operation needs an extra parameter threaded through it.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Origin:
    who: str  # a Slack user id, "cli", an MCP client's name
    source: str  # "slack <thread link>", "cli", "mcp <client>", "scheduler"


APP = Origin("app", "app")
_ORIGIN: contextvars.ContextVar[Origin | None] = contextvars.ContextVar("brain_origin",
                                                                       default=None)


def current_origin() -> Origin:
    return _ORIGIN.get() or APP


@contextlib.contextmanager
def changing(who: str, source: str) -> Iterator[Origin]:
    """Changes made inside this block are recorded as `who`'s, from `source`."""
    origin = Origin(who or "unknown", source or "app")
    token = _ORIGIN.set(origin)
    try:
        yield origin
    finally:
        _ORIGIN.reset(token)


_COLLECTED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "brain_collected", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[list[str]]:
    """The ids of the app's changes made inside this block, in order (a turn's Undo)."""
    found: list[str] = []
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)


def collected(change_id: str) -> None:
    found = _COLLECTED.get()
    if found is not None:
        found.append(change_id)
    tally = _TALLY.get()
    if tally is not None:
        tally.changes.append(change_id)


@dataclass
class Tally:
    """The writes of one unit of work (a message's turn, an MCP session): every note made or
    changed and every file kept counts, whatever the tool that asked for it. `limit` writes
    at most (None: no limit), within the last `window` seconds when one is given. `changes`
    are the history's ids of them (the batch an Undo puts back)."""

    limit: int | None = None
    window: float | None = None
    times: deque[float] = field(default_factory=deque)
    changes: list[str] = field(default_factory=list)

    def wrote(self) -> None:
        self.times.append(time.monotonic())

    @property
    def count(self) -> int:
        """Writes that count now (those older than the window have left it)."""
        if self.window is not None:
            oldest = time.monotonic() - self.window
            while self.times and self.times[0] < oldest:
                self.times.popleft()
        return len(self.times)

    @property
    def full(self) -> bool:
        return self.limit is not None and self.count >= self.limit


_TALLY: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("brain_tally",
                                                                      default=None)


@contextlib.contextmanager
def counting(tally: Tally) -> Iterator[Tally]:
    """The Store's writes made inside this block count in `tally`."""
    token = _TALLY.set(tally)
    try:
        yield tally
    finally:
        _TALLY.reset(token)


def wrote() -> None:
    """One write made (the Store calls it for each, history or not)."""
    tally = _TALLY.get()
    if tally is not None:
        tally.wrote()
