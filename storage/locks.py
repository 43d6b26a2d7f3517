"""A lock per vault shared by every process on the machine (the CLI and the bot), so a
read-modify-write of a note (update, move, trash) never interleaves with another one.

`fcntl.flock` on a lock file named after the vault's real path, in a folder of the machine's
temp directory (never in the vault: the user's folder gets no files of ours). The kernel drops
the lock when its holder dies, so a `kill -9` never leaves a vault locked. Each acquisition opens its own file description, so two
coroutines of one process exclude each other too. Taken without blocking the event loop: a
busy lock is retried after a short sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from storage.errors import StorageError

WAIT_SECONDS = 10.0
_STEP = 0.002


class LockTimeout(StorageError):
    code = "busy"


def lock_path(root: Path) -> Path:
    """The lock file of the vault at `root` (one per real path and machine user)."""
    folder = Path(tempfile.gettempdir()) / f"second-brain-locks-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    digest = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:32]
    return folder / f"{digest}.lock"


@contextlib.asynccontextmanager
async def vault_lock(root: Path, timeout: float = WAIT_SECONDS) -> AsyncIterator[None]:
    fd = os.open(lock_path(root), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        step = _STEP
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if loop.time() >= deadline:
                    raise LockTimeout(f"the vault is busy (another write held it for "
                                      f"{timeout:.0f} s); try again") from None
                await asyncio.sleep(step)
                step = min(step * 2, 0.05)
        yield
    finally:
        os.close(fd)  # closing the description releases the lock
