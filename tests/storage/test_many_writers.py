"""Many users at once, and text no database stores: every note filed, no vault broken.

Run on both databases (BRAIN_TEST_DB=postgres): PostgreSQL has no whole-database write lock, so
index ids must come from the database, and its `text` refuses NUL.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from storage.db import Database
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url

USERS = 8
NOTES = 10


async def test_many_users_filing_at_once_keep_every_note(tmp_path: Path) -> None:
    url = fresh_url(tmp_path)
    # Two Database objects stand in for two processes (own pools, own connections).
    dbs = [await Database.open(url), await Database.open(url)]
    try:
        stores = [Store(Vault(tmp_path / "vaults" / f"U{u}"), dbs[u % 2]) for u in range(USERS)]

        async def file(u: int, n: int) -> str:
            entry = await stores[u].create("ideas", f"Idea {n} of user {u}",
                                           {"one_liner": f"word{u}x{n}"}, f"Body {n}.")
            return entry.path

        results = await asyncio.gather(*(file(u, n) for u in range(USERS) for n in range(NOTES)),
                                       return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        assert not errors, errors[:3]
        for u, store in enumerate(stores):
            listed = await store.list(limit=50)
            assert listed.total == NOTES
            assert {e.name for e in listed.entries} == {f"Idea {n} of user {u}"
                                                        for n in range(NOTES)}
            found = await store.search(f"word{u}x3")
            assert [e.name for e in found.entries] == [f"Idea 3 of user {u}"]
            assert (await stores[(u + 1) % USERS].search(f"word{u}x3")).entries == []
    finally:
        for db in dbs:
            await db.close()


def _write(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


async def test_a_note_with_nul_and_broken_text_does_not_break_its_vault(tmp_path: Path) -> None:
    vault = Vault(tmp_path / "vault")
    _write(vault.root, "ideas/nul.md",
           b'---\nname: "Nul\\0 idea"\none_liner: zeppelin\n---\nBody \x00 with nul\n')
    # A raw NUL in the YAML: the frontmatter does not parse, the note is indexed as text.
    _write(vault.root, "ideas/raw.md", b"---\nname: a\x00b\n---\nMarmalade recipe\n")
    _write(vault.root, "ideas/plain.md", b"---\nname: Plain idea\n---\nOrdinary words\n")
    # A file name that is not UTF-8 (Linux allows any bytes): Python gives it lone surrogates.
    odd = os.fsdecode(b"caf\xe9.md")
    (vault.root / "ideas" / odd).write_bytes(b"Quokka sighting")
    db = await Database.open(fresh_url(tmp_path))
    try:
        store = Store(vault, db)
        stats = await store.refresh()
        assert stats.added == 4
        listed = await store.list(limit=20)
        assert {e.name for e in listed.entries} == {"Plain idea", "Nul\ufffd idea", "raw",
                                                    "caf\ufffd"}
        assert [e.path for e in (await store.search("zeppelin")).entries] == ["ideas/nul.md"]
        assert [e.path for e in (await store.search("marmalade")).entries] == ["ideas/raw.md"]
        assert [e.path for e in (await store.search("ordinary")).entries] == ["ideas/plain.md"]
        assert [e.name for e in (await store.search("quokka")).entries] == ["caf\ufffd"]
        # Queries with the same characters are queries, not database errors.
        assert (await store.search("Nul\x00 idea")).entries[0].path == "ideas/nul.md"
        assert await store.resolve("Nul\x00 idea") == "ideas/nul.md"
        assert (await store.list(category="ideas\x00", limit=5)).entries == []
        assert (await store.refresh()).unchanged == stats.added  # and nothing to redo
    finally:
        await db.close()
