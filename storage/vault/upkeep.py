"""A Store's index kept in step with its vault (mixed into the Store, storage/vault/store.py):
a rescan before a read unless one ran lately (`fresh_within`), the files a write touched
re-indexed at once, outside edits recorded in the history; in the database store, the mirror
pulled instead of rescanned (storage/vault/mirror.py)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy.exc import IntegrityError, OperationalError

from storage.index.refresh import index_turn, last_scan, needs_tidy, scanned, tidy
from storage.types import RefreshStats
from storage.vault.locks import index_lock

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Awaitable, Callable

    from sqlalchemy.ext.asyncio import AsyncSession

    from storage.db import Database
    from storage.history import History
    from storage.index import SearchIndex
    from storage.meaning.shared_model import Meaning
    from storage.vault.files import Vault
    from storage.vault.mirror import Mirror

# A rescan that took long is not repeated within this many seconds (per process and vault);
# a cheap one (small vault) always runs, so an outside edit is seen by the very next query.
MAX_SKIP_SECONDS = 1.0
CHEAP_SCAN_SECONDS = 0.05

T = TypeVar("T")


def disk_print(vault: Vault) -> int:
    """What a rescan compares of the vault's files (path, modification time, size), as one
    number: equal numbers, nothing a rescan would index differently."""
    return hash(tuple(sorted(vault.scan())))


class Upkeep:
    vault: Vault
    db: Database
    index: SearchIndex
    meaning: Meaning
    history: History | None
    mirror: Mirror | None
    fresh_within: float | None
    on_write: Callable[[str], None] | None
    disk_seen: int | None

    def _changing(self) -> contextlib.AbstractAsyncContextManager[None]:
        raise NotImplementedError

    async def _catch_up(self) -> None:
        raise NotImplementedError

    async def _locked_refresh(self, then: Callable[[AsyncSession], Awaitable[Any]] | None = None,
                              out: list[Any] | None = None) -> RefreshStats:
        """A rescan into the index; `then` (a read) runs in its transaction, after the rescan,
        its value appended to `out` (one transaction where a read after a rescan took two)."""
        for attempt in (1, 2, 3):
            try:
                async with self.db.session() as session:
                    await index_lock(session, self.index.key)  # other replicas' index writes
                    stats = await self.index.refresh(session)
                    if then is not None and out is not None:
                        out[:] = [await then(session)]
                    await session.commit()
                if needs_tidy(stats):
                    await tidy(self.db.engine)
                scanned(self.db, self.index.key, stats.seconds)
                if self.vault.leftovers:  # a crashed write's temp file, seen by the scan
                    self.vault.clean_seen_temp()
                return stats
            except (OperationalError, IntegrityError):
                # Another process indexed the same files between our read and our write
                # (SQLite refuses a stale snapshot; a unique path collides); the next pass
                # sees its rows.
                if attempt == 3:
                    raise
        raise AssertionError("unreachable")

    async def refresh(self) -> RefreshStats:
        """A full rescan now (`brain reindex`); in the database store, the mirror brought up
        to date (nobody edits a mirror by hand: a rescan would take another machine's new
        note, indexed before this mirror has it, for one deleted here), and the changes its
        history could not record before recorded and sent."""
        if self.mirror is not None:
            changed = await self._pull()
            if self.history is not None and self.history.pending.behind:
                async with self._changing():  # the lock across machines; sent when recorded
                    await self._catch_up()  # what it could not record before (a stale lock)
            return RefreshStats(changed=tuple(changed))
        return await self.rescan()

    async def look(self, behind: bool | None = None) -> RefreshStats | None:
        """The background indexer's look (storage/index/indexer.py): `refresh`, unless the
        vault's files (paths, times, sizes) are as they were when its last look rescanned
        them; then None, with no database work at all (the index matched those files; a
        read still counts the index as freshly scanned). A look that rescans keeps the files
        as they were before it, so a change made during the rescan is looked at again.
        In the database store, `behind=False` (the indexer asked for all its vaults at once:
        `mirror.mirrors_behind`) says the mirror is up to date: nothing to do."""
        pending = self.history is not None and self.history.pending.behind
        if self.mirror is not None and behind is False and not pending:
            return None
        if self.mirror is not None or pending:
            return await self.refresh()
        seen = await asyncio.to_thread(disk_print, self.vault)
        if self.vault.leftovers:  # a crashed write's temp file: cleaned, as a rescan does
            self.vault.clean_seen_temp()
        if seen == self.disk_seen:
            last = last_scan(self.db, self.index.key)
            scanned(self.db, self.index.key, last[1] if last is not None else 0.0)
            return None
        stats = await self.refresh()
        self.disk_seen = seen
        return stats

    async def rescan(self) -> RefreshStats:
        """Every file of the vault (or the mirror) read again into the index."""
        async with index_turn(self.index.key):
            stats = await self._locked_refresh()
        await self._outside(stats)
        return stats

    async def _outside(self, stats: RefreshStats) -> None:
        """Files a rescan found changed that the app did not write: an "outside edit" in the
        history (after the index lock is let go: a writer holds the vault lock, then wants it)."""
        if self.history is not None and (stats.changed or self.history.pending.behind):
            history = self.history
            async with self._changing():
                await self._catch_up()  # with the changes it could not record before
                if stats.changed:
                    await asyncio.to_thread(history.outside, stats.changed)

    async def drop_vectors(self) -> int:
        """Forget every vector of this vault, any model's (`brain forget`: kept by text hash)."""
        from storage.meaning import cache, vector_rows

        async with index_turn(self.index.key), self.db.session() as session:
            removed = await vector_rows.drop_vault(session, self.index.key)
            await session.commit()
            cache.forget(cache.database_url(session), self.index.key)
        return removed

    def _trusted(self) -> bool:
        last = last_scan(self.db, self.index.key)
        if last is None:
            return False
        at, cost = last
        if self.fresh_within is not None:
            window = self.fresh_within
        else:
            window = 0.0 if cost < CHEAP_SCAN_SECONDS else min(MAX_SKIP_SECONDS, 2 * cost)
        return time.monotonic() - at < window

    async def _pull(self, then: Callable[[AsyncSession], Awaitable[Any]] | None = None,
                    out: list[Any] | None = None) -> list[str]:
        """The database store: what other machines wrote, into the mirror and the index.
        `then`, `out`: a read made in the transaction that found the mirror up to date (not
        made when it was behind)."""
        assert self.mirror is not None
        async with self.db.session() as session:
            if not await self.mirror.behind(session):
                if then is not None and out is not None:
                    out[:] = [await then(session)]
                return []
        changed = (await self.mirror.pull()).paths
        if changed:
            await self._touched(changed)
        return changed

    async def _fresh(self, then: Callable[[AsyncSession], Awaitable[Any]] | None = None,
                     out: list[Any] | None = None) -> None:
        """Rescan before a read, unless the index is known fresh (see `fresh_within`); in the
        database store, pull what other machines wrote. `then`, `out`: see `_locked_refresh`
        (`out` stays empty when no rescan ran)."""
        if self.mirror is not None:
            await self._pull(then, out)
            return
        if self._trusted():  # no lock either: a turn never waits behind the indexer's scan
            return
        async with index_turn(self.index.key):
            stats = None if self._trusted() else await self._locked_refresh(then, out)
        if stats is not None:
            await self._outside(stats)

    async def _read(self, read: Callable[[AsyncSession], Awaitable[T]]) -> T:
        """`read` of the index once it is fresh (`_fresh`): in the rescan's own transaction
        when one runs (it sees what the rescan wrote), else in one of its own."""
        out: list[T] = []
        await self._fresh(read, out)
        if out:
            return out[0]
        async with self.db.session() as session:
            return await read(session)

    async def _touched(self, rels: list[str]) -> None:
        """Re-index the files our own write changed (a collision with another process's
        indexing is retried; the last pass sees both). In the database store, within a
        write: in the transaction that sends the files (`Mirror.reindex`); within a write
        inside it, at once (what follows may read them) and once more with the send, whose
        vectors and word to the indexer come after the commit."""
        if self.mirror is not None and self.mirror.in_write:
            self.mirror.reindex(rels)
            return
        for attempt in (1, 2, 3):
            try:
                async with index_turn(self.index.key), self.db.session() as session:
                    await index_lock(session, self.index.key)
                    await self.index.refresh_paths(session, rels)
                    await session.commit()
                break
            except (OperationalError, IntegrityError):
                if attempt == 3:
                    raise
        if self.mirror is not None and self.mirror.under_way:
            self.mirror.reindex(rels)
        elif self.on_write is not None:
            self.on_write(self.index.key)


class IndexOnPush:
    """A Store's index as the database store's push writes it (`vault_rows.Index`): a write's
    files indexed in the transaction that sends them, with the vectors of their passages
    when there are few (a capture's note: `IN_WRITE_PASSAGES`) and the model is loaded; the
    indexer is told once it commits only when some are left for it to make."""

    def __init__(self, upkeep: Upkeep) -> None:
        self.upkeep = upkeep
        self.embedded = False

    async def rows(self, session: AsyncSession, rels: list[str]) -> None:
        index = self.upkeep.index
        async with index_turn(index.key):  # PostgreSQL's lock below holds to the commit
            await index_lock(session, index.key)
            await index.refresh_paths(session, rels)
        self.embedded = await _vectors_in(session, index.key, self.upkeep.meaning)

    def written(self, rels: list[str]) -> None:
        if self.upkeep.on_write is not None and not self.embedded:
            self.upkeep.on_write(self.upkeep.index.key)


# A write whose vault then lacks vectors for at most this many passages makes them itself, in
# its transaction (a few milliseconds each); more are left to the background indexer.
IN_WRITE_PASSAGES = 8


async def _vectors_in(session: AsyncSession, key: str, meaning: Meaning) -> bool:
    """The vectors of the vault's passages that lack them, made and written in `session`'s
    transaction when they are few and the model is loaded (never waiting for it); whether
    none is left to make."""
    from storage.meaning import vector_rows

    if not meaning.available or meaning.model is None:
        return False
    found = await vector_rows.pending(session, key, meaning.model, IN_WRITE_PASSAGES + 1)
    if len(found) > IN_WRITE_PASSAGES:
        return False
    if found:
        await vector_rows.embed_into(session, key, meaning, found)
    return True
