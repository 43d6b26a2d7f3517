"""Backlinks: notes linking to a note, links resolved at query time by Obsidian's rule (a path,
else the shortest path with that file name, case-insensitive; never a note's display name or
alias, which Obsidian does not resolve either), so they follow notes added, moved or removed
without rewriting link rows."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.types import Backlink, BacklinkList
from storage.vault.links import link_key


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
    rows = list(links)
    out: list[Backlink] = []
    seen: set[tuple[str, str]] = set()
    for source, target_key, line, name in rows:
        if source == rel or resolve_link(target_key, note_keys) != rel:
            continue
        if (source, line) not in seen:
            seen.add((source, line))
            out.append(Backlink(path=source, name=name, context=line))
    return BacklinkList(target=rel, backlinks=out)
