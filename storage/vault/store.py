"""Store: the operations tools call, for one user's vault (vault files + index + database).

Reads see edits made outside the bot (Obsidian, git): a one-shot command rescans the vault
before it reads; a long-running process (`brain serve`, `brain mcp`) has the background
indexer (storage/index/indexer.py) rescan every few seconds, and its Stores trust an index refreshed
within `fresh_within` seconds instead of rescanning on a reply's path. Every write goes to the
vault, then re-indexes exactly the files it touched, so our own writes are visible at once (and
`on_write` tells the indexer to embed them).

With a `Meaning` (storage/meaning/shared_model.py) search also ranks by meaning, and `nearby` finds the
notes closest to a text.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
from collections.abc import Callable, Collection
from datetime import date
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.errors import Ambiguous, InvalidValue, NotFound
from storage.history import History
from storage.history.recorded import Recorded
from storage.index import SearchIndex
from storage.index.meaning_probe import MEANING_FLOOR, MeaningQuery
from storage.meaning.shared_model import Meaning
from storage.text import clean_text
from storage.types import (
    TRASH_DIR,
    BacklinkList,
    Created,
    Entry,
    EntryList,
    EntrySummary,
    MoveResult,
    ReceiptDraft,
    VaultSummary,
)
from storage.vault import ids, relink
from storage.vault.files import ATTACHMENTS, Vault
from storage.vault.locks import write_lock
from storage.vault.mirror import Mirror
from storage.vault.paths import slugify
from storage.vault.upkeep import IndexOnPush, Upkeep

MAX_CANDIDATES = 10

def _looks_like_path(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.startswith(".") or ref.lower().endswith(".md")


class Store(Recorded, Upkeep):
    """One user's vault over the shared database.

    fresh_within: reads trust an index fully rescanned (by anyone in this process) within
    this many seconds; None (one-shot commands): rescan before every read, unless a slow
    rescan has just run. meaning: search by meaning too. on_write: called after each of our
    own writes has been re-indexed (the background indexer embeds it). history: where each
    change is recorded (storage/history); None records nothing.
    """

    def __init__(self, vault: Vault, db: Database, *, meaning: Meaning | None = None,
                 fresh_within: float | None = None,
                 on_write: Callable[[str], None] | None = None,
                 history: History | None = None, mirror: Mirror | None = None) -> None:
        self.vault = vault
        self.history = history
        self.mirror = mirror  # the database store: the vault is a mirror of PostgreSQL's
        self.db = db
        self.index = SearchIndex(vault)
        self.meaning = meaning if meaning is not None else Meaning.off()
        self.fresh_within = fresh_within
        self.on_write = on_write
        self.disk_seen: int | None = None  # the files at the indexer's last rescan (`look`)
        self.meaning_floor = MEANING_FLOOR  # cosine a note found by meaning alone must reach

    # --- reading ----------------------------------------------------------------------------

    async def resolve(self, ref: str, *, by_words: bool = False) -> str:
        """The one note `ref` names (path, id, name, stem; `by_words`: its words); no guess."""
        if not isinstance(ref, str) or not ref.strip():
            raise InvalidValue("give a note's path, id or name")
        ref = ref.strip()
        if _looks_like_path(ref):
            self.vault.resolve(ref)  # UnsafePath for `..`, absolute paths, symlinks out
        async def find(session: AsyncSession) -> builtins.list[EntrySummary]:
            found = await self.index.lookup(session, ref)
            if not found and by_words and not _looks_like_path(ref):
                found = await self.index.named(session, ref)
            return found

        matches = await self._read(find)
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

    async def _with_id(self, entry_id: str, at: str | None = None) -> Entry | None:
        """storage/vault/ids.py `with_id` (one query, no rescan)."""
        return await ids.with_id(self.db, self.index, entry_id, at)

    async def find_id(self, entry_id: str, *, at: str | None = None,
                      look_hard: bool = True) -> Entry | None:
        """The note with this exact id (at `at`, its receipt's path, if it is there), or None.
        `look_hard`: on a miss, rescan (a file written just before a crash, not indexed yet):
        for work that runs again, not every capture."""
        await self._fresh()
        found = await self._with_id(entry_id, at)
        if found is None and look_hard:
            await self.refresh()
            found = await self._with_id(entry_id, at)
        return found

    async def _current(self, ref: str) -> str:
        """`ref`'s path now, under the vault lock: when another process moved the note since
        the index last looked, the index is refreshed and the note found again by its id."""
        rel = await self.resolve(ref)
        if (self.vault.root / rel).is_file():
            return rel
        async with self.db.session() as session:
            known = [m.id for m in await self.index.lookup(session, rel) if m.id]
        await self.refresh()
        return await self.resolve(known[0] if known else ref)

    async def list(self, *, category: str | None = None, status: str | None = None,
                   limit: int = 10) -> EntryList:
        return await self._read(lambda session: self.index.list(
            session, category=category, status=status, limit=limit))

    async def due(self, *, after: str | None = None, until: str | None = None,
                  category: str | None = None, status: str | None = None,
                  open_only: bool = True, limit: int = 10) -> EntryList:
        """Notes due between two ISO days (either end open), soonest first; open ones only
        unless `open_only` is False."""
        return await self._read(lambda session: self.index.due(
            session, after=after, until=until, category=category, status=status,
            open_only=open_only, limit=limit))

    async def _meaning_query(self, text: str) -> MeaningQuery | None:
        """The text's vector, as a task started now (it runs while the words are searched)."""
        if not isinstance(text, str) or not text.strip() or not await self.meaning.ready():
            return None
        return MeaningQuery(self.meaning.model,
                            asyncio.ensure_future(self.meaning.vector(clean_text(text))),
                            self.meaning_floor)

    async def search(self, query: str, *, category: str | None = None,
                     status: str | None = None, limit: int = 10,
                     today: date | None = None) -> EntryList:
        """`today`: the asker's day, for the times a query names ("last week")."""
        meaning = await self._meaning_query(query)
        try:
            return await self._read(lambda session: self.index.search(
                session, query, category=category, status=status, limit=limit,
                meaning=meaning, today=today))
        finally:
            if meaning is not None and not meaning.vector.done():  # type: ignore[attr-defined]
                meaning.vector.cancel()  # type: ignore[attr-defined]

    async def embed_ahead(self, text: str) -> None:
        """`text`'s vector made now (kept with the model's recent ones), so a `nearby` of it
        inside a write (`together`) does not hold the vault's lock while it is computed."""
        if isinstance(text, str) and text.strip():
            await self.meaning.vector(clean_text(text))

    async def nearby(self, text: str, *, k: int = 3, floor: float = 0.0,
                     exclude: Collection[str] = ()) -> builtins.list[EntrySummary]:
        """The k notes nearest `text` by meaning (cosine >= floor, in `score`), except those
        whose id or path is in `exclude`; [] without the model."""
        meaning = await self._meaning_query(text)
        if meaning is None:
            return []
        return await self._read(lambda session: self.index.nearby(
            session, meaning, k=k, floor=floor, exclude=exclude))

    async def backlinks(self, ref: str) -> BacklinkList:
        rel = await self.resolve(ref)
        async with self.db.session() as session:
            return await self.index.backlinks(session, rel)

    async def summary(self) -> VaultSummary:
        return await self._read(self.index.summary)

    async def summary_in(self, session: AsyncSession) -> VaultSummary | None:
        """`summary` read in the caller's transaction when the index needs no rescan or pull
        first (known fresh, the mirror up to date); None: ask `summary`."""
        if self.mirror is not None:
            if await self.mirror.behind(session):
                return None
        elif not self._trusted():
            return None
        return await self.index.summary(session)

    # --- writing ----------------------------------------------------------------------------

    def _changing(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The vault's write lock (storage/vault/locks.py `write_lock`); in the database store
        every machine's, with the mirror pulled first and the write pushed after."""
        name = f"vault:{self.vault.key}" if self.vault.logical else None
        if self.mirror is None:
            return write_lock(self.vault.root, self.db, name=name)
        lock = write_lock(self.vault.root, self.db, name=name, share=True)
        return self.mirror.writing(lock, self._touched, IndexOnPush(self))

    def together(self) -> contextlib.AbstractAsyncContextManager[None]:
        """A block whose reads and writes are one write: in the database store, under the
        vault's lock and in its one transaction (a capture's looks at what exists and the note
        it files); in the file store nothing (each write takes the lock itself)."""
        return contextlib.nullcontext() if self.mirror is None else self._changing()

    async def link_to(self, rel: str) -> str:
        """The shortest `[[link]]` target naming `rel` alone: its stem, else its path."""
        return await relink.link_to(self.db, self.index.key, rel)

    async def create(self, category: str, name: str, fields: dict[str, Any],
                     body: str, *, entry_id: str | None = None) -> Entry:
        return (await self.create_once(category, name, fields, body, entry_id=entry_id)).entry

    async def create_once(self, category: str, name: str, fields: dict[str, Any], body: str,
                          *, entry_id: str | None, receipt: ReceiptDraft | None = None,
                          ) -> Created:
        """A new note (`made`), or, for a given `entry_id` (derived from a job or a saved
        message), the one another run or process made: never two in one vault. With a
        `receipt` (a capture's) the note and its receipt are written in one step: for a derived
        id the receipt first (storage/vault/ids.py), so the note made under it is the one the
        receipt records, never a file that merely carries the id. The lookup and the write are
        one step under the vault's write lock, and the new file is indexed before the lock is
        let go, so the other run's lookup sees it."""
        receipts = claim = None
        if receipt is not None:  # the rows' module (and the ORM) only when a receipt is made
            from storage.repositories.receipts import ReceiptClaim, Receipts

            receipts = Receipts(self.db)
            claim = ReceiptClaim(receipts, receipt, entry_id) if entry_id else None
        async with self._changing():
            held, taken, planned = await self._plan(claim, category, name)
            entry = await self._made_before(entry_id, claim, held)
            made = entry is None
            if entry is None:
                await self._before([])
                folders = self.vault.absent_folders(f"{category}/-")
                entry = await ids.create(self.vault, claim, category, name, fields, body,
                                         entry_id=entry_id, taken=taken, planned=planned)
                await self._record("create", f"{entry.name} in {category}", [entry.path],
                                   new_folders=folders)
                await self._touched([entry.path])
            elif self.mirror is not None:  # made by a run that died before sending it
                self.mirror.wrote([entry.path])
        kept = claim.ok if claim is not None else True
        if receipts is not None and receipt is not None and claim is None and entry.id:
            kept = await receipts.record(receipt, entry.id, entry.path)
        return Created(entry, made, kept)

    async def _plan(self, claim: ids.Claim | None, category: str, name: str,
                    ) -> tuple[str | None, set[str], str | None]:
        """In one transaction: where the note of the claim's id is (`held`), the stems a new
        note must not take, and, when no note was made under the id, the claim recorded where
        the new note will go (`planned`), committed before the file is written."""
        stem = slugify(name) if isinstance(name, str) else ""
        async with self.db.session() as s:
            held = await claim.held(s) if claim is not None else None
            taken = await self.index.stems_taken(s, stem) if stem else set()
            if claim is None or held is not None:
                return held, taken, None
            planned = self.vault.path_for(category, name, taken)
            await claim.record(planned, s)
            return None, taken, planned

    async def _made_before(self, entry_id: str | None, claim: ids.Claim | None,
                           held: str | None) -> Entry | None:
        """The note an earlier run made under a derived id: the one its receipt records
        (`held`: found where the receipt says, else by id), or, without a receipt to go by,
        any note carrying the id. None: none was made."""
        if not entry_id:
            return None
        if claim is not None and held is None:
            return None
        entry = await self._with_id(entry_id, held)
        if entry is None and held is not None:  # written, then a crash: not indexed
            entry = await self.find_id(entry_id, at=held)
        return entry

    async def update(self, ref: str, changes: dict[str, Any],
                     append_body: str | None = None) -> Entry:
        async with self._changing():
            rel = await self._current(ref)
            await self._before([rel])
            entry = self.vault.update(rel, changes, append_body)
            what = [", ".join(sorted(changes))] * bool(changes) + ["text added"] * bool(append_body)
            await self._record("update", f"{entry.name}: {' and '.join(what) or 'touched'}", [rel])
            await self._touched([rel, entry.path])  # (the database store: sent with the text)
        return entry

    async def move(self, ref: str, category: str) -> MoveResult:
        async with self._changing():
            rel = await self._current(ref)
            sources = await relink.linking(self.db, self.index.key, rel)
            await self._before([rel, *sources])
            folders = self.vault.absent_folders(f"{category}/-")
            result = self.vault.move(rel, category, await relink.names_blocked(
                self.db, self.vault, self.index.key, rel, category))
            relinked = await relink.relink(self.db, self.vault, self.index.key,
                                           [*sources, result.new_path],  # and its own links
                                           result.old_path, result.new_path)
            await self._record("move", f"{result.entry.name} to {category}",
                               [result.old_path, result.new_path, *relinked],
                               [(result.old_path, result.new_path)], folders)
            await self._touched([result.old_path, result.new_path, *relinked])
        return result

    async def attach(self, name: str, data: bytes) -> str:
        """Keep a shared file in the vault (`attachments/`); returns its path."""
        async with self._changing():
            await self._before([])
            made = self.vault.absent_folders(f"{ATTACHMENTS}/-")
            rel = self.vault.attach(name, data)
            await self._record("attach", rel, [rel], new_folders=made)
        return rel

    async def trash(self, ref: str) -> str:
        async with self._changing():
            rel = await self._current(ref)
            await self._before([rel])
            name = self.vault.read(rel).name
            made = self.vault.absent_folders(f"{TRASH_DIR}/{rel}")
            trashed = self.vault.trash(rel)
            await self._record("trash", f"{name} to the trash",
                               [rel, trashed], [(rel, trashed)], made)
            await self._touched([rel])
        return trashed
