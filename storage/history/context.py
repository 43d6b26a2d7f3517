"""Who is changing the vault and through which door, for the history's commits.

The doors (Slack, the CLI, MCP, the scheduler) set it around their work; the Store reads it
when it records a change, so no operation needs an extra parameter threaded through it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass


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
