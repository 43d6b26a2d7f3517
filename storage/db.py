"""The database: one async engine, SQLite pragmas, sessions, migrations applied on open.

Errors never carry the statement's parameters (`hide_parameters`): they hold what people
wrote, and an error is logged. Only with content logging on (`log_content`, from
BRAIN_LOG_CONTENT) do they show, for debugging.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from storage.processes import application_name
from storage.urls import async_url

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

# A transaction as callers outside storage/ hand it on (a job's end, a turn's opening).
Session = AsyncSession

# Set on every new SQLite connection. WAL lets readers run beside one writer; busy_timeout makes
# a second writer (another process, a concurrent turn) wait instead of failing at once.
SQLITE_PRAGMAS: tuple[str, ...] = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA busy_timeout=5000",
    "PRAGMA foreign_keys=ON",
    "PRAGMA synchronous=NORMAL",
)
# Recording incoming work waits less: Slack wants its ack within 3 s, and a refusal (500) made
# in time is delivered again, where a late ack is a timeout Slack retries anyway.
INTAKE_BUSY_MS = 2000


def _intake_busy(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute(f"PRAGMA busy_timeout={INTAKE_BUSY_MS}")
    cursor.close()


def _sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL, or None (in-memory, URI form, other databases)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _identity(file: Path) -> tuple[int, int] | None:
    """(device, inode) of the file, None when it is not there."""
    try:
        found = os.stat(file)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


def _set_sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        for pragma in SQLITE_PRAGMAS:
            cursor.execute(pragma)
    finally:
        cursor.close()


# `revision = "0003"` / `down_revision = "0002"` at the top level of a migration file.
_REVISION_RE = re.compile(r"""^(down_revision|revision)\s*(?::[^=]*)?=\s*(.+?)\s*$""", re.M)
_QUOTED_RE = re.compile(r"""^(["'])([^"']+)\1$""")


def head_revision(versions: Path = MIGRATIONS_DIR / "versions") -> str | None:
    """The one head revision, read from the migration files without importing Alembic (which
    costs ~0.1 s per process); None when unsure (a merge, several heads, an odd file), so
    the caller lets Alembic decide."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in versions.glob("[!_]*.py"):  # not __init__.py
        text = path.read_text(encoding="utf-8")
        found: dict[str, str] = {m[1]: m[2] for m in _REVISION_RE.finditer(text)}
        rev = _QUOTED_RE.match(found.get("revision", ""))
        if rev is None:
            return None
        revisions.add(rev[2])
        down = found.get("down_revision", "None")
        if down != "None":
            parent = _QUOTED_RE.match(down)
            if parent is None:  # a tuple: a merge revision
                return None
            parents.add(parent[2])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 and parents <= revisions else None


async def _current_revisions(engine: AsyncEngine) -> set[str] | None:
    """The revisions the database says it is at; None before the first migration."""
    try:
        async with engine.connect() as conn:
            result = await conn.exec_driver_sql("SELECT version_num FROM alembic_version")
            return {row[0] for row in result}
    except DBAPIError:  # no alembic_version table yet
        return None


def _upgrade(connection: Connection) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    # configparser would read "%" in the path as interpolation.
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    cfg.attributes["connection"] = connection
    command.upgrade(cfg, "head")


# Connections of a server database kept for recording incoming work (and as many again at a
# peak); the journal's group commit makes a burst a few statements (bot/jobs/queue.py).
INTAKE_POOL = 2


def _connect_options(url: str) -> dict[str, Any]:
    """Every PostgreSQL connection names its process (`application_name`): a worker taking over
    a stalled process's job ends that process's open transactions by it
    (storage/repositories/fencing.py)."""
    if not url.startswith("postgresql+asyncpg"):
        return {}
    return {"connect_args": {"server_settings": {"application_name": application_name()}}}


@dataclass
class _Shared:
    """A transaction the sessions of one task join (`Database.sharing`)."""

    db: Database
    conn: AsyncConnection
    task: asyncio.Task[Any] | None
    locks: set[str] = field(default_factory=set)  # advisory locks it holds (`holds_lock`)


_SHARED: contextvars.ContextVar[_Shared | None] = contextvars.ContextVar("brain_shared",
                                                                         default=None)


def _shared_here(db: Database | None = None) -> _Shared | None:
    """The transaction this very task shares (of `db`, when given); never one of the task
    that started this one (a task copies its creator's context)."""
    shared = _SHARED.get()
    if shared is None or (db is not None and shared.db is not db):
        return None
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return None
    return shared if task is shared.task else None


def holds_lock(name: str) -> bool:
    """Does this task's shared transaction hold the advisory lock `name` already?"""
    shared = _shared_here()
    return shared is not None and name in shared.locks


def took_lock(session: AsyncSession, name: str) -> None:
    """`session` took the advisory lock `name` until its transaction ends: when that is
    this task's shared transaction, it holds the lock until it commits (`holds_lock`)."""
    shared = _shared_here()
    if shared is not None and session.bind is shared.conn:
        shared.locks.add(name)


class Database:
    """The shared database. `async with db.session() as s:`; the caller commits."""

    def __init__(self, url: str, engine: AsyncEngine, *, log_content: bool = False) -> None:
        self.url = url
        self.engine = engine
        self._options: dict[str, Any] = {"hide_parameters": not log_content,
                                         **_connect_options(url)}
        file = _sqlite_file(url)
        # Which file was opened: one deleted or replaced while serving is found (`writable`).
        self._identity = _identity(file) if file is not None else None
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._intake_engine: AsyncEngine | None = None
        self._intake_sessions: async_sessionmaker[AsyncSession] | None = None
        self._lock_engine: AsyncEngine | None = None

    @classmethod
    async def open(cls, url: str, *, log_content: bool = False) -> Database:
        """The database at `url`, migrated; its errors show their statements' parameters only
        with `log_content`."""
        url = async_url(url)
        file = _sqlite_file(url)
        if file is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
        kwargs: dict[str, Any] = {"hide_parameters": not log_content, **_connect_options(url)}
        if file is not None:
            # One connection per process: SQLite lets one writer at a time, and writers of one
            # process that wait on each other inside SQLite sleep in its busy handler (1, 2, 5,
            # 10 ... 100 ms), which under a burst costs far more than queueing for the one
            # connection here. Other processes still wait through busy_timeout.
            kwargs.update(pool_size=1, max_overflow=0, pool_timeout=60)
        engine = create_async_engine(url, **kwargs)
        if engine.dialect.name == "sqlite":
            event.listen(engine.sync_engine, "connect", _set_sqlite_pragmas)
        try:
            await cls._migrate(engine)
        except BaseException:
            await engine.dispose()
            raise
        return cls(url, engine, log_content=log_content)

    @staticmethod
    async def _migrate(engine: AsyncEngine) -> None:
        head = head_revision()
        if head is not None and await _current_revisions(engine) == {head}:
            return  # the usual case: one cheap read, no Alembic
        async with engine.begin() as conn:
            # Take the write lock before reading the schema version, so two processes opening
            # one database at once run the upgrade one after the other: the second finds head.
            if engine.dialect.name == "sqlite":
                # Another process may be migrating (seconds on a busy machine): wait for it.
                await conn.exec_driver_sql("PRAGMA busy_timeout=120000")
                await conn.exec_driver_sql("BEGIN IMMEDIATE")
            elif engine.dialect.name == "postgresql":
                await conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727274)")
            await conn.run_sync(_upgrade)
            if engine.dialect.name == "sqlite":  # the connection goes back to the pool
                await conn.exec_driver_sql(SQLITE_PRAGMAS[1])

    def session(self) -> AsyncSession:
        """A session of its own transaction; within `sharing`, one in the shared transaction
        (its commit ends a savepoint, its rollback undoes its own part)."""
        shared = _shared_here(self)
        if shared is not None:
            return AsyncSession(bind=shared.conn, expire_on_commit=False,
                                join_transaction_mode="create_savepoint")
        return self._sessions()

    @contextlib.contextmanager
    def sharing(self, conn: AsyncConnection) -> Iterator[None]:
        """Within the block, this task's sessions work in `conn`'s transaction, which the
        caller began and ends (the database store's write: storage/vault/locks.py)."""
        token = _SHARED.set(_Shared(self, conn, asyncio.current_task()))
        try:
            yield
        finally:
            _SHARED.reset(token)

    def shared(self) -> bool:
        """Do this task's sessions work in a shared transaction now (`sharing`)?"""
        return _shared_here(self) is not None

    @staticmethod
    @contextlib.contextmanager
    def alone() -> Iterator[None]:
        """Within the block, this task's sessions are their own transactions again, even
        within `sharing` (work that must commit whatever becomes of the shared one)."""
        token = _SHARED.set(None)
        try:
            yield
        finally:
            _SHARED.reset(token)

    def intake_session(self) -> AsyncSession:
        """A session for recording incoming work, which must not queue behind the work itself:
        its own connections (on SQLite one: SQLite's own lock orders it with the other
        writes, each of which is short; on a server a few, apart from the pool 100 turns in
        flight are using). An in-memory SQLite database has one connection: the shared one."""
        sqlite = self.engine.dialect.name == "sqlite"
        if sqlite and _sqlite_file(self.url) is None:
            return self._sessions()
        if self._intake_sessions is None:
            size = (1, 0) if sqlite else (INTAKE_POOL, INTAKE_POOL)
            self._intake_engine = create_async_engine(self.url, pool_size=size[0],
                                                      max_overflow=size[1], pool_timeout=60,
                                                      **self._options)
            if sqlite:
                event.listen(self._intake_engine.sync_engine, "connect", _set_sqlite_pragmas)
                event.listen(self._intake_engine.sync_engine, "connect", _intake_busy)
            self._intake_sessions = async_sessionmaker(self._intake_engine,
                                                       expire_on_commit=False)
        return self._intake_sessions()

    def lock_engine(self) -> AsyncEngine:
        """Connections for held locks (storage.vault.locks), apart from the pool sessions use: a
        lock's holder needs a session's connection for its work, so lock waiters must not sit
        on those. Made on first use (only PostgreSQL's cross-machine vault lock needs it)."""
        if self._lock_engine is None:
            self._lock_engine = create_async_engine(self.url, pool_size=1, max_overflow=50,
                                                    **self._options)
        return self._lock_engine

    async def writable(self) -> str | None:
        """None when the database takes writes; else why not, in words (`/health`, `brain
        doctor`). SQLite: its file is still the one opened (deleted or replaced while serving,
        the connections write to a file nobody will read again), and a row can be written
        (and rolled back: a read-only file refuses it; a lock another writer holds is no
        fault).
        PostgreSQL: the session is not read-only (a standby, a read-only default)."""
        file = _sqlite_file(self.url)
        if file is not None:
            found = _identity(file)
            if found is None:
                return (f"the database file {file} is gone (deleted while serving?): what is "
                        "written now is lost when the server stops; restore it and restart")
            if self._identity is not None and found != self._identity:
                return (f"the database file {file} was replaced while serving: restart the "
                        "server to use the new one")
        try:
            async with self.engine.connect() as conn:
                if self.engine.dialect.name == "sqlite":
                    await conn.exec_driver_sql("PRAGMA busy_timeout=200")
                    try:  # a row written and rolled back: only a write finds a read-only file
                        await conn.exec_driver_sql("BEGIN IMMEDIATE")
                        await conn.exec_driver_sql(
                            "UPDATE alembic_version SET version_num = version_num")
                    finally:
                        await conn.rollback()
                        await conn.exec_driver_sql(SQLITE_PRAGMAS[1])
                elif self.engine.dialect.name == "postgresql":
                    mode = await conn.exec_driver_sql("SHOW transaction_read_only")
                    if str(mode.scalar()).lower() == "on":
                        return "the database is read-only (a standby, or read-only by default)"
        except DBAPIError as exc:
            text = str(exc.orig if exc.orig is not None else exc).splitlines()[0][:200]
            if "locked" in text or "busy" in text:
                return None  # another writer holds the lock: it takes writes
            return f"the database refuses writes: {text}"
        return None

    async def close(self) -> None:
        for extra in (self._intake_engine, self._lock_engine):
            if extra is not None:
                await extra.dispose()
        await self.engine.dispose()
