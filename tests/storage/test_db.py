"""Database.open: folder, pragmas, migrations (matching the models), concurrent opens."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import create_async_engine

from storage.db import (
    INTAKE_BUSY_MS,
    MIGRATIONS_DIR,
    Database,
    head_revision,
)
from storage.models import CORE_TABLES, Base
from storage.urls import async_url, default_url
from tests.databases import fresh_url

ROOT = Path(__file__).resolve().parents[2]


def url_for(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


def blank(tmp_path: Path, name: str = "brain") -> str:
    """A database with no tables yet (the test's SQLite file or PostgreSQL database)."""
    return fresh_url(tmp_path, name, migrated=False)


def migration_head() -> str:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    assert head is not None
    return head


@pytest.mark.sqlite_only
async def test_open_creates_the_folder_of_a_sqlite_file(tmp_path: Path) -> None:
    db_file = tmp_path / "deep" / "er" / "brain.db"
    db = await Database.open(url_for(db_file))
    await db.close()
    assert db_file.is_file()


async def test_open_creates_every_core_table_at_head(tmp_path: Path) -> None:
    db = await Database.open(blank(tmp_path))
    try:
        async with db.engine.connect() as conn:
            names = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))
                       ).scalar_one()
        assert set(CORE_TABLES) <= names
        assert version == migration_head()
    finally:
        await db.close()


def _schema(conn: Connection) -> dict[str, object]:
    insp = inspect(conn)
    out: dict[str, object] = {}
    for table in CORE_TABLES:
        out[table] = {
            "columns": {c["name"]: c["nullable"] for c in insp.get_columns(table)},
            "pk": tuple(insp.get_pk_constraint(table)["constrained_columns"]),
            "indexes": {(i["name"], tuple(i["column_names"]), bool(i["unique"]))
                        for i in insp.get_indexes(table)},
            "unique": {tuple(u["column_names"]) for u in insp.get_unique_constraints(table)},
            "fks": {(tuple(f["constrained_columns"]), f["referred_table"],
                     (f.get("options") or {}).get("ondelete"))
                    for f in insp.get_foreign_keys(table)},
        }
    return out


async def test_migration_matches_the_models(tmp_path: Path) -> None:
    migrated = await Database.open(blank(tmp_path, "migrated"))
    from_models = await Database.open(blank(tmp_path, "models"))
    try:
        # A second database built straight from the ORM metadata: both must look the same.
        async with from_models.engine.begin() as conn:
            await conn.run_sync(lambda c: Base.metadata.drop_all(c, tables=[
                Base.metadata.tables[t] for t in CORE_TABLES]))
            await conn.run_sync(lambda c: Base.metadata.create_all(c, tables=[
                Base.metadata.tables[t] for t in CORE_TABLES]))
        async with migrated.engine.connect() as a, from_models.engine.connect() as b:
            assert await a.run_sync(_schema) == await b.run_sync(_schema)
    finally:
        await migrated.close()
        await from_models.close()


@pytest.mark.sqlite_only
async def test_pragmas_hold_on_every_connection(tmp_path: Path) -> None:
    db = await Database.open(url_for(tmp_path / "brain.db"))
    try:
        # The work's connection and the intake's own one (open at once): both have them.
        async with db.session() as s1, db.intake_session() as s2:
            # The intake waits less for the lock: Slack wants its answer within 3 s.
            for s, busy in ((s1, 5000), (s2, INTAKE_BUSY_MS)):
                assert (await s.execute(text("PRAGMA journal_mode"))).scalar_one() == "wal"
                assert (await s.execute(text("PRAGMA foreign_keys"))).scalar_one() == 1
                assert (await s.execute(text("PRAGMA busy_timeout"))).scalar_one() == busy
                assert (await s.execute(text("PRAGMA synchronous"))).scalar_one() == 1  # NORMAL
    finally:
        await db.close()


async def test_foreign_keys_are_enforced(tmp_path: Path) -> None:
    db = await Database.open(blank(tmp_path))
    try:
        async with db.session() as s:
            with pytest.raises(IntegrityError):
                await s.execute(text(
                    "INSERT INTO turns (conversation_id, user_text, status, input_tokens, "
                    "output_tokens, llm_calls, created_at) "
                    "VALUES (999, 'hi', 'running', 0, 0, 0, '2024-01-01 00:00:00')"))
    finally:
        await db.close()


async def test_reopen_keeps_data_and_does_not_migrate_again(tmp_path: Path) -> None:
    url = blank(tmp_path)
    db = await Database.open(url)
    async with db.session() as s:
        await s.execute(text("INSERT INTO slack_home VALUES (1, 'T1', '2024-01-01 00:00:00')"))
        await s.commit()
    await db.close()
    db = await Database.open(url)
    try:
        async with db.session() as s:
            count = (await s.execute(text("SELECT count(*) FROM slack_home"))).scalar_one()
        assert count == 1
    finally:
        await db.close()


async def test_concurrent_opens_in_one_process(tmp_path: Path) -> None:
    url = blank(tmp_path)
    dbs = await asyncio.gather(*(Database.open(url) for _ in range(4)))
    try:
        async with dbs[-1].engine.connect() as conn:
            versions = (await conn.execute(text("SELECT version_num FROM alembic_version"))
                        ).scalars().all()
        assert versions == [migration_head()]
    finally:
        for db in dbs:
            await db.close()


def test_two_processes_open_a_new_database_at_once(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    url = blank(tmp_path / "shared")
    script = (
        "import asyncio, sys\n"
        "from storage.db import Database\n"
        "async def main():\n"
        "    db = await Database.open(sys.argv[1])\n"
        "    await db.close()\n"
        "asyncio.run(main())\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, url], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=30)
        assert p.returncode == 0, err


@pytest.mark.sqlite_only
async def test_in_memory_database_works() -> None:
    db = await Database.open("sqlite+aiosqlite:///:memory:")
    try:
        async with db.session() as s:
            await s.execute(text("INSERT INTO slack_home VALUES (1, 'T1', '2024-01-01')"))
            count = (await s.execute(text("SELECT count(*) FROM slack_home"))).scalar_one()
        assert count == 1
    finally:
        await db.close()


def test_default_url_points_into_the_data_dir(tmp_path: Path) -> None:
    assert default_url(tmp_path) == f"sqlite+aiosqlite:///{tmp_path.resolve() / 'brain.db'}"


def test_a_url_without_driver_gets_the_async_one() -> None:
    assert async_url("postgres://u@h/db") == "postgresql+asyncpg://u@h/db"
    assert async_url("postgresql://u@h/db") == "postgresql+asyncpg://u@h/db"
    assert async_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert async_url("sqlite:///x.db") == "sqlite+aiosqlite:///x.db"


@pytest.mark.sqlite_only
async def test_a_plain_sqlite_url_opens_with_the_pragmas(tmp_path: Path) -> None:
    db = await Database.open(f"sqlite:///{tmp_path / 'plain.db'}")
    try:
        assert db.url == f"sqlite+aiosqlite:///{tmp_path / 'plain.db'}"
        async with db.session() as s:
            assert (await s.execute(text("PRAGMA journal_mode"))).scalar_one() == "wal"
    finally:
        await db.close()


def test_alembic_command_line_path_migrates_from_the_url(tmp_path: Path) -> None:
    """env.py without a connection (the `alembic` command) builds its own engine."""
    url = blank(tmp_path, "cli")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(cfg, "head")

    async def tables() -> set[str]:
        db = await Database.open(url)  # finds head applied, changes nothing
        try:
            async with db.engine.connect() as conn:
                return await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
        finally:
            await db.close()

    assert set(CORE_TABLES) <= asyncio.run(tables())


# --- the cheap "already at head?" check on open --------------------------------------------------


def test_head_read_from_the_files_is_alembics_head() -> None:
    assert head_revision() == migration_head()


def _versions(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "versions"
    folder.mkdir(parents=True)
    for name, source in files.items():
        (folder / name).write_text(f'"""Revision ID: x\nRevises: y\n"""\n{source}\n'
                                   "branch_labels = None\n", encoding="utf-8")
    return folder


def test_head_is_none_when_the_files_do_not_say_one_head(tmp_path: Path) -> None:
    linear = {"1.py": 'revision = "a"\ndown_revision = None',
              "2.py": "revision: str = 'b'\ndown_revision: str | None = 'a'"}
    assert head_revision(_versions(tmp_path / "linear", linear)) == "b"
    odd = {
        "two heads": {**linear, "3.py": 'revision = "c"\ndown_revision = "a"'},
        "a merge": {**linear, "3.py": 'revision = "c"\ndown_revision = "a"',
                    "4.py": 'revision = "d"\ndown_revision = ("b", "c")'},
        "no revision": {**linear, "3.py": "# not a migration"},
        "unknown parent": {"1.py": 'revision = "a"\ndown_revision = "zz"'},
    }
    for case, files in odd.items():
        assert head_revision(_versions(tmp_path / case, files)) is None, case


async def test_a_database_behind_head_is_upgraded_on_open(tmp_path: Path) -> None:
    db_file = tmp_path / "old.db"
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url_for(db_file))
    await asyncio.to_thread(command.upgrade, cfg, "0001")  # env.py runs its own event loop
    db = await Database.open(url_for(db_file))
    try:
        async with db.engine.connect() as conn:
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))
                       ).scalar_one()
            names = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
        assert version == migration_head()
        assert set(CORE_TABLES) <= names
    finally:
        await db.close()

def test_the_index_migration_goes_down_and_up_again(tmp_path: Path) -> None:
    """0004 rebuilds the index tables (PostgreSQL); down to 0003 and up again leaves a working
    index on both databases."""
    url = blank(tmp_path)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(cfg, "head")
    command.downgrade(cfg, "0003")
    command.upgrade(cfg, "head")

    async def notes() -> int:
        db = await Database.open(url)
        try:
            async with db.session() as s:
                return int((await s.execute(text("SELECT count(*) FROM index_notes"))
                            ).scalar_one())
        finally:
            await db.close()

    assert asyncio.run(notes()) == 0


def test_receipts_and_capture_jobs_keep_their_rows_across_0014(tmp_path: Path) -> None:
    """0014 renames `captures` to `receipts` and a saved message's jobs to `capture`: the rows
    people already have are kept, on both databases, and survive the way down and up."""
    url = blank(tmp_path)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(cfg, "0013")

    async def run(*statements: str) -> list[Any]:
        engine = create_async_engine(url)  # as it is: Database.open would migrate it
        try:
            async with engine.begin() as conn:
                return [(await conn.execute(text(q))).all() if q.startswith("SELECT")
                        else await conn.execute(text(q)) for q in statements]
        finally:
            await engine.dispose()

    asyncio.run(run(
        "INSERT INTO captures (user_id, original_text, entry_id, path, category, status, "
        "created_at, updated_at) VALUES ('U1', 'Renew passport', 'e_1', 'admin/renew.md', "
        "'admin', 'filed', '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
        "INSERT INTO jobs (key, kind, user_id, lane, payload, state, attempts, created_at, "
        "updated_at) "
        "VALUES ('shortcut:T1', 'save', 'U1', 'save:U1', '{}', 'pending', 0, "
        "'2026-01-01 00:00:00', "
        "'2026-01-01 00:00:00')"))
    command.upgrade(cfg, "head")
    after = asyncio.run(run("SELECT entry_id, path FROM receipts", "SELECT kind, lane FROM jobs"))
    assert [tuple(r) for r in after[0]] == [("e_1", "admin/renew.md")]
    assert [tuple(r) for r in after[1]] == [("capture", "capture:U1")]
    command.downgrade(cfg, "0013")
    back = asyncio.run(run("SELECT entry_id FROM captures", "SELECT kind, lane FROM jobs"))
    assert [tuple(r) for r in back[0]] == [("e_1",)]
    assert [tuple(r) for r in back[1]] == [("save", "save:U1")]
    command.upgrade(cfg, "head")
