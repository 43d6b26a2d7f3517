"""Store: the operations tools call, for one user's vault (vault files + index + database).

Every read refreshes the index first, so edits made outside the bot (Obsidian, git) show up;
every write goes to the vault, then re-indexes exactly the files it touched, so our own writes
are visible at once.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

from sqlalchemy.exc import IntegrityError, OperationalError

from storage.db import Database
from storage.errors import Ambiguous, InvalidValue, NotFound
from storage.index import SearchIndex
from storage.index.refresh import needs_tidy, tidy
from storage.types import (
    BacklinkList,
    Entry,
    EntryList,
    MoveResult,
    RefreshStats,
    VaultSummary,
)
from storage.vault import Vault

# A rescan that took long is not repeated within this many seconds (per process and vault);
# a cheap one (small vault) always runs, so an outside edit is seen by the very next query.
MAX_SKIP_SECONDS = 1.0
CHEAP_SCAN_SECONDS = 0.05
MAX_CANDIDATES = 10

# Per event loop and vault: index writes of one process go one at a time (a read's rescan and a
# write's re-index of the same new file must not both insert it).
_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary())
# vault key -> (monotonic time of the last full rescan, how long it took). A cache only.
_LAST_SCAN: dict[str, tuple[float, float]] = {}


def _lock(key: str) -> asyncio.Lock:
    locks = _LOCKS.setdefault(asyncio.get_running_loop(), {})
    return locks.setdefault(key, asyncio.Lock())


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.startswith(".") or ref.lower().endswith(".md")


class Store:
    """One user's vault over the shared database. Every call refreshes the index first."""

    def __init__(self, vault: Vault, db: Database) -> None:
        self.vault = vault
        self.db = db
        self.index = SearchIndex(vault)

    # --- index upkeep ---------------------------------------------------------------------------

    async def _locked_refresh(self) -> RefreshStats:
        for attempt in (1, 2):
            try:
                async with self.db.session() as session:
                    stats = await self.index.refresh(session)
                    await session.commit()
                if needs_tidy(stats):
                    await tidy(self.db.engine)
                _LAST_SCAN[self.index.key] = (time.monotonic(), stats.seconds)
                return stats
            except (OperationalError, IntegrityError):
                # Another process wrote the index between our read and our write (SQLite
                # refuses a stale snapshot; on PostgreSQL it inserted the same new file first);
                # the second pass sees its rows.
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def refresh(self) -> RefreshStats:
        """A full rescan now (`brain reindex`)."""
        async with _lock(self.index.key):
            return await self._locked_refresh()

    async def _fresh(self) -> None:
        """Rescan before a read, unless a slow rescan of this vault has just run."""
        async with _lock(self.index.key):
            last = _LAST_SCAN.get(self.index.key)
            if last is not None:
                at, cost = last
                window = 0.0 if cost < CHEAP_SCAN_SECONDS else min(MAX_SKIP_SECONDS, 2 * cost)
                if time.monotonic() - at < window:
                    return
            await self._locked_refresh()

    async def _touched(self, rels: list[str]) -> None:
        async with _lock(self.index.key), self.db.session() as session:
            await self.index.refresh_paths(session, rels)
            await session.commit()

    # --- reading ----------------------------------------------------------------------------

    async def resolve(self, ref: str) -> str:
        """The path of the one note `ref` names (path, id, name or stem); never a guess."""
        if not isinstance(ref, str) or not ref.strip():
            raise InvalidValue("give a note's path, id or name")
        ref = ref.strip()
        if _looks_like_path(ref):
            self.vault.resolve(ref)  # UnsafePath for `..`, absolute paths, symlinks out
        await self._fresh()
        async with self.db.session() as session:
            matches = await self.index.lookup(session, ref)
        if not matches:
            raise NotFound(f"no note matches {ref!r}")
        if len(matches) > 1:
            shown = matches[:MAX_CANDIDATES]
            raise Ambiguous(f"{len(matches)} notes match {ref!r}: "
                            + ", ".join(m.path for m in shown)
                            + "; give the path or id of one", shown)
        return matches[0].path

    async def get(self, ref: str) -> Entry:
        return self.vault.read(await self.resolve(ref))

    async def list(self, *, category: str | None = None, status: str | None = None,
                   limit: int = 10) -> EntryList:
        await self._fresh()
        async with self.db.session() as session:
            return await self.index.list(session, category=category, status=status, limit=limit)

    async def search(self, query: str, *, category: str | None = None,
                     status: str | None = None, limit: int = 10) -> EntryList:
        await self._fresh()
        async with self.db.session() as session:
            return await self.index.search(session, query, category=category, status=status,
                                           limit=limit)

    async def backlinks(self, ref: str) -> BacklinkList:
        rel = await self.resolve(ref)
        async with self.db.session() as session:
            return await self.index.backlinks(session, rel)

    async def summary(self) -> VaultSummary:
        await self._fresh()
        async with self.db.session() as session:
            return await self.index.summary(session)

    # --- writing ----------------------------------------------------------------------------

    async def create(self, category: str, name: str, fields: dict[str, Any],
                     body: str) -> Entry:
        entry = self.vault.create(category, name, fields, body)
        await self._touched([entry.path])
        return entry

    async def update(self, ref: str, changes: dict[str, Any],
                     append_body: str | None = None) -> Entry:
        rel = await self.resolve(ref)
        entry = self.vault.update(rel, changes, append_body)
        await self._touched([rel, entry.path])
        return entry

    async def move(self, ref: str, category: str) -> MoveResult:
        rel = await self.resolve(ref)
        result = self.vault.move(rel, category)
        await self._touched([result.old_path, result.new_path])
        return result

    async def trash(self, ref: str) -> str:
        rel = await self.resolve(ref)
        trashed = self.vault.trash(rel)
        await self._touched([rel])
        return trashed
