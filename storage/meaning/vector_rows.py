"""The rows of `index_vectors` (migration 0006): which notes still need vectors, writing them,
loading them as a matrix, mapping embed keys back to notes, pruning.

Vectors belong to an `embed_key` (a hash of the text they were made from), not to a note row:
a note that is moved, retitled back, or whose status changes finds its vectors again by key,
and two notes with the same text share them. Rows of every model live side by side; callers
name the model (its id + `embed_text.RECIPE`).

On SQLite and on PostgreSQL without pgvector the column holds `vectors.pack` bytes; with
pgvector it is `vector(384)`, written from its text form and read back through
`vector_send` (a 4-byte header, then big-endian float32s).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from storage.meaning import vectors
from storage.meaning.texts import embed_key, texts_for_note
from storage.text import clean_text

# The column's kind per engine: "blob" (SQLite, BYTEA) or "pgvector".
_COLUMNS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class PendingNote:
    """A note whose text has no vectors of the model yet."""

    nid: int
    key: str  # its embed key (computed here for rows indexed before migration 0006)
    stored_key: str | None  # what the row holds
    texts: list[str]


@dataclass(frozen=True)
class Loaded:
    """Vector rows read from the database, in vid order."""

    max_vid: int
    keys: list[str]
    matrix: vectors.Matrix


async def vector_column(session: AsyncSession) -> str:
    """"pgvector" when the column is pgvector's type, else "blob"."""
    bind = session.get_bind()
    engine: AsyncEngine | Any = getattr(bind, "engine", bind)
    kind = _COLUMNS.get(engine)
    if kind is None:
        kind = "blob"
        if bind.dialect.name == "postgresql":
            found = await session.execute(text(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = 'index_vectors'::regclass AND attname = 'vector'"))
            kind = "pgvector" if str(found.scalar() or "").startswith("vector") else "blob"
        _COLUMNS[engine] = kind
    return kind


def _extra(one_liner: str | None, next_action: str | None, context: str | None) -> str:
    return " ".join(v.strip() for v in (one_liner, next_action, context) if v and v.strip())


async def pending(session: AsyncSession, vault: str, model: str,
                  limit: int) -> list[PendingNote]:
    """Up to `limit` notes without vectors of `model`, newest first (what users ask about)."""
    result = await session.execute(text(
        "SELECT n.nid, n.embed_key, n.name, n.body, n.one_liner, n.next_action, n.context "
        "FROM index_notes n WHERE n.vault = :v AND (n.embed_key IS NULL OR NOT EXISTS ("
        "SELECT 1 FROM index_vectors x WHERE x.vault = n.vault AND x.model = :m "
        "AND x.key = n.embed_key)) ORDER BY n.updated_ts DESC, n.nid LIMIT :k"),
        {"v": vault, "m": model, "k": limit})
    out = []
    for nid, stored, name, body, one_liner, next_action, context in result:
        texts = texts_for_note(name or "", body or "", _extra(one_liner, next_action, context))
        out.append(PendingNote(int(nid), embed_key(texts), stored, texts))
    return out


async def count_pending(session: AsyncSession, vault: str, model: str) -> int:
    result = await session.execute(text(
        "SELECT count(*) FROM index_notes n WHERE n.vault = :v AND (n.embed_key IS NULL OR "
        "NOT EXISTS (SELECT 1 FROM index_vectors x WHERE x.vault = n.vault AND x.model = :m "
        "AND x.key = n.embed_key))"), {"v": vault, "m": model})
    return int(result.scalar() or 0)


async def set_keys(session: AsyncSession, notes: Sequence[PendingNote]) -> None:
    """Store the keys of rows indexed before migration 0006 (or by older code)."""
    changed = [{"nid": n.nid, "k": n.key} for n in notes if n.stored_key != n.key]
    if changed:
        await session.execute(text("UPDATE index_notes SET embed_key = :k WHERE nid = :nid"),
                              changed)


async def have(session: AsyncSession, vault: str, model: str, keys: Sequence[str]) -> set[str]:
    """Which of `keys` have vectors of `model` already (a note moved, or a copy)."""
    if not keys:
        return set()
    names = {f"k{i}": key for i, key in enumerate(dict.fromkeys(keys))}
    result = await session.execute(text(
        "SELECT DISTINCT key FROM index_vectors WHERE vault = :v AND model = :m AND key IN "
        f"({', '.join(':' + n for n in names)})"), {"v": vault, "m": model, **names})
    return {r[0] for r in result}


async def bump(session: AsyncSession, vault: str) -> None:
    await session.execute(text(
        "INSERT INTO index_vaults (vault, generation, vector_generation) VALUES (:v, 0, 1) "
        "ON CONFLICT (vault) DO UPDATE SET "
        "vector_generation = index_vaults.vector_generation + 1"), {"v": vault})


async def write(session: AsyncSession, vault: str, model: str,
                rows: Sequence[tuple[str, int, Any]]) -> None:
    """Insert (key, chunk, vector) rows; a row another writer added first is kept as is."""
    if not rows:
        return
    if await vector_column(session) == "pgvector":
        value = "CAST(:vec AS vector)"
        params = [{"v": vault, "m": model, "k": k, "c": c,
                   "vec": "[" + ",".join(repr(float(x)) for x in vec) + "]"}
                  for k, c, vec in rows]
    else:
        value = ":vec"
        params = [{"v": vault, "m": model, "k": k, "c": c, "vec": vectors.pack(vec)}
                  for k, c, vec in rows]
    await session.execute(text(
        "INSERT INTO index_vectors (vault, model, key, chunk, vector) "
        f"VALUES (:v, :m, :k, :c, {value}) "
        "ON CONFLICT (vault, model, key, chunk) DO NOTHING"), params)
    await bump(session, vault)


async def state(session: AsyncSession, vault: str, model: str) -> tuple[int, int]:
    """(rows, highest vid) of the vault's vectors of `model`."""
    result = await session.execute(text(
        "SELECT count(*), max(vid) FROM index_vectors WHERE vault = :v AND model = :m"),
        {"v": vault, "m": model})
    count, high = result.one()
    return int(count or 0), int(high or 0)


async def load(session: AsyncSession, vault: str, model: str, after_vid: int = 0,
               upto_vid: int | None = None, dim: int = vectors.DIM) -> Loaded:
    """The vault's vectors of `model` with after_vid < vid <= upto_vid, in vid order."""
    upto = upto_vid if upto_vid is not None else 2**62
    if session.get_bind().dialect.name != "sqlite":
        return await _load_pg(session, vault, model, after_vid, upto, dim)
    # Straight from the driver: SQLAlchemy's rows cost ~40 % of a 50k-vector load.
    driver = (await (await session.connection()).get_raw_connection()).driver_connection
    assert driver is not None
    cursor = await driver.execute(
        "SELECT vid, key, vector FROM index_vectors WHERE vault = ? AND model = ? "
        "AND vid > ? AND vid <= ? ORDER BY vid", (vault, model, after_vid, upto))
    rows = list(await cursor.fetchall())
    await cursor.close()
    if not rows:
        return Loaded(after_vid, [], np.zeros((0, dim), dtype=np.float32))
    matrix = vectors.stack([bytes(r[2]) for r in rows], dim)
    return Loaded(int(rows[-1][0]), [r[1] for r in rows], matrix)


async def _load_pg(session: AsyncSession, vault: str, model: str, after_vid: int, upto: int,
                   dim: int) -> Loaded:
    """From asyncpg itself: SQLAlchemy's rows cost a third more at 50k vectors (one
    aggregated row measured no faster)."""
    pg = await vector_column(session) == "pgvector"
    driver = (await (await session.connection()).get_raw_connection()).driver_connection
    assert driver is not None
    rows = await driver.fetch(
        f"SELECT vid, key, {'vector_send(vector)' if pg else 'vector'} FROM index_vectors "
        "WHERE vault = $1 AND model = $2 AND vid > $3 AND vid <= $4 ORDER BY vid",
        vault, model, after_vid, upto)
    if not rows:
        return Loaded(after_vid, [], np.zeros((0, dim), dtype=np.float32))
    if pg:  # vector_send: int16 dimension, int16 unused, then the floats in network order
        data = b"".join(bytes(r[2])[4:] for r in rows)
        matrix = np.frombuffer(data, dtype=">f4").reshape(len(rows), dim).astype(np.float32)
    else:
        matrix = vectors.stack([bytes(r[2]) for r in rows], dim)
    return Loaded(int(rows[-1][0]), [r[1] for r in rows], matrix)


async def notes_for_keys(session: AsyncSession, vault: str, keys: Sequence[str],
                         category: str | None = None,
                         status: str | None = None) -> list[tuple[int, str]]:
    """(nid, key) of the vault's notes with these keys (and the filters)."""
    if not keys:
        return []
    names = {f"k{i}": key for i, key in enumerate(dict.fromkeys(keys))}
    params: dict[str, Any] = {"v": vault, **names}
    sql = ("SELECT nid, embed_key FROM index_notes WHERE vault = :v AND embed_key IN "
           f"({', '.join(':' + n for n in names)})")
    if category is not None:
        sql += " AND category = :category"
        params["category"] = clean_text(category)
    if status is not None:
        sql += " AND status = :status"
        params["status"] = clean_text(status)
    result = await session.execute(text(sql), params)
    return [(int(r[0]), r[1]) for r in result]


async def orphans(session: AsyncSession, vault: str, model: str) -> int:
    """How many of the vault's vector rows are of no use: another model's, or made from a
    text no note has any more (a note removed or changed)."""
    result = await session.execute(text(
        "SELECT count(*) FROM index_vectors x WHERE x.vault = :v AND (x.model <> :m OR "
        "NOT EXISTS (SELECT 1 FROM index_notes n WHERE n.vault = x.vault "
        "AND n.embed_key = x.key))"), {"v": vault, "m": model})
    return int(result.scalar() or 0)


async def prune(session: AsyncSession, vault: str, model: str) -> int:
    """Delete the vault's vectors that no note uses, and those of other models."""
    result = await session.execute(text(
        "DELETE FROM index_vectors WHERE vault = :v AND (model <> :m OR NOT EXISTS ("
        "SELECT 1 FROM index_notes n WHERE n.vault = index_vectors.vault "
        "AND n.embed_key = index_vectors.key))"), {"v": vault, "m": model})
    removed = int(getattr(result, "rowcount", 0) or 0)
    if removed:
        await bump(session, vault)
    return removed


async def drop_vault(session: AsyncSession, vault: str) -> int:
    """Delete every vector of the vault, of every model (its owner is forgotten)."""
    result = await session.execute(text("DELETE FROM index_vectors WHERE vault = :v"),
                                   {"v": vault})
    await bump(session, vault)
    return int(getattr(result, "rowcount", 0) or 0)


async def generations(session: AsyncSession) -> dict[str, tuple[int, int]]:
    """vault -> (generation, vector_generation), every vault (few rows)."""
    result = await session.execute(text(
        "SELECT vault, generation, vector_generation FROM index_vaults"))
    return {r[0]: (int(r[1]), int(r[2])) for r in result}
