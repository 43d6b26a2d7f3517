"""Can the brain write its storage now? `brain.storage_health` (a service of the Brain).

Two cheap probes: the vault root takes a new file (a hidden temp file, written and removed:
a read-only or full disk, a folder the server may not write, refuse it), and the database
takes writes (`Database.writable`: the SQLite file is still the one opened and a row can be
written and rolled back; PostgreSQL is not read-only). `/health` asks about both, the worker
about the vault alone (before a job that files notes), often: each answer is kept for `ttl`
seconds and one probe of each runs at a time. `brain doctor` asks once, afresh.
"""

from __future__ import annotations

import asyncio
import errno
import os
import tempfile
import time
from pathlib import Path

from bot.core import Core
from storage.vault.atomic import TEMP_SUFFIX

TTL = 2.0  # seconds a probe's answer is reused
# Hidden (the vault scan never reads it as a note), and named as our temp files are
# (storage/vault/atomic.py), so one a killed process left is cleaned up with them.
PROBE_PREFIX = ".brain-probe.tmp."


def vault_writable(root: Path) -> str | None:
    """None when a new file can be made in `root` (made if missing); else why not."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=root, prefix=PROBE_PREFIX, suffix=TEMP_SUFFIX)
        try:
            os.write(fd, b"ok")
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as exc:
        what = os.strerror(exc.errno) if exc.errno else str(exc)
        hint = {errno.ENOSPC: "the disk is full", errno.EROFS: "it is mounted read-only",
                errno.EACCES: "the server's user may not write there"}.get(exc.errno or 0, "")
        return f"the vault {root} cannot be written: {what.lower()}" + (f" ({hint})"
                                                                         if hint else "")
    return None


class StorageHealth:
    """The vault root's and the database's writability, each probed at most every `ttl` s
    (apart: the worker asks about the vault alone, and must not wait on the database)."""

    def __init__(self, core: Core, ttl: float = TTL) -> None:
        self.core = core
        self.ttl = ttl
        self._found: dict[str, tuple[float, str | None]] = {}  # what -> (when, problem)
        self._locks: dict[str, asyncio.Lock] = {}

    @property
    def vault_root(self) -> Path:
        return self.core.vault_override or self.core.settings.vault_root

    async def _probe(self, what: str, fresh: bool) -> str | None:
        lock = self._locks.setdefault(what, asyncio.Lock())
        async with lock:  # one probe at a time; the others take its answer
            when, problem = self._found.get(what, (-float("inf"), None))
            if fresh or time.monotonic() - when >= self.ttl:
                if what == "vault":
                    problem = await asyncio.to_thread(vault_writable, self.vault_root)
                else:
                    try:
                        problem = await self.core.db.writable()
                    except Exception as exc:  # no answer at all is an answer too
                        problem = f"the database does not answer: {type(exc).__name__}"
                self._found[what] = (time.monotonic(), problem)
            return problem

    async def vault(self, *, fresh: bool = False) -> str | None:
        """Why the vault root cannot be written now, or None."""
        return await self._probe("vault", fresh)

    async def problems(self, *, fresh: bool = False) -> dict[str, str]:
        """{"vault": why, "database": why} for what cannot be written; {} when all can."""
        found = {what: await self._probe(what, fresh) for what in ("vault", "database")}
        return {what: why for what, why in found.items() if why is not None}
