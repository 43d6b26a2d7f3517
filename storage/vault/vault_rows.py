"""The database store's rows of a vault (migration 0016): its files (`vault_files`), its
history's git objects (`vault_objects`) and head (`vault_heads`), every row numbered from one
sequence: what storage/vault/mirror.py reads and sends, each in one transaction.
PostgreSQL only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from storage.db import Database

_TOP = ("greatest((SELECT max(seq) FROM vault_files WHERE vault = {v}), "
        "(SELECT max(seq) FROM vault_objects WHERE vault = {v}), "
        "(SELECT max(seq) FROM vault_heads WHERE vault = {v}))")


@dataclass(frozen=True)
class Outgoing:
    """What a push sends of the history: objects the database lacks, the head and the remote's
    state (each None when unchanged since the database last had them), the head now."""
    objects: list[dict[str, Any]]
    head: str | None
    remote: str | None
    now: str | None


class Index(Protocol):
    """What indexes a write's files in the transaction that sends them (the Store's index)."""

    async def rows(self, session: AsyncSession, rels: list[str]) -> None: ...

    def written(self, rels: list[str]) -> None: ...


async def top(s: AsyncSession, vault: str) -> int | None:
    """The number of the vault's newest row (None: it has none): three index lookups."""
    found = await s.scalar(text("SELECT " + _TOP.format(v=":v")), {"v": vault})
    return None if found is None else int(found)


async def tops(db: Database, vaults: Sequence[str]) -> dict[str, int | None]:
    """`top` of each of `vaults`, in one statement."""
    async with db.session() as s:
        rows = (await s.execute(text(
            "SELECT v, " + _TOP.format(v="v") + " FROM unnest(CAST(:vs AS text[])) AS v"),
            {"vs": list(vaults)})).all()
    return {str(v): None if n is None else int(n) for v, n in rows}


async def held(db: Database, vault: str) -> bool:
    """Does the database hold this vault yet (a head, or any file)?"""
    async with db.session() as s:
        found = await s.scalar(text(
            "SELECT 1 WHERE EXISTS (SELECT 1 FROM vault_heads WHERE vault = :v) "
            "OR EXISTS (SELECT 1 FROM vault_files WHERE vault = :v)"), {"v": vault})
    return found is not None


async def read_since(db: Database, vault: str,
                     since: int) -> tuple[list[Any], list[Any], Any]:
    """Everything past `since`, in one snapshot (a push commits files, objects and head
    together: the mirror never sees a head without its objects). Within a write (which
    holds the vault's lock: no push can come between), in the write's transaction."""
    if db.shared():
        async with db.session() as s:
            return await _since(s, vault, since)
    async with db.engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="REPEATABLE READ")
        async with conn.begin():
            return await _since(conn, vault, since)


async def _since(conn: AsyncSession | AsyncConnection, vault: str,
                 since: int) -> tuple[list[Any], list[Any], Any]:
    args = {"v": vault, "s": since}
    files = (await conn.execute(text(
        "SELECT path, content, mtime_ns, seq FROM vault_files "
        "WHERE vault = :v AND seq > :s ORDER BY seq"), args)).all()
    objects = (await conn.execute(text(
        "SELECT sha, kind, data, seq FROM vault_objects "
        "WHERE vault = :v AND seq > :s ORDER BY seq"), args)).all()
    head = (await conn.execute(text(
        "SELECT head, seq, remote FROM vault_heads WHERE vault = :v AND seq > :s"),
        args)).first()
    return list(files), list(objects), head


async def files_at(db: Database, vault: str, paths: Sequence[str],
                   ) -> dict[str, tuple[bytes, int]]:
    """The content and mtime of each of `paths` the database holds (a deleted file's row,
    or none: absent)."""
    if not paths:
        return {}
    async with db.session() as s:
        found = (await s.execute(text(
            "SELECT path, content, mtime_ns FROM vault_files "
            "WHERE vault = :v AND path = ANY(CAST(:ps AS text[])) AND content IS NOT NULL"),
            {"v": vault, "ps": list(paths)})).all()
    return {str(p): (bytes(c), int(m)) for p, c, m in found}


async def hashes(db: Database, vault: str) -> dict[str, str]:
    """The sha256 of each file the database holds of the vault."""
    async with db.session() as s:
        found = (await s.execute(text(
            "SELECT path, sha FROM vault_files WHERE vault = :v AND content IS NOT NULL"),
            {"v": vault})).all()
    return {str(p): str(h) for p, h in found}


async def write(db: Database, vault: str, files: list[dict[str, Any]], out: Outgoing,
                index: Index | None = None, reindex: Sequence[str] = ()) -> list[int]:
    """Files, objects and the head sent in one transaction (with `index`'s rows of
    `reindex`); the numbers of the rows written."""
    seqs: list[int] = []
    async with db.session() as s:
        if index is not None:  # first: the index lock is the one other writers wait on
            await index.rows(s, list(reindex))
        for row in files:
            seqs += (await s.execute(text(
                "INSERT INTO vault_files (vault, path, content, sha, mtime_ns) "
                "VALUES (:v, :path, :content, :sha, :mtime_ns) "
                "ON CONFLICT (vault, path) DO UPDATE SET content = excluded.content, "
                "sha = excluded.sha, mtime_ns = excluded.mtime_ns, seq = nextval('vault_seq') "
                "WHERE vault_files.sha IS DISTINCT FROM excluded.sha RETURNING seq"),
                {"v": vault, **row})).scalars().all()
        for obj in out.objects:
            seqs += (await s.execute(text(
                "INSERT INTO vault_objects (vault, sha, kind, data) "
                "VALUES (:v, :sha, :kind, :data) ON CONFLICT DO NOTHING RETURNING seq"),
                {"v": vault, **obj})).scalars().all()
        if (out.head is not None or out.remote is not None) and out.now is not None:
            seqs += (await s.execute(text(
                "INSERT INTO vault_heads (vault, head, remote, updated_at) "
                "VALUES (:v, :h, :r, now()) ON CONFLICT (vault) DO UPDATE SET "
                "head = excluded.head, remote = coalesce(excluded.remote, vault_heads.remote), "
                "updated_at = now(), seq = nextval('vault_seq') RETURNING seq"),
                {"v": vault, "h": out.now, "r": out.remote})).scalars().all()
        await s.commit()
    return [int(n) for n in seqs]


async def erase(db: Database, vault: str, forgotten: str) -> None:
    """The vault's files and objects deleted and its head set to `forgotten`, in one
    transaction."""
    async with db.session() as s:
        await s.execute(text("DELETE FROM vault_files WHERE vault = :v"), {"v": vault})
        await s.execute(text("DELETE FROM vault_objects WHERE vault = :v"), {"v": vault})
        await s.execute(text(
            "INSERT INTO vault_heads (vault, head, updated_at) VALUES (:v, :h, now()) "
            "ON CONFLICT (vault) DO UPDATE SET head = excluded.head, remote = NULL, "
            "updated_at = now(), seq = nextval('vault_seq')"), {"v": vault, "h": forgotten})
        await s.commit()
