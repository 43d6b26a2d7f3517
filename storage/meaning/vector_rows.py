"""The rows of `index_vectors` (migration 0006): which passages still need vectors, writing
them, loading them as a matrix, mapping embed keys back to passages and notes, pruning.

Vectors belong to an `embed_key` (a hash of the text they were made from: a passage's, see
`index_passages`, migration 0017), not to a row: a note that is moved, retitled back, or whose
status changes finds its vectors again by key, an edit re-embeds only the passages it changed,
and two passages with the same text share them. Rows of every model live side by side; callers
name the model (its id + `embed_text.RECIPE`).

On SQLite and on PostgreSQL without pgvector the column holds `vectors.pack` bytes; with
pgvector it is `vector(384)`, written from its text form and read back through
`vector_send` (a 4-byte header, then big-endian float32s).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from storage.meaning import vectors
from storage.meaning.texts import passage_text
from storage.text import clean_text

if TYPE_CHECKING:
    from storage.meaning.shared_model import Meaning

# The column's kind per engine: "blob" (SQLite, BYTEA) or "pgvector".
_COLUMNS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class PendingPassage:
    """A passage whose text has no vector of the model yet."""

    nid: int  # its note
    key: str  # its embed key
    text: str  # what is embedded (storage.meaning.texts.passage_text)


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


_WITHOUT_VECTOR = (
    "p.vault = :v AND p.embed_key <> '' AND NOT EXISTS (SELECT 1 FROM index_vectors x "
    "WHERE x.vault = p.vault AND x.model = :m AND x.key = p.embed_key)")


async def pending(session: AsyncSession, vault: str, model: str,
                  limit: int) -> list[PendingPassage]:
    """Up to `limit` passages without vectors of `model`, those of the newest notes first
    (what users ask about)."""
    result = await session.execute(text(
        # (the passage's own text, not its note's body: a 20 MB note read once per passage
        # would not fit in memory)
        "SELECT p.nid, p.embed_key, p.seq, substr(n.body, p.start_at + 1, "
        "p.end_at - p.start_at), n.name, n.one_liner, n.next_action, n.context "
        "FROM index_passages p JOIN index_notes n ON n.nid = p.nid "
        f"WHERE {_WITHOUT_VECTOR} ORDER BY n.updated_ts DESC, p.nid, p.seq LIMIT :k"),
        {"v": vault, "m": model, "k": limit})
    out = []
    for nid, key, seq, passage, name, one_liner, next_action, context in result:
        extra = _extra(one_liner, next_action, context)
        out.append(PendingPassage(int(nid), key, passage_text(
            name or "", passage or "", extra, first=seq == 0)))
    return out


async def count_pending(session: AsyncSession, vault: str, model: str) -> int:
    """How many passages still need a vector of `model`."""
    result = await session.execute(text(
        f"SELECT count(*) FROM index_passages p WHERE {_WITHOUT_VECTOR}"),
        {"v": vault, "m": model})
    return int(result.scalar() or 0)


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


async def embed_into(session: AsyncSession, vault_key: str, meaning: Meaning,
                     passages: Sequence[PendingPassage]) -> None:
    """The vectors of `passages`, made in a worker thread and written in `session`'s
    transaction (the caller commits)."""
    matrix = await asyncio.to_thread(meaning.embed_texts, [p.text for p in passages])
    rows = [(p.key, 0, matrix[i]) for i, p in enumerate(passages)]
    await write(session, vault_key, meaning.model, rows)


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


async def passages_for_keys(session: AsyncSession, vault: str, keys: Sequence[str],
                            category: str | None = None,
                            status: str | None = None) -> list[tuple[int, int, str]]:
    """(nid, passage number, key) of the vault's passages with these keys (and the
    filters on their notes)."""
    if not keys:
        return []
    params: dict[str, Any] = {"v": vault, "keys": list(dict.fromkeys(keys))}
    source = "index_passages p"
    if category is not None or status is not None:
        source += " JOIN index_notes n ON n.nid = p.nid"
    sql = f"SELECT p.nid, p.seq, p.embed_key FROM {source} WHERE p.vault = :v AND " \
          "p.embed_key IN :keys"
    if category is not None:
        sql += " AND n.category = :category"
        params["category"] = clean_text(category)
    if status is not None:
        sql += " AND n.status = :status"
        params["status"] = clean_text(status)
    result = await session.execute(
        text(sql).bindparams(bindparam("keys", expanding=True)), params)
    return [(int(r[0]), int(r[1]), r[2]) for r in result]


_UNUSED = ("NOT EXISTS (SELECT 1 FROM index_passages p WHERE p.vault = index_vectors.vault "
           "AND p.embed_key = index_vectors.key)")


async def orphans(session: AsyncSession, vault: str, model: str) -> int:
    """How many of the vault's vector rows are of no use: another model's, or made from a
    text no passage has any more (a note removed or changed)."""
    result = await session.execute(text(
        f"SELECT count(*) FROM index_vectors WHERE vault = :v AND (model <> :m OR {_UNUSED})"),
        {"v": vault, "m": model})
    return int(result.scalar() or 0)


async def prune(session: AsyncSession, vault: str, model: str) -> int:
    """Delete the vault's vectors that no passage uses, and those of other models."""
    result = await session.execute(text(
        f"DELETE FROM index_vectors WHERE vault = :v AND (model <> :m OR {_UNUSED})"),
        {"v": vault, "m": model})
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
