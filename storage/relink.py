"""Links that follow a note when it moves: the `[[links]]` to it in the same vault that would
no longer reach it are rewritten to its new place, as Obsidian does on a rename, inside the
move's own change (and its history commit). Found through the index's link rows, not a scan.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.files import write_atomic
from storage.index import SearchIndex
from storage.index.backlinks import backlinks, resolve_link
from storage.links import link_key, retarget
from storage.vault import Vault


async def same_stem(session: AsyncSession, vault_key: str, stem: str) -> dict[str, str]:
    rows = await session.execute(text(
        "SELECT path FROM index_notes WHERE vault = :v AND stem_key = :s"),
        {"v": vault_key, "s": link_key(stem)})
    return {link_key(path): path for (path,) in rows}


async def linking(db: Database, vault_key: str, rel: str) -> list[str]:
    """The notes whose links reach `rel` now (before it moves)."""
    async with db.session() as session:
        found = await backlinks(session, vault_key, rel)
    return sorted({b.path for b in found.backlinks})


def link_target(new_rel: str, same_stem: dict[str, str]) -> str:
    """The shortest link that names `new_rel` alone: its stem, else its path (no `.md`)."""
    stem = PurePosixPath(new_rel).stem
    others = [p for p in same_stem.values() if p != new_rel]
    return stem if not others else new_rel[:-3] if new_rel.endswith(".md") else new_rel


async def link_to(db: Database, vault_key: str, rel: str) -> str:
    async with db.session() as session:
        return link_target(rel, await same_stem(session, vault_key, PurePosixPath(rel).stem))


async def stems_taken(db: Database, index: SearchIndex, stem: str) -> set[str]:
    """The stems a new note named `stem` must not take (see `Vault.create`)."""
    if not stem:
        return set()
    async with db.session() as session:
        return await index.stems_taken(session, stem)


async def relink(db: Database, vault: Vault, vault_key: str, sources: list[str],
                 old_rel: str, new_rel: str) -> list[str]:
    """After `old_rel` moved to `new_rel`: rewrite the links in `sources` that reached it and
    would not any more; returns the notes changed."""
    if old_rel == new_rel or not sources:
        return []
    async with db.session() as session:
        before = await same_stem(session, vault_key, PurePosixPath(old_rel).stem)
        newer = await same_stem(session, vault_key, PurePosixPath(new_rel).stem)
    before[link_key(old_rel)] = old_rel
    after = {k: v for k, v in before.items() if v != old_rel}
    after.update(newer)
    after = {k: v for k, v in after.items() if v != old_rel}
    after[link_key(new_rel)] = new_rel

    def stale(target: str) -> bool:
        key = link_key(target)
        return resolve_link(key, before) == old_rel and resolve_link(key, after) != new_rel

    target = link_target(new_rel, after)
    changed = []
    for rel in sources:
        path = vault.resolve(rel)
        try:
            old = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # gone, or not text we may rewrite: left as it is
        new = retarget(old, stale, target)
        if new != old:
            write_atomic(path, new)
            changed.append(rel)
    return changed
