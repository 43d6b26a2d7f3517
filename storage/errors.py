"""Expected failures of storage operations; each carries a message fit for a user."""

from __future__ import annotations

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


class HistoryFailed(StorageError):
    """The vault's history cannot be written or read (a held lock, a missing object): an undo
    that would need it is refused before anything changes."""

    code = "history"
