"""The background indexer keeps the index fresh off the reply's path: a note filed by a capture
is searchable by meaning within 5 s, an edit made outside the bot is seen after the timer's
next pass, and Stores that trust the indexer do not rescan before a read. Scan state is kept
per database and vault. On PostgreSQL the vectors are pgvector's type when the extension can
be created, BYTEA otherwise."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import event

from storage.db import Database
from storage.index.indexer import Indexer, embed_pending
from storage.index.refresh import last_scan
from storage.meaning.shared_model import Meaning
from storage.vault.files import Vault
from storage.vault.store import Store
from tests import databases
from tests.databases import fresh_url, on_postgres
from tests.tools.conftest import write_note

MEANING = Meaning.load()
needs_model = pytest.mark.skipif(not MEANING.available, reason=f"no model: {MEANING.why}")


async def _until(check, seconds: float = 5.0) -> float:  # type: ignore[no-untyped-def]
    """Seconds until `check()` is true; fails after `seconds`."""
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < seconds, "not within the time allowed"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


@needs_model
async def test_a_capture_is_searchable_by_meaning_within_5_s_and_outside_edits_follow(
        tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    indexer = Indexer(db, MEANING, scan_every=0.2)
    store = Store(Vault(tmp_path / "vault"), db, meaning=MEANING, fresh_within=30,
                  on_write=indexer.wake)
    write_note(store.vault.root, "admin/dentist.md", "---\nname: Dentist\n---\nCheck-up.\n")
    indexer.watch(store)
    indexer.start()
    try:
        await _until(lambda: _found(store, "Dentist"))
        entry = await store.create("projects", "Q3 budget", {},
                                   "How much money each team gets from July to September.\n")

        async def by_meaning() -> bool:
            found = await store.search("spending for the summer quarter")
            return any(e.path == entry.path and "meaning" in (e.signals or {})
                       for e in found.entries)

        took = await _until(by_meaning)
        assert took < 5.0

        # An edit made in Obsidian: the timer's next pass indexes it; reads never rescan.
        write_note(store.vault.root, "ideas/garden.md",
                   "---\nname: Garden beds\n---\nRaised beds for tomatoes behind the shed.\n")
        await _until(lambda: _found(store, "tomato seedlings", signal="meaning"))
    finally:
        await indexer.close()
        await db.close()
    assert not indexer.running


async def _found(store: Store, query: str, signal: str | None = None) -> bool:
    found = await store.search(query)
    return any(signal is None or signal in (e.signals or {}) for e in found.entries)


async def test_reads_trust_an_index_refreshed_within_the_window(tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    root = tmp_path / "vault"
    trusting = Store(Vault(root), db, fresh_within=60)
    # Trusts no earlier scan (a default Store skips a rescan that was slow just before: on a
    # loaded machine this one's would be, and the control would depend on timing).
    one_shot = Store(Vault(root), db, fresh_within=0)
    try:
        await trusting.refresh()
        write_note(root, "ideas/kites.md", "---\nname: Kites\n---\nBuild a kite.\n")
        assert (await trusting.search("kite")).entries == []  # trusted: no rescan on a read
        assert [e.name for e in (await one_shot.search("kite")).entries] == ["Kites"]
    finally:
        await db.close()


async def test_two_databases_indexing_one_vault_keep_their_scan_state_apart(
        tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write_note(root, "ideas/kites.md", "---\nname: Kites\n---\nBuild a kite.\n")
    first = await Database.open(fresh_url(tmp_path, "first"))
    second = await Database.open(fresh_url(tmp_path, "second"))
    try:
        await Store(Vault(root), first, fresh_within=60).refresh()
        other = Store(Vault(root), second, fresh_within=60)
        assert last_scan(second, other.index.key) is None  # the scan into `first` is not ours
        assert [e.name for e in (await other.search("kite")).entries] == ["Kites"]
    finally:
        await first.close()
        await second.close()


@pytest.mark.skipif(not on_postgres(), reason="PostgreSQL only")
@needs_model
async def test_postgres_stores_vectors_as_pgvector_or_bytea(tmp_path: Path) -> None:
    from storage.meaning.vector_rows import vector_column

    server = databases.postgres()
    role, name = f"brain_{uuid.uuid4().hex[:8]}", f"nopgv_{uuid.uuid4().hex[:8]}"
    # A role that may not create pgvector (not a superuser) owning a database without it.
    server.run(server._admin(f'CREATE ROLE "{role}" LOGIN NOSUPERUSER',
                             f'CREATE DATABASE "{name}" OWNER "{role}" TEMPLATE template0'))
    plain = server.url(name).replace("postgres@", f"{role}@")
    try:
        for url, kind in ((fresh_url(tmp_path), "pgvector"), (plain, "blob")):
            db = await Database.open(url)
            try:
                async with db.session() as session:
                    assert await vector_column(session) == kind
                store = Store(Vault(tmp_path / kind), db, meaning=MEANING)
                write_note(store.vault.root, "ideas/garden.md",
                           "---\nname: Garden beds\n---\nRaised beds for tomatoes.\n")
                await store.refresh()
                assert (await embed_pending(db, store.index.key, MEANING)).embedded == 1
                found = await store.search("tomato seedlings")
                assert found.entries and "meaning" in (found.entries[0].signals or {})
            finally:
                await db.close()
    finally:
        server.run(server._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
                                 f'DROP ROLE IF EXISTS "{role}"'))


class _Statements:
    """Every statement the database runs meanwhile, with its parameters (engine events)."""

    def __init__(self, db: Database) -> None:
        self.engine = db.engine.sync_engine
        self.seen: list[tuple[str, str]] = []

    def _heard(self, _conn, _cursor, statement, params, _context, _many) -> None:  # type: ignore[no-untyped-def]
        self.seen.append((statement, repr(params)))

    def __enter__(self) -> _Statements:
        event.listen(self.engine, "before_cursor_execute", self._heard)
        return self

    def __exit__(self, *_exc: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._heard)


async def test_the_indexers_look_touches_no_database_until_a_file_changes(
        tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    root = tmp_path / "vault"
    write_note(root, "ideas/kites.md", "---\nname: Kites\n---\nBuild a kite.\n")
    store = Store(Vault(root), db, fresh_within=60)
    try:
        first = await store.look()
        assert first is not None and first.added == 1
        with _Statements(db) as statements:
            assert await store.look() is None  # nothing changed: nothing asked
        assert statements.seen == []
        assert last_scan(db, store.index.key) is not None  # reads trust it as a rescan

        write_note(root, "ideas/boats.md", "---\nname: Boats\n---\nA rowing boat.\n")
        added = await store.look()
        assert added is not None and added.added == 1
        assert [e.name for e in (await store.search("rowing")).entries] == ["Boats"]
        assert await store.look() is None

        write_note(root, "ideas/boats.md", "---\nname: Boats\n---\nA sailing boat.\n")
        updated = await store.look()  # same size, a new time: looked at again
        assert updated is not None and updated.updated == 1
        (root / "ideas" / "kites.md").unlink()
        removed = await store.look()
        assert removed is not None and removed.removed == 1
        assert (await store.search("kite")).entries == []
    finally:
        await db.close()


@needs_model
async def test_a_write_in_one_vault_makes_no_database_work_for_the_others(
        tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    indexer = Indexer(db, MEANING, scan_every=0.2)
    stores = [Store(Vault(tmp_path / f"vault-{i}"), db, meaning=MEANING, fresh_within=30,
                    on_write=indexer.wake) for i in range(12)]
    for i, store in enumerate(stores):
        write_note(store.vault.root, f"ideas/note-{i}.md",
                   f"---\nname: Note {i}\n---\nAbout the number {i}.\n")
        indexer.watch(store)
    indexer.start()
    try:
        for store in stores:  # every vault indexed and embedded once
            await _until(lambda store=store: _found(store, "number", signal="meaning"), 60)
        await asyncio.sleep(1.0)  # the passes that found them are over
        written, others = stores[0], {s.index.key for s in stores[1:]}
        with _Statements(db) as statements:
            entry = await written.create("projects", "Q3 budget", {},
                                         "How much money each team gets from July on.\n")

            async def embedded() -> bool:
                found = await written.search("spending for the summer quarter")
                return any(e.path == entry.path and "meaning" in (e.signals or {})
                           for e in found.entries)

            await _until(embedded, 30)
            await asyncio.sleep(1.0)  # the indexer's next passes
        assert statements.seen, "the write itself went through the database"
        about_others = [s for s, params in statements.seen
                        if any(key in params or key in s for key in others)]
        assert about_others == []
    finally:
        await indexer.close()
        await db.close()


@needs_model
async def test_the_index_lag_counts_from_a_write_until_its_vectors_are_made(
        tmp_path: Path) -> None:
    """What `/metrics` shows as `brain_index_lag_seconds`: 0 while nothing waits; from a
    write, the seconds it has waited, growing, until its note is found by meaning; 0 again."""
    db = await Database.open(fresh_url(tmp_path))
    told: list[float] = []
    indexer = Indexer(db, MEANING, scan_every=0.1, on_lag=told.append)
    store = Store(Vault(tmp_path / "vault"), db, meaning=MEANING, fresh_within=30,
                  on_write=indexer.wake)
    indexer.watch(store)
    indexer.start()
    try:
        await _until(lambda: _lag_is(indexer, 0.0), 60)  # the empty vault looked at
        entry = await store.create("projects", "Q3 budget", {},
                                   "How much money each team gets from July to September.\n")
        first = indexer.lag()
        assert first > 0.0
        await asyncio.sleep(0.05)
        assert indexer.lag() > first  # still waiting, and for longer

        async def embedded() -> bool:
            found = await store.search("spending for the summer quarter")
            return any(e.path == entry.path and "meaning" in (e.signals or {})
                       for e in found.entries)

        await _until(embedded, 30)
        await _until(lambda: _lag_is(indexer, 0.0), 10)
        told.clear()
        await _until(lambda: _told(told), 10)
        assert told[-1] == 0.0 and max(told) == 0.0  # what the metric is set to each pass
    finally:
        await indexer.close()
        await db.close()


async def _lag_is(indexer: Indexer, value: float) -> bool:
    return indexer.lag() == value


async def _told(told: list[float]) -> bool:
    return len(told) >= 2
