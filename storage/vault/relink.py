"""Links that follow a note when it moves: the `[[links]]` to it in the same vault that would
no longer reach it are rewritten to its new place, as Obsidian does on a rename, inside the
move's own change (and its history commit). Found through the index's link rows, not a scan.
A moved note keeps its file name, so a `[[Name]]` usually still reaches it and nothing is
rewritten; it takes `Name 2` in the new folder only where `Name` is taken there, or where
its new path would take over links that reach another note of that name now.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.index.backlinks import backlinks, resolve_link
from storage.vault.atomic import name_sep, numbered, write_atomic
from storage.vault.files import Vault
from storage.vault.links import link_key, retarget

MAX_NAME_TRIES = 100  # `Name 2` ... `Name 99` looked at; past them, the first free name


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


async def _takes_over(session: AsyncSession, vault_key: str, old_rel: str,
                      new_rel: str) -> bool:
    """Would a note moved from `old_rel` to `new_rel` take over a link that reaches another
    note now (a `[[Name]]` whose shortest path would become the new one)?"""
    stem = PurePosixPath(new_rel).stem
    notes = await same_stem(session, vault_key, stem)
    after = {k: v for k, v in notes.items() if v != old_rel}
    after[link_key(new_rel)] = new_rel
    rows = await session.execute(text(
        "SELECT DISTINCT target_key FROM index_links WHERE vault = :v AND target_base = :b"),
        {"v": vault_key, "b": link_key(stem)})
    for (key,) in rows:
        now = resolve_link(key, notes)
        if now is not None and now != old_rel and resolve_link(key, after) == new_rel:
            return True
    return False


async def names_blocked(db: Database, vault: Vault, vault_key: str, old_rel: str,
                        folder: str) -> set[str]:
    """The names (stems, case-folded) the note at `old_rel` may not take in `folder`, tried
    in turn (`Name`, `Name 2`, ... in the name's style) up to the first it may: one a file
    there has in any case, or one whose path would take links meant for another note."""
    stem = PurePosixPath(old_rel).stem
    there = vault.root / folder
    existing = {p.stem.casefold() for p in there.iterdir()} if there.is_dir() else set()
    blocked: set[str] = set()
    async with db.session() as session:
        for number in range(1, MAX_NAME_TRIES):
            name = numbered(stem, number, "", name_sep(stem))
            if name.casefold() not in existing and not await _takes_over(
                    session, vault_key, old_rel, f"{folder}/{name}.md"):
                break
            blocked.add(name.casefold())
    return blocked


async def rewriter(db: Database, vault_key: str, old_rel: str,
                   new_rel: str) -> Callable[[str], str]:
    """A note's text with the links that reached `old_rel`, and would not reach `new_rel`
    after the move, rewritten, each in its own form (a name stays a name when the new one
    reaches it, a path becomes the new path, `.md` kept or left off)."""
    async with db.session() as session:
        before = await same_stem(session, vault_key, PurePosixPath(old_rel).stem)
        newer = await same_stem(session, vault_key, PurePosixPath(new_rel).stem)
    before[link_key(old_rel)] = old_rel
    after = {k: v for k, v in before.items() if v != old_rel}
    after.update(newer)
    after = {k: v for k, v in after.items() if v != old_rel}
    after[link_key(new_rel)] = new_rel
    path_form = new_rel[:-3] if new_rel.lower().endswith(".md") else new_rel
    stem = PurePosixPath(new_rel).stem
    name_form = stem if resolve_link(link_key(stem), after) == new_rel else path_form

    def aimed(target: str) -> str | None:
        key = link_key(target)
        if resolve_link(key, before) != old_rel or resolve_link(key, after) == new_rel:
            return None  # not to this note, or still reaching it: left as it is
        new = path_form if "/" in key else name_form
        return new + target[-3:] if target.lower().endswith(".md") else new

    return lambda text: retarget(text, aimed)


async def relink(db: Database, vault: Vault, vault_key: str, sources: list[str],
                 old_rel: str, new_rel: str) -> list[str]:
    """After `old_rel` moved to `new_rel`: rewrite the links in `sources` that reached it and
    would not any more (`rewriter`); returns the notes changed."""
    if old_rel == new_rel or not sources:
        return []
    rewrite = await rewriter(db, vault_key, old_rel, new_rel)
    changed = []
    for rel in sources:
        path = vault.resolve(rel)
        try:
            old = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # gone, or not text we may rewrite: left as it is
        new = rewrite(old)
        if new != old:
            write_atomic(path, new)
            changed.append(rel)
    return changed
