"""Backlinks: notes linking to a note, links resolved at query time (Obsidian's rule), so they
follow notes added, moved or removed without rewriting link rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.links import link_key
from storage.types import Backlink, BacklinkList


def resolve_link(target_key: str, note_keys: Mapping[str, str]) -> str | None:
    """Obsidian's rule: exact path, else the shortest path ending with the target.

    `note_keys` maps link_key(path) -> path for the candidate notes (same basename).
    """
    exact = note_keys.get(target_key)
    if exact is not None:
        return exact
    suffix = "/" + target_key
    matches = [path for key, path in note_keys.items() if key.endswith(suffix)]
    if not matches:
        return None
    return min(matches, key=lambda p: (p.count("/"), len(p), p))


async def _links_by_name(session: AsyncSession, key: str, rel: str,
                         base: str) -> Sequence[tuple[str, None, str, str]]:
    """`[[Sara Lee]]` for the bot's `people/sara-lee.md` (name: Sara Lee): file names are
    slugs, so a link by the note's display name counts when no file has that name."""
    found = await session.execute(text(
        "SELECT name_key FROM index_notes WHERE vault = :v AND path = :p"),
        {"v": key, "p": rel})
    name_key = found.scalar()
    if not name_key or name_key == base:
        return []
    taken = await session.execute(text(
        "SELECT 1 FROM index_notes WHERE vault = :v AND stem_key = :k LIMIT 1"),
        {"v": key, "k": name_key})
    if taken.first() is not None:
        return []  # Obsidian would resolve the link to that file
    links = await session.execute(text(
        "SELECT l.source_path, l.line, n.name FROM index_links l "
        "JOIN index_notes n ON n.vault = l.vault AND n.path = l.source_path "
        "WHERE l.vault = :v AND l.target_base = :k AND l.target_key = :k "
        "ORDER BY l.source_path"),
        {"v": key, "k": name_key})
    return [(source, None, line, name) for source, line, name in links]


async def backlinks(session: AsyncSession, key: str, rel: str) -> BacklinkList:
    """Notes of vault `key` linking to `rel`, with the line of each link."""
    target = link_key(rel)
    base = target.rsplit("/", 1)[-1]
    notes = await session.execute(
        text("SELECT path FROM index_notes WHERE vault = :v AND stem_key = :s"),
        {"v": key, "s": base})
    note_keys = {link_key(path): path for (path,) in notes}
    links = await session.execute(text(
        "SELECT l.source_path, l.target_key, l.line, n.name FROM index_links l "
        "JOIN index_notes n ON n.vault = l.vault AND n.path = l.source_path "
        "WHERE l.vault = :v AND l.target_base = :b ORDER BY l.source_path"),
        {"v": key, "b": base})
    rows = [*links, *await _links_by_name(session, key, rel, base)]
    out: list[Backlink] = []
    seen: set[tuple[str, str]] = set()
    for source, target_key, line, name in rows:
        if source == rel or (target_key is not None
                             and resolve_link(target_key, note_keys) != rel):
            continue
        if (source, line) not in seen:
            seen.add((source, line))
            out.append(Backlink(path=source, name=name, context=line))
    return BacklinkList(target=rel, backlinks=out)
