"""Which note an id names, when any file may carry any id.

The app writes each note's id into its frontmatter, but a file can carry an id it was not
given: a copy made in Obsidian, a note someone else wrote. The note the app made under an id is
the one its capture receipt (storage/repositories/receipts.py) points at: a lookup by id goes there when
several files carry the id (storage/index `SearchIndex._owned`), and a note with a derived id
counts as made only when its receipt says so (`Claim`, written before the note), never because
some file merely carries the id.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.errors import StorageError
from storage.index import SearchIndex
from storage.types import Entry
from storage.vault.files import Vault


class Claim(Protocol):
    """The app's record that it makes, or made, the note of one id (a capture's receipt).
    With a `session`, in the caller's transaction (`record` commits it)."""

    async def held(self, session: AsyncSession | None = None) -> str | None:
        """Where the recorded note is; None when no note was made under the id."""

    async def record(self, path: str, session: AsyncSession | None = None) -> None:
        """Record (or move) the claim: the note is, or is about to be, at `path`."""

    async def release(self) -> None:
        """The note could not be written: a claim recorded by this object goes again."""


def carrying(vault: Vault, rel: str, entry_id: str) -> Entry | None:
    """The note at `rel` when it carries exactly `entry_id`; None when it does not, is gone
    (indexed, then removed by hand) or is no path of this vault."""
    with contextlib.suppress(StorageError):
        entry = vault.read(rel)
        if entry.id == entry_id:
            return entry
    return None


async def with_id(db: Database, index: SearchIndex, entry_id: str,
                  at: str | None = None) -> Entry | None:
    """The note carrying exactly `entry_id`: the file at `at` (where its receipt says it is)
    when it does, else the indexed one (the receipt's when several carry the id), or None."""
    found = carrying(index.vault, at, entry_id) if at else None
    if found is None:
        async with db.session() as session:
            paths = await index.paths_with_id(session, entry_id)
        found = next(filter(None, (carrying(index.vault, p, entry_id) for p in paths)), None)
    return found


async def create(vault: Vault, claim: Claim | None, category: str, name: str,
                 fields: dict[str, Any], body: str, *, entry_id: str | None,
                 taken: set[str], planned: str | None = None) -> Entry:
    """`Vault.create`; with a `claim`, recorded first (where the note is meant to go: at
    `planned` when the caller recorded it there already) and moved to where it went, so a crash
    between the two leaves a claim whose note is made again, and never a note the app would not
    know as its own. A note that cannot be written takes its claim with it."""
    if claim is None:
        return vault.create(category, name, fields, body, entry_id=entry_id, taken=taken)
    if planned is None:
        planned = vault.path_for(category, name, taken)
        await claim.record(planned)
    try:
        entry = vault.create(category, name, fields, body, entry_id=entry_id, taken=taken)
    except Exception:
        await claim.release()
        raise
    if entry.path != planned:  # the name was taken meanwhile (an editor)
        await claim.record(entry.path)
    return entry
