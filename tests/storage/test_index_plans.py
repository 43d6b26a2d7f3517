"""The index's lookups stay one indexed probe at any vault size.

Without statistics SQLite's planner walked every row of a vault for `lookup` (four ways of
naming a note in one OR: 56 ms at 20k notes, so an answer reading eight notes spent 0.45 s
there), for `stems_taken` (a substr() test on each row) and for `due` (no index had the day). The plans are checked, not the
time: the same plan is chosen for 40 notes as for 20,000.
"""

from __future__ import annotations

import asyncio
import re
import string
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event, text

from storage.db import Database
from storage.index import SearchIndex
from storage.index.refresh import tidy
from storage.vault.files import Vault
from storage.vault.links import link_key
from tests.databases import fresh_url, on_postgres


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(fresh_url(tmp_path))
    yield database
    await database.close()


async def indexed(db: Database, vault: Vault, notes: dict[str, str]) -> SearchIndex:
    for rel, body in notes.items():
        path = vault.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    index = SearchIndex(vault)
    async with db.session() as s:
        await index.refresh(s)
        await s.commit()
    return index


@contextmanager
def statements(db: Database) -> Iterator[list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        seen.append((statement, params))

    engine = db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


async def walks(db: Database, statement: str, params: Any) -> list[str]:
    """The steps of SQLite's plan that read a vault's every row (or a whole table)."""
    async with db.engine.connect() as conn:
        plan = (await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params)).all()
    return [step[3] for step in plan
            if step[3].startswith("SCAN") and "VIRTUAL TABLE" not in step[3]
            or re.search(r"\(vault=\?\)$", step[3])]


def many_notes(n: int) -> dict[str, str]:
    return {f"{cat}/note-{i}.md": f"---\nid: e_{i:012d}\nname: Note {i}\n---\nSee [[note-{i + 1}]].\n"
            for i, cat in zip(range(n), ["ideas", "projects", "people", "admin"] * n,
                              strict=False)}


@pytest.mark.skipif(on_postgres(), reason="SQLite's planner (PostgreSQL keeps statistics)")
async def test_a_lookup_the_free_stems_and_what_is_due_read_only_the_rows_they_name(
        tmp_path: Path, db: Database) -> None:
    notes = many_notes(40)
    notes["admin/note-3.md"] = notes["admin/note-3.md"].replace(
        "---\nSee", "due_date: 2026-03-09\n---\nSee")
    index = await indexed(db, Vault(tmp_path / "v"), notes)
    with statements(db) as seen:
        async with db.session() as s:
            for ref in ("e_000000000007", "ideas/note-0.md", "ideas/note-0", "Note 5",
                        "note-9"):
                assert len(await index.lookup(s, ref)) == 1, ref
            assert await index.stems_taken(s, "note-1") == {"note-1"}
            assert [e.path for e in (await index.due(
                s, after="2026-03-01", until="2026-03-31")).entries] == ["admin/note-3.md"]
            assert (await index.due(s, after=None, until="2026-02-28")).entries == []
    assert len(seen) > 6
    for statement, params in seen:
        assert await walks(db, statement, params) == [], statement


@pytest.mark.skipif(on_postgres(), reason="SQLite's planner (PostgreSQL keeps statistics)")
async def test_after_a_large_refresh_backlinks_read_only_the_links_to_the_note(
        tmp_path: Path, db: Database) -> None:
    index = await indexed(db, Vault(tmp_path / "v"), many_notes(60))
    await tidy(db.engine)  # what a refresh of TIDY_AFTER or more notes runs
    with statements(db) as seen:
        async with db.session() as s:
            found = await index.backlinks(s, "projects/note-5.md")
    assert [b.path for b in found.backlinks] == ["ideas/note-4.md"]
    for statement, params in seen:
        assert await walks(db, statement, params) == [], statement


STEM_CHARS = string.ascii_lowercase[:4] + "-._ ,!~é0"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(stems=st.sets(st.text(STEM_CHARS, min_size=1, max_size=6), min_size=1, max_size=12),
       asked=st.text(STEM_CHARS, min_size=1, max_size=4))
def test_the_stems_taken_are_exactly_the_stem_and_its_numbered_kin(
        tmp_path_factory: pytest.TempPathFactory, stems: set[str], asked: str) -> None:
    """`[[stem]]` must name one note: a new note's stem is chosen among those not taken, so
    every `stem` and `stem-<anything>` must be found, and nothing else."""
    root = tmp_path_factory.mktemp("stems")
    notes = {f"n/{s.strip() or 'x'}.md": "body\n" for s in stems
             if s.strip() and not s.strip().startswith(".") and "/" not in s}

    async def run() -> tuple[set[str], set[str]]:
        database = await Database.open(fresh_url(root))
        try:
            index = await indexed(database, Vault(root / "v"), notes)
            async with database.session() as s:
                every = {r[0] for r in await s.execute(text(
                    "SELECT stem_key FROM index_notes WHERE vault = :v"), {"v": index.key})}
                taken = await index.stems_taken(s, asked)
            key = link_key(asked)
            return taken, {k for k in every if k == key or k.startswith(key + "-")}
        finally:
            await database.close()

    taken, expected = asyncio.run(run())
    assert taken == expected
