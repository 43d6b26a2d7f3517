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


def unwritable(exc: BaseException) -> str | None:
    """Why `exc` (or what caused it) means storage cannot be written now, in a few words;
    None for any other failure."""
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
