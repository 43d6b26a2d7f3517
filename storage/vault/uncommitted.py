"""What a database store's write changed in its machine's mirror and never committed (the
write raised, its commit failed, or its process died first), put back as the database holds
it (storage/vault/mirror.py calls `put_back` under this machine's lock, first thing in a
pull): nothing a write did not commit stays in a mirror, so a capture run again after a crash
finds nothing half made and files its note once.

A write marks each file in the mirror's state (`unpushed`) before its push sends it, and the
mirror `writing` from its start to its commit. A process that dies while `writing` may have
written a file it had not marked yet: then every file of the mirror is compared with the
database (a crash's cost, once).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from typing import Any, Protocol

from dulwich.objects import ObjectID

from storage.db import Database
from storage.history import History
from storage.history.history import LOG_NAME, REMOTE_NAME
from storage.history.repo import BRANCH
from storage.vault import vault_rows as rows
from storage.vault.atomic import write_atomic
from storage.vault.files import Vault


class Mirror(Protocol):
    """What of storage/vault/mirror.py's Mirror this needs."""

    db: Database
    key: str
    vault: Vault
    history: History

    def save(self, state: dict[str, Any]) -> None: ...
    def all_files(self) -> list[str]: ...


async def put_back(mirror: Mirror, state: dict[str, Any]) -> list[str]:
    """The files an uncommitted write changed, and the history's head, as the database holds
    them; `state` (the mirror's) cleared of the marks and saved. Returns those files."""
    rels = set(state.get("unpushed", []))
    if state.get("writing"):
        rels |= await _differing(mirror)
    held = await rows.files_at(mirror.db, mirror.key, sorted(rels))
    await asyncio.to_thread(_restore, mirror, sorted(rels), held, state)
    state.update(unpushed=[], writing=False)
    mirror.save(state)
    return sorted(rels)


async def _differing(mirror: Mirror) -> set[str]:
    """The mirror's files whose bytes are not the database's, and the database's files the
    mirror lacks."""
    kept = await rows.hashes(mirror.db, mirror.key)

    def local() -> dict[str, str]:
        return {rel: hashlib.sha256(mirror.vault.resolve(rel).read_bytes()).hexdigest()
                for rel in mirror.all_files()}

    here = await asyncio.to_thread(local)
    return {rel for rel in {*kept, *here} if kept.get(rel) != here.get(rel)}


def _restore(mirror: Mirror, rels: list[str], held: dict[str, tuple[bytes, int]],
             state: dict[str, Any]) -> None:
    for rel in rels:
        path = mirror.vault.resolve(rel)
        if rel not in held:
            path.unlink(missing_ok=True)
            continue
        content, mtime_ns = held[rel]
        if not path.is_file() or path.read_bytes() != content:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, content)
        os.utime(path, ns=(mtime_ns, mtime_ns))
    history = mirror.history
    # Its writer stopped (it died, or its write ended): a lock file it left in the middle of
    # a commit is stale at any age (this runs under the machine's part of the vault lock).
    history.repo.clear_stale_locks(older_than=0)
    refs = history.repo.repo.refs
    head = state.get("head")
    if head:
        refs[BRANCH] = ObjectID(str(head).encode())
    elif BRANCH in refs:  # the database has no history of this vault yet
        refs.remove_if_equals(BRANCH, None)
    (history.path / LOG_NAME).unlink(missing_ok=True)  # a cache of the commits
    if state.get("remote") is not None:
        write_atomic(history.path / REMOTE_NAME, str(state["remote"]).encode())
