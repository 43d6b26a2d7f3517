"""The Store's side of its vault's history (storage/history): each write recorded under the
vault's lock, the list of changes, and undo. A write never fails because of the history: a
change it cannot record now stands and is recorded late (a retried job must not make it
again); an undo it cannot record is refused before anything changes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from storage.errors import InvalidValue
from storage.history import Change, History
from storage.history.context import wrote
from storage.history.undo import undo

if TYPE_CHECKING:
    from storage.vault.mirror import Mirror


class _Store(Protocol):
    history: History | None
    mirror: Mirror | None

    def _changing(self) -> contextlib.AbstractAsyncContextManager[None]: ...
    async def _fresh(self) -> None: ...
    async def resolve(self, ref: str) -> str: ...
    async def _touched(self, rels: list[str]) -> None: ...
    async def _catch_up(self) -> None: ...


def _kept(store: _Store) -> History:
    if store.history is None:
        raise InvalidValue("this vault keeps no history")
    return store.history


class Recorded:
    """Mixed into the Store (which holds the lock, the index and `history`)."""

    async def _before(self: _Store, rels: Iterable[str]) -> None:
        # A few files' hashes and a small commit (~4 ms): inline, as the write itself is.
        if self.history is not None:
            await self._catch_up()
            self.history.before(list(rels))

    async def _catch_up(self: _Store) -> None:
        """Under the write lock: the history's late changes recorded (and the first snapshot
        taken), the files they put re-indexed (in the database store: sent with the write
        under way; a killed process's half-made change is made whole there, never sent half)."""
        if self.history is None:
            return
        late = self.history.pending.paths() if self.history.pending.behind else []
        await self.history.ready()
        if late:
            await self._touched(late)

    async def _record(self: _Store, action: str, summary: str, rels: Iterable[str],
                      moved: Iterable[tuple[str, str]] = (),
                      new_folders: Iterable[str] = ()) -> None:
        wrote()  # counted against the turn's or session's cap, whatever the history does
        rels = list(rels)
        if self.mirror is not None:
            self.mirror.wrote(rels)
        if self.history is not None:
            self.history.record(action, summary, list(rels), moved=tuple(moved),
                                new_folders=tuple(new_folders))

    async def changes(self: _Store, ref: str | None = None, limit: int = 50) -> list[Change]:
        """Newest first: the vault's changes, or one note's (followed through its moves)."""
        history = _kept(self)
        await self._fresh()  # outside edits the rescan finds are in the list
        rel = await self.resolve(ref) if ref else None
        async with self._changing():
            await self._catch_up()  # late changes recorded, if they can be
        return await asyncio.to_thread(history.of_note, rel, limit)

    def history_trouble(self: _Store) -> str | None:
        """Why some changes are not in the vault's history yet (None: all are)."""
        return None if self.history is None else self.history.trouble

    async def undo(self: _Store, change: str | None = None) -> Change:
        """Put back the files of one change (default: the app's last); ChangedSince when any
        of them changed after it, HistoryFailed when the history cannot record it."""
        history = _kept(self)
        await self._fresh()
        async with self._changing():
            done = await asyncio.to_thread(undo, history, change)
            if self.mirror is not None:
                self.mirror.wrote(done.paths)
            await self._touched(list(done.paths))  # (the database store: sent with the text)
        return done
