"""Bring a vault's index rows in line with its files: add, update (by hash), remove.

Work out what changed away from the event loop (file I/O, parsing), then write it in the
caller's transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import BigInteger, Column, Float, MetaData, Table, Text, insert, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from storage.db import holds_lock
from storage.errors import StorageError
from storage.index.extract import IndexedNote, extract_note, indexable
from storage.text import clean_text
from storage.types import RefreshStats
from storage.vault.files import Vault

if TYPE_CHECKING:
    from storage.db import Database

# Per event loop and vault: index writes of one process go one at a time (a read's rescan and a
# write's re-index of the same new file must not both insert it).
_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary())
# (database URL, vault key) -> (monotonic time of the last full rescan, how long it took).
# A cache only (a vault it forgot is rescanned before its next read); two databases indexing
# one vault keep apart. The vaults scanned lately only: SCANS_KEPT of them.
SCANS_KEPT = 4096
_LAST_SCAN: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()


def index_turn(vault_key: str) -> contextlib.AbstractAsyncContextManager[Any]:
    """This process's lock on the index writes of one vault (in the running event loop).
    Nothing to wait for in a task whose shared transaction holds the vault's index lock
    (storage/vault/locks.py `index_lock`): every other writer waits for that one, and
    waiting here would wait for a task that waits for it."""
    if holds_lock(f"index:{vault_key}"):
        return contextlib.nullcontext()
    locks = _TURNS.setdefault(asyncio.get_running_loop(), {})
    if vault_key not in locks and len(locks) >= SCANS_KEPT:  # a lock nobody holds or awaits
        for key in [k for k, lock in locks.items() if not lock.locked()]:
            del locks[key]
    return locks.setdefault(vault_key, asyncio.Lock())


def last_scan(db: Database, vault_key: str) -> tuple[float, float] | None:
    """(monotonic time, seconds) of this process's last full rescan of the vault into `db`."""
    return _LAST_SCAN.get((db.url, vault_key))


def scanned(db: Database, vault_key: str, seconds: float) -> None:
    """A full rescan of the vault into `db` has just ended, after `seconds`."""
    _LAST_SCAN[(db.url, vault_key)] = (time.monotonic(), seconds)
    _LAST_SCAN.move_to_end((db.url, vault_key))
    while len(_LAST_SCAN) > SCANS_KEPT:
        _LAST_SCAN.popitem(last=False)


# The database assigns nids (SQLite: the rowid; PostgreSQL: an identity), so writers of many
# vaults at once never collide on one.
_NOTE_COLUMNS = (
    "vault", "path", "id", "name", "name_key", "stem_key", "category", "status",
    "one_liner", "context", "next_action", "due_date", "tags", "body", "frontmatter", "created",
    "dated", "updated", "updated_ts", "mtime_ns", "size", "hash", "embed_key",
)
_NUMBERS = {"updated_ts": Float, "mtime_ns": BigInteger, "size": BigInteger}
_NOTES = Table("index_notes", MetaData(), Column("nid", BigInteger, primary_key=True),
               *(Column(c, _NUMBERS.get(c, Text)) for c in _NOTE_COLUMNS))
_INSERT_NOTE = insert(_NOTES).returning(_NOTES.c.nid, sort_by_parameter_order=True)
_INSERT_FTS = text(
    "INSERT INTO index_fts (rowid, name, one_liner, context, next_action, body, meta) "
    "VALUES (:nid, :name, :one_liner, :context, :next_action, :body, :meta)"
)
# The stems table has no content of its own (migration 0017): a row is deleted by giving
# FTS5 the values it was indexed with, which `index_fts` holds.
_INSERT_STEMS = text(
    "INSERT INTO index_stems (rowid, name, one_liner, context, next_action, body, meta) "
    "VALUES (:nid, :name, :one_liner, :context, :next_action, :body, :meta)"
)
_DELETE_STEMS = text(
    "INSERT INTO index_stems (index_stems, rowid, name, one_liner, context, next_action, body, "
    "meta) SELECT 'delete', rowid, name, one_liner, context, next_action, body, meta "
    "FROM index_fts WHERE rowid = :nid"
)
_INSERT_PASSAGE = text(
    "INSERT INTO index_passages (vault, nid, seq, start_at, end_at, heading, embed_key) "
    "VALUES (:vault, :nid, :seq, :start_at, :end_at, :heading, :embed_key)"
)
_INSERT_LINK = text(
    "INSERT INTO index_links (vault, source_path, target, target_key, target_base, heading, "
    "alias, line) VALUES (:vault, :source_path, :target, :target_key, :target_base, :heading, "
    ":alias, :line)"
)

# After this many changed notes (a first index, a big import) PostgreSQL's tables are tidied at
# once (`tidy`) rather than when autovacuum comes by.
TIDY_AFTER = 1000

Known = dict[str, tuple[int, int, int, str]]  # path -> (mtime_ns, size, nid, hash)


def has_fts(session: AsyncSession) -> bool:
    """FTS5 exists on SQLite only (migration 0002)."""
    return session.get_bind().dialect.name == "sqlite"


@dataclass
class Plan:
    """What a refresh will write, worked out away from the event loop."""

    add: list[IndexedNote] = field(default_factory=list)
    replace: list[tuple[int, IndexedNote]] = field(default_factory=list)  # (old nid, new)
    touch: list[dict[str, Any]] = field(default_factory=list)  # hash unchanged, new mtime/size
    remove: list[tuple[int, str]] = field(default_factory=list)  # (nid, path)
    unchanged: int = 0

    @property
    def writes_rows(self) -> bool:
        return bool(self.add or self.replace or self.remove)


async def _known(session: AsyncSession, key: str, paths: Sequence[str] | None = None) -> Known:
    """path -> (mtime_ns, size, nid, hash) of the indexed notes (one query)."""
    sql = "SELECT path, mtime_ns, size, nid, hash FROM index_notes WHERE vault = :v"
    params: dict[str, Any] = {"v": key}
    if paths is not None:
        if not paths:
            return {}
        names = [f"p{i}" for i in range(len(paths))]
        sql += f" AND path IN ({', '.join(':' + n for n in names)})"
        params.update(zip(names, map(clean_text, paths), strict=True))
    result = await session.execute(text(sql), params)
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in result}


def _plan(vault: Vault, key: str, known: Known, files: Iterable[tuple[str, int, int]],
          full: bool) -> Plan:
    """`files` come from Vault.scan or were checked by Vault.resolve already."""
    plan = Plan()
    seen: set[str] = set()
    for raw, mtime_ns, size in files:
        rel = clean_text(raw)  # a file name with undecodable bytes is stored as U+FFFD
        if rel in seen:
            continue
        seen.add(rel)
        old = known.get(rel)
        if old is not None and old[0] == mtime_ns and old[1] == size:
            plan.unchanged += 1
            continue
        try:
            data = (vault.root / raw).read_bytes()
        except OSError:
            continue  # vanished or unreadable since the scan; the next refresh sees it
        if old is not None and hashlib.sha256(data).hexdigest() == old[3]:
            plan.touch.append({"nid": old[2], "mtime_ns": mtime_ns, "size": size})
            continue
        note = extract_note(key, rel, data, mtime_ns, size)
        if old is None:
            plan.add.append(note)
        else:
            plan.replace.append((old[2], note))
    if full:
        plan.remove = [(v[2], p) for p, v in known.items() if p not in seen]
    return plan


def _stat_paths(vault: Vault, rels: Sequence[str]) -> list[tuple[str, int, int]]:
    files = []
    for rel in rels:
        try:
            info = vault.resolve(rel).stat()
        except (OSError, StorageError):
            continue  # gone, or a path that is not ours: nothing to index
        files.append((rel, info.st_mtime_ns, info.st_size))
    return files


async def _insert(session: AsyncSession, notes: list[IndexedNote]) -> None:
    rows = [{c: note.row[c] for c in _NOTE_COLUMNS} for note in notes]
    nids = (await session.execute(_INSERT_NOTE, rows)).scalars().all()
    for note, nid in zip(notes, nids, strict=True):
        note.row["nid"] = nid
    if has_fts(session):
        await session.execute(_INSERT_FTS, [note.row for note in notes])
        await session.execute(_INSERT_STEMS, [note.row for note in notes])
    passages = [{**p, "nid": note.row["nid"]} for note in notes for p in note.passages]
    if passages:
        await session.execute(_INSERT_PASSAGE, passages)
    links = [link for note in notes for link in note.links]
    if links:
        await session.execute(_INSERT_LINK, links)


async def _apply(session: AsyncSession, key: str, plan: Plan) -> None:
    if plan.writes_rows:
        # Bump first: on SQLite this takes the write lock; on PostgreSQL it locks the vault's
        # row, so two writers of one vault go one after the other.
        await session.execute(
            text("INSERT INTO index_vaults (vault, generation) VALUES (:v, 1) "
                 "ON CONFLICT (vault) DO UPDATE SET generation = index_vaults.generation + 1"),
            {"v": key})
        gone = [(nid, path) for nid, path in plan.remove]
        gone += [(nid, note.row["path"]) for nid, note in plan.replace]
        if gone:
            nids = [{"nid": nid} for nid, _ in gone]
            if has_fts(session):
                await session.execute(_DELETE_STEMS, nids)
                await session.execute(text("DELETE FROM index_fts WHERE rowid = :nid"), nids)
            await session.execute(text("DELETE FROM index_passages WHERE nid = :nid"), nids)
            await session.execute(text("DELETE FROM index_notes WHERE nid = :nid"), nids)
            await session.execute(
                text("DELETE FROM index_links WHERE vault = :v AND source_path = :p"),
                [{"v": key, "p": path} for _, path in gone])
        fresh = plan.add + [note for _, note in plan.replace]
        if fresh:
            await _insert(session, fresh)
    if plan.touch:
        await session.execute(
            text("UPDATE index_notes SET mtime_ns = :mtime_ns, size = :size WHERE nid = :nid"),
            plan.touch)


def needs_tidy(stats: RefreshStats) -> bool:
    return stats.added + stats.updated + stats.removed >= TIDY_AFTER


async def tidy(engine: AsyncEngine) -> None:
    """After a large refresh. On PostgreSQL: VACUUM (ANALYZE) the index tables, outside any
    transaction. Counting and listing then read the indexes only (the visibility map), new
    words leave the GIN pending lists, and the planner knows the new words' frequencies;
    without it the first minute after a 50k import is 2-5x slower. On SQLite: ANALYZE them
    (~0.1 s at 20k notes): without statistics its planner guessed, e.g. walking a vault's
    every link in path order for one note's backlinks."""
    if engine.dialect.name == "sqlite":
        async with engine.begin() as conn:
            await conn.execute(text("ANALYZE index_notes"))
            await conn.execute(text("ANALYZE index_links"))
            await conn.execute(text("ANALYZE index_passages"))
        return
    if engine.dialect.name != "postgresql":
        return
    async with engine.connect() as conn:
        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await auto.execute(text("VACUUM (ANALYZE) index_notes, index_links, index_passages"))


async def refresh(session: AsyncSession, vault: Vault, key: str) -> RefreshStats:
    """Bring the rows in line with the files: add, update (by hash), remove."""
    started = time.perf_counter()
    known = await _known(session, key)

    def work() -> Plan:
        return _plan(vault, key, known, vault.scan(), full=True)

    plan = await asyncio.to_thread(work)  # file I/O and parsing off the event loop
    await _apply(session, key, plan)
    return RefreshStats(added=len(plan.add), updated=len(plan.replace),
                        removed=len(plan.remove), unchanged=plan.unchanged,
                        seconds=time.perf_counter() - started,
                        changed=tuple([n.row["path"] for n in plan.add]
                                      + [n.row["path"] for _nid, n in plan.replace]
                                      + [p for _nid, p in plan.remove]))


async def refresh_paths(session: AsyncSession, vault: Vault, key: str, rels: list[str]) -> None:
    """Re-index just these paths (after our own writes): present -> indexed, gone -> removed."""
    wanted = list(dict.fromkeys(r for r in rels if indexable(r) and "\x00" not in r))
    known = await _known(session, key, wanted)

    def work() -> Plan:
        files = _stat_paths(vault, wanted)
        plan = _plan(vault, key, known, files, full=False)
        present = {clean_text(f[0]) for f in files}
        plan.remove = [(v[2], p) for p, v in known.items() if p not in present]
        return plan

    await _apply(session, key, await asyncio.to_thread(work))
