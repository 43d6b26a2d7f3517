"""Locks that keep writers of one vault apart: in one process, on one machine, and on several
machines sharing the vault (a network file system) and one PostgreSQL.

`vault_lock` guards a read-modify-write of a note (update, move, trash). First `fcntl.flock` on
a lock file named after the vault's real path, in a folder of the machine's temp directory
(never in the vault: the user's folder gets no files of ours): every process on the machine,
the CLI and the bot, and every coroutine (each acquisition opens its own file description).
The kernel drops it when its holder dies, so a `kill -9` never leaves a vault locked. It is
fair between processes: a waiter blocks in `flock` in a thread of its own (the kernel wakes it
at release, where polling lost to the holder's own next writer), and a turnstile (a second
file, the gate) lets only one waiter at a time queue for the lock: a process that releases
and wants it again finds the gate taken by the waiter and queues behind it. Then, on
PostgreSQL, an advisory lock per vault, which the other machines see too: held in a transaction
on a connection of its own (the holder's work needs the pool's connections; a waiter must never
sit on one of those), released when that transaction ends, or by the server when the holder's
connection dies. Only one process per machine waits for it (the flock comes first).

`index_lock` makes one transaction's index writes of a vault wait for another process's (a
rescan and another replica's re-index of the same new file would both insert it): an advisory
lock until commit on PostgreSQL; SQLite's single writer needs none.

Replicas name a vault by its path: every machine must mount the shared vault root at the same
path (the search index keys rows by it as well).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fcntl
import hashlib
import os
import tempfile
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import took_lock
from storage.errors import Fenced, StorageError

if TYPE_CHECKING:
    from storage.db import Database

WAIT_SECONDS = 10.0
# A lock whose holder's machine vanished without closing its connection is freed after this.
ORPHAN_SECONDS = 60
LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE when lock_timeout runs out


class LockTimeout(StorageError):
    code = "busy"


def _busy(timeout: float) -> LockTimeout:
    return LockTimeout(f"the vault is busy (another write held it for {timeout:.0f} s); "
                       "try again")


def _folder() -> Path:
    folder = Path(tempfile.gettempdir()) / f"second-brain-locks-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def lock_path(root: Path) -> Path:
    """The lock file of the vault at `root` (one per real path and machine user)."""
    digest = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:32]
    return _folder() / f"{digest}.lock"


def _gate_path(root: Path) -> Path:
    return lock_path(root).with_suffix(".gate")


def lock_key(name: str) -> int:
    """A PostgreSQL advisory lock key (one signed 64-bit number) for `name`."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


def _try(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


class _Wait:
    """One waiter's blocking `flock`s, in a thread of its own (not the default executor: a
    wait may last seconds, and other work needs those threads). The thread owns the lock's
    descriptor until it hands it over (`won`); a waiter that gave up meanwhile is `abandoned`,
    and the thread closes the descriptor the moment its `flock` returns: no lock leaks."""

    def __init__(self, loop: asyncio.AbstractEventLoop, gate: int, fd: int,
                 gated: bool) -> None:
        self.loop, self.gate, self.fd, self.gated = loop, gate, fd, gated
        self.future: asyncio.Future[None] = loop.create_future()
        self.mutex = threading.Lock()
        self.won = self.abandoned = False

    def run(self) -> None:
        error: BaseException | None = None
        try:
            if not self.gated:
                fcntl.flock(self.gate, fcntl.LOCK_EX)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException as exc:  # delivered to the waiter, never lost in this thread
            error = exc
        finally:
            os.close(self.gate)  # through the gate: the next waiter may queue for the lock
        with self.mutex:
            self.won = error is None and not self.abandoned
            abandoned = self.abandoned
        if not self.won:
            os.close(self.fd)
            if abandoned:
                return
        try:
            self.loop.call_soon_threadsafe(self._deliver, error)
        except RuntimeError:  # the loop is closed: nobody will take the lock
            self.give_up()

    def _deliver(self, error: BaseException | None) -> None:
        if self.future.done():  # the waiter gave up; give_up() released what it won
            return
        if error is None:
            self.future.set_result(None)
        else:
            self.future.set_exception(error)

    def give_up(self) -> None:
        with self.mutex:
            self.abandoned = True
            won, self.won = self.won, False
        if won:
            os.close(self.fd)


async def _acquire(root: Path, timeout: float) -> int:
    """A descriptor holding the vault's machine lock. The gate is taken first and let go once
    the lock is held, so at most one waiter queues on the lock itself and it is the one the
    kernel hands the lock to at release. LockTimeout after `timeout` seconds."""
    gate = _open(_gate_path(root))
    try:
        fd = _open(lock_path(root))
    except BaseException:
        os.close(gate)
        raise
    try:
        gated = _try(gate)
        if gated and _try(fd):  # uncontended: no thread
            os.close(gate)
            return fd
    except BaseException:
        os.close(gate)
        os.close(fd)
        raise
    wait = _Wait(asyncio.get_running_loop(), gate, fd, gated)
    try:
        threading.Thread(target=wait.run, name="vault-lock-wait", daemon=True).start()
    except BaseException:  # no thread: let go of the gate, or every later writer queues on it
        os.close(gate)
        os.close(fd)
        raise
    try:
        async with asyncio.timeout(timeout):
            await wait.future
    except TimeoutError:
        wait.give_up()
        raise _busy(timeout) from None
    except BaseException:  # cancelled: the lock, if won meanwhile, is let go at once
        wait.give_up()
        raise
    return fd


@contextlib.asynccontextmanager
async def _machine_lock(root: Path, timeout: float) -> AsyncIterator[None]:
    fd = await _acquire(root, timeout)
    try:
        yield
    finally:
        os.close(fd)  # closing the description releases the lock


@contextlib.asynccontextmanager
async def _database_lock(db: Database, name: str, timeout: float,
                         share: bool = False) -> AsyncIterator[None]:
    key = lock_key(name)
    async with db.lock_engine().connect() as conn:
        # Both settings end with the transaction; they bound the wait and an orphaned lock.
        await conn.execute(select(func.set_config("lock_timeout",
                                                  f"{max(int(timeout * 1000), 1)}ms", True)))
        await conn.execute(select(func.set_config("idle_in_transaction_session_timeout",
                                                  f"{ORPHAN_SECONDS}s", True)))
        try:
            await conn.execute(select(func.pg_advisory_xact_lock(key)))
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) == LOCK_NOT_AVAILABLE:
                raise _busy(timeout) from None
            raise
        if not share:
            try:
                yield
            finally:
                await conn.rollback()  # ends the transaction: the lock is released
            return
        try:
            with db.sharing(conn):  # the holder's sessions work in the lock's transaction
                yield
                await _fence(db)
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.rollback()
            raise
        await conn.commit()  # the write's effects and the lock's end, at once


async def _fence(db: Database) -> None:
    """Fenced: a write made for a job another worker has taken over commits nothing."""
    from storage.repositories.leases import lease_holds  # (the ORM: database store only)

    async with db.session() as s:
        if not await lease_holds(s):
            raise Fenced("this work's job was taken over by another worker (its lease ran "
                         "out): nothing of it was written")


@contextlib.asynccontextmanager
async def vault_lock(root: Path, timeout: float = WAIT_SECONDS,
                     db: Database | None = None, name: str | None = None,
                     share: bool = False) -> AsyncIterator[None]:
    """Hold the vault's write lock: this machine's, and with `db` on PostgreSQL every
    machine's (named by the vault's path, or by `name`: the database store's vaults, whose
    mirrors lie in other folders on each machine). LockTimeout when it stays busy for
    `timeout` seconds. With `share` (the database store) the holder's sessions of `db` work
    in the lock's own transaction, committed as the block ends and rolled back when it
    raises: all of a write's rows or none."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with _machine_lock(root, timeout):
        if db is None or db.engine.dialect.name != "postgresql":
            yield
            return
        left = max(deadline - loop.time(), 0.001)
        async with _database_lock(db, name or f"vault:{Path(root).resolve()}", left,
                                  share):
            yield


@contextlib.contextmanager
def if_free(name: str) -> Iterator[bool]:
    """This machine's lock called `name` if nobody holds it now (never waits): yields
    whether it is held, until the block ends or the holder dies. For work that one process
    does for all (the vectors of a vault's new notes), where the others look again later."""
    fd = _open(_folder() / f"{hashlib.sha256(name.encode()).hexdigest()[:32]}.once")
    try:
        yield _try(fd)
    finally:
        os.close(fd)


async def index_lock(session: AsyncSession, key: str) -> None:
    """Until this session's transaction ends, no other process writes the index of vault
    `key` (PostgreSQL; a no-op on SQLite, whose one writer already excludes the others)."""
    if session.get_bind().dialect.name == "postgresql":
        name = f"index:{key}"
        await session.execute(select(func.pg_advisory_xact_lock(lock_key(name))))
        took_lock(session, name)


# The vault whose write lock this task holds: a rescan inside a write records outside edits
# without taking the lock again (flock is not re-entrant across descriptors).
_HOLDING: contextvars.ContextVar[Path | None] = contextvars.ContextVar("brain_holding",
                                                                      default=None)
_QUEUES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Path, asyncio.Lock]] = (
    weakref.WeakKeyDictionary())


@contextlib.asynccontextmanager
async def machine_lock(root: Path, timeout: float = WAIT_SECONDS) -> AsyncIterator[None]:
    """This machine's part of the vault's write lock alone (a mirror brought up to date
    from the database: storage/vault/mirror.py); within a task that holds the write lock,
    nothing more is taken."""
    if _HOLDING.get() == root:
        yield
        return
    async with _machine_lock(root, timeout):
        yield


@contextlib.asynccontextmanager
async def write_lock(root: Path, db: Database | None = None,
                     name: str | None = None, share: bool = False) -> AsyncIterator[None]:
    """`vault_lock` for a Store's writes: re-entrant within a task, and a process's own
    writers queue in turn first, so only one of them waits for the lock itself."""
    if _HOLDING.get() == root:
        yield
        return
    queue = _QUEUES.setdefault(asyncio.get_running_loop(), {}).setdefault(root, asyncio.Lock())
    async with queue, vault_lock(root, db=db, name=name, share=share):
        token = _HOLDING.set(root)
        try:
            yield
        finally:
            _HOLDING.reset(token)
