"""Expected failures of storage operations; each carries a message fit for a user."""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.types import EntrySummary


class StorageError(Exception):
    """Base class: the operation changed nothing."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(StorageError):
    code = "not_found"


class Ambiguous(StorageError):
    """A name matched several notes; destructive operations never guess."""

    code = "ambiguous"

    def __init__(self, message: str, candidates: list[EntrySummary]) -> None:
        super().__init__(message)
        self.candidates = candidates


class UnsafePath(StorageError):
    """A path that would leave the vault (.., absolute, symlink out)."""

    code = "unsafe_path"


class InvalidValue(StorageError):
    """A category, field or value that does not fit."""

    code = "invalid"


class ChangedSince(StorageError):
    """An undo that would overwrite what changed after the change it undoes."""

    code = "changed_since"


class Fenced(StorageError):
    """The job this work ran for was taken over by another worker (its lease ran out): the
    write it was making committed nothing."""

    code = "taken_over"


class StorageDown(Exception):
    """The vault or the database cannot be written now (read-only, full, gone): nothing was
    changed, and the same work can succeed once storage is back. Not a `StorageError`: it is
    no answer for the model or the person's input, the work waits instead."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# Errors of a file system that refuses writes (read-only, no permission, full, over quota).
_UNWRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT}
# What the database drivers say when the database cannot be written (SQLite; PostgreSQL's
# read-only transaction or standby, and its full disk).
_DB_UNWRITABLE = ("readonly database", "database or disk is full", "disk i/o error",
                  "read-only transaction", "could not extend file",
                  "no space left on device")


# A database server that does not answer: asyncpg's errors of a connection refused, cut or
# lost (a restart, a failover, a stop), and what the drivers say then.
_DB_GONE = {"ConnectionDoesNotExistError", "CannotConnectNowError", "AdminShutdownError",
            "CrashShutdownError", "ConnectionFailureError", "ConnectionRejectionError",
            "ClientCannotConnectError"}
_DB_GONE_SAYS = ("connection is closed", "connection was closed", "terminating connection",
                 "the database system is shutting down", "the database system is starting up",
                 "the database system is in recovery mode", "server closed the connection")
# The errors of a socket to a server that is not there (its Unix socket gone while it is
# stopped, a refused or reset TCP connection), when the database driver met them.
_NET_ERRNOS = {errno.ENOENT, errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED,
               errno.EPIPE, errno.ETIMEDOUT, errno.EHOSTUNREACH, errno.ENETUNREACH}
_DRIVERS = ("sqlite3", "sqlalchemy", "asyncpg", "aiosqlite", "psycopg")


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it (causes, contexts, a driver's original error), each once."""
    found: list[BaseException] = []
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo and len(found) <= 20:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        todo += [current.__cause__, current.__context__, getattr(current, "orig", None)]
    return found


def _met_by_driver(exc: BaseException) -> bool:
    """Whether `exc` was raised inside a database driver (its traceback passes through one)."""
    tb = exc.__traceback__
    while tb is not None:
        if any(f"/{name}/" in tb.tb_frame.f_code.co_filename for name in _DRIVERS[1:]):
            return True
        tb = tb.tb_next
    return False


def unreachable(exc: BaseException) -> str | None:
    """Why `exc` (or what caused it) means the database server does not answer now (stopped,
    restarting, its connection cut), in a few words; None for any other failure. Such work
    can succeed as it is once the server is back."""
    for current in _chain(exc):
        name = type(current).__name__
        driver = type(current).__module__.split(".")[0] in _DRIVERS
        if getattr(current, "connection_invalidated", False):
            return "the database does not answer: its connection was lost"
        if driver and name in _DB_GONE:
            return f"the database does not answer ({name})"
        if driver and any(says in str(current).lower() for says in _DB_GONE_SAYS):
            return f"the database does not answer ({name})"
        if isinstance(current, OSError) and current.errno in _NET_ERRNOS \
                and _met_by_driver(current):
            return f"the database does not answer: {os.strerror(current.errno or 0).lower()}"
    return None


def unwritable(exc: BaseException) -> str | None:
    """Why `exc` (or what caused it) means storage cannot be written now, in a few words
    (a database that does not answer among them: `unreachable`); None for any other
    failure."""
    gone = unreachable(exc)
    if gone is not None:
        return gone
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen or len(seen) > 20:
            continue
        seen.add(id(current))
        if isinstance(current, StorageDown):
            return current.reason
        if isinstance(current, OSError) and current.errno in _UNWRITABLE:
            # (not its file name: a note's name comes from what the person wrote)
            return f"the disk says: {os.strerror(current.errno or 0).lower()}"
        text = str(current).lower()
        if type(current).__module__.split(".")[0] in ("sqlite3", "sqlalchemy", "asyncpg",
                                                       "aiosqlite"):
            for phrase in _DB_UNWRITABLE:
                if phrase in text:
                    return f"the database says: {phrase}"
        todo += [current.__cause__, current.__context__, getattr(current, "orig", None)]
    return None

class HistoryFailed(StorageError):
    """The vault's history cannot be written or read (a held lock, a missing object): an undo
    that would need it is refused before anything changes."""

    code = "history"
