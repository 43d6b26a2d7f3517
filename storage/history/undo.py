"""Undo one change: its files put back as they were before it, recorded as a change of its own.

Everything the undo needs is read and checked before a file is touched (the history's earlier
late changes recorded, the change's objects and the head's trees present, no lock held), so a
damaged or locked history refuses the undo with a message and leaves the vault as it was; if
the record still fails after the files were put back, they are put back again as they were.
The folders the change made go when they are left empty; the folders its files came from are
made again.
"""

from __future__ import annotations

import contextlib
import time

from dulwich.objects import ObjectID

from storage.errors import ChangedSince, HistoryFailed, InvalidValue, StorageError
from storage.history.context import current_origin
from storage.history.history import START, UNDO, History
from storage.history.pending import Late, why
from storage.history.repo import blob_id
from storage.types import Change
from storage.vault.files import Vault


def _refused(exc: BaseException) -> HistoryFailed:
    return HistoryFailed(f"not undone: the vault's history cannot be used: {why(exc)}; nothing "
                         "was changed (`brain doctor` says more)")


def undo(history: History, ref: str | None) -> Change:
    try:
        history.catch_up()  # changes made while it could not be written come first
        history.ensure()
        target = history.find(ref)
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001 (a damaged history: refused, nothing changed)
        raise _refused(exc) from None
    if target.action == START:
        raise InvalidValue("that is where the history starts; there is nothing before it")
    repo = history.repo
    try:
        files = repo.changed(ObjectID(target.id.encode()))
        wanted = {rel: None if before is None else repo.data(before)
                  for rel, before, _after in files}
        repo.readable(repo.head(), wanted)  # what the undo's own commit reads
        repo.clear_stale_locks()
        problem = repo.unwritable()
    except Exception as exc:  # noqa: BLE001
        raise _refused(exc) from None
    if problem is not None:
        raise HistoryFailed(f"not undone: the vault's history cannot be written: {problem}; "
                            "nothing was changed (`brain doctor` says more)")
    _check_unchanged(history, target, files)
    vault = history.vault
    saved = {rel: history.disk(rel) for rel in wanted}
    made = vault.put(wanted)
    gone = _remove_empty(vault, target.new_folders)
    origin = current_origin()
    late = Late(UNDO, f"{target.action}: {target.summary}", tuple(wanted), origin.who,
                origin.source, int(time.time()), tuple((new, old) for old, new in target.moved),
                target.id, tuple(made))
    try:
        change = history.record_now(late)
    except Exception as exc:  # noqa: BLE001 (the files go back as they were)
        for folder in gone:
            vault.resolve(folder).mkdir(parents=True, exist_ok=True)
        vault.put(saved)
        _remove_empty(vault, made)
        raise _refused(exc) from None
    if change is None:  # the change had changed nothing: still say it was undone
        raise InvalidValue("that change left the files as they were; nothing to undo")
    return change


def _check_unchanged(history: History, target: Change,
                     files: list[tuple[str, ObjectID | None, ObjectID | None]]) -> None:
    since = []
    for rel, _before, after in files:
        data = history.disk(rel)
        if (blob_id(data) if data is not None else None) != after:
            since.append(rel)
    if not since:
        return
    changes = history.changes()
    later = changes[[c.id for c in changes].index(target.id) + 1:]
    by = [f"{c.id[:8]} ({c.action})" for c in later if set(since) & set(c.paths)]
    raise ChangedSince(
        f"not undone: {', '.join(sorted(since))} changed after that change"
        + (f", by {', '.join(by)}" if by else " (outside the app, not yet recorded)")
        + "; undo the later change first, or leave it (`brain history` lists them)")


def _remove_empty(vault: Vault, folders: tuple[str, ...] | list[str]) -> list[str]:
    """The folders among these that are empty removed, deepest first; returns them."""
    removed = []
    for rel in sorted(folders, key=lambda f: f.count("/"), reverse=True):
        with contextlib.suppress(OSError, StorageError):  # not empty, gone, or not ours
            vault.resolve(rel).rmdir()
            removed.append(rel)
    return removed
