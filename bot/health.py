"""Can the brain write its storage now? `brain.storage_health` (a service of the Brain).

Two cheap probes: the vault root takes a new file (a hidden temp file, written and removed:
a read-only or full disk, a folder the server may not write, refuse it), and the database
takes writes (`Database.writable`: the SQLite file is still the one opened, its write lock
can be taken; PostgreSQL is not read-only). `/health` and the worker ask often, so the answer
is kept for `ttl` seconds and one probe runs at a time; `brain doctor` asks once, afresh.
"""

from __future__ import annotations

import asyncio
import errno
import os
import tempfile
import time
from pathlib import Path

from bot.core import Core

TTL = 2.0  # seconds a probe's answer is reused
PROBE_PREFIX = ".brain-probe-"  # hidden: the vault scan never reads it as a note


def vault_writable(root: Path) -> str | None:
    """None when a new file can be made in `root` (made if missing); else why not."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=root, prefix=PROBE_PREFIX, suffix=".tmp")
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
    """The vault root's and the database's writability, probed at most every `ttl` s."""

    def __init__(self, core: Core, ttl: float = TTL) -> None:
        self.core = core
        self.ttl = ttl
        self._checked = -float("inf")
        self._problems: dict[str, str] = {}
        self._probing: asyncio.Lock | None = None

    @property
    def vault_root(self) -> Path:
        return self.core.vault_override or self.core.settings.vault_root

    async def problems(self, *, fresh: bool = False) -> dict[str, str]:
        """{"vault": why, "database": why} for what cannot be written; {} when all can."""
        if self._probing is None:
            self._probing = asyncio.Lock()
        async with self._probing:
            if fresh or time.monotonic() - self._checked >= self.ttl:
                found: dict[str, str] = {}
                vault = await asyncio.to_thread(vault_writable, self.vault_root)
                if vault is not None:
                    found["vault"] = vault
                try:
                    database = await self.core.db.writable()
                except Exception as exc:  # no answer at all is an answer too
                    database = f"the database does not answer: {type(exc).__name__}"
                if database is not None:
                    found["database"] = database
                self._problems, self._checked = found, time.monotonic()
            return dict(self._problems)

    async def down(self) -> str | None:
        """Why storage cannot take a write now (cached), or None."""
        found = await self.problems()
        return "; ".join(found.values()) if found else None
