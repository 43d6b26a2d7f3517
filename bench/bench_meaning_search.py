"""Search fused with meaning at scale: the part of bench/bench_storage.py that gives every note
a vector and times `SearchIndex.search` with a query vector (see that file's docstring).

Vectors are random unit vectors keyed by each note's embed key (what a search costs does not
depend on what they say); each query vector lies close to one note, and the floor for notes
found by meaning alone is 0, so every one of the nearest keys is looked up (the most work a
search can do). Timed apart: the first search (it loads the matrix), a search right after one
new vector was written (the rows added since are loaded), the query's embedding with the real
model, and on PostgreSQL the same nearest-vectors query run in the database by pgvector.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass

import numpy as np
from sqlalchemy import text

from storage.db import Database
from storage.index import SearchIndex
from storage.index.search_index import MeaningQuery
from storage.meaning import vector_rows
from storage.meaning.cache import _CACHE, VaultMatrix
from storage.meaning.shared_model import Meaning
from storage.vault.files import Vault

MODEL = "bench-random/1x120"
DIM = 384


@dataclass
class MeaningResult:
    notes: int
    db: str
    column: str
    write_s: float
    load_ms: float
    matrix_mb: float
    p50_ms: float
    p95_ms: float
    max_ms: float
    delta_ms: float
    pg_p50_ms: float | None
    pg_p95_ms: float | None
    embed_p50_ms: float | None
    embed_p95_ms: float | None


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def _ready(vector: np.ndarray) -> asyncio.Future[np.ndarray | None]:
    future: asyncio.Future[np.ndarray | None] = asyncio.get_running_loop().create_future()
    future.set_result(vector)
    return future


async def _timed_search(index: SearchIndex, db: Database, query: str,
                        vector: np.ndarray) -> float:
    async with db.session() as s:
        t0 = time.perf_counter()
        await index.search(s, query, limit=10,
                           meaning=MeaningQuery(MODEL, _ready(vector), floor=0.0))
        return (time.perf_counter() - t0) * 1000


async def random_vectors(db: Database, vault: Vault, model: str = MODEL,
                         seed: int = 0) -> tuple[list[str], np.ndarray, float]:
    """A random unit vector for every note of the vault: (keys, vectors, seconds to write)."""
    index = SearchIndex(vault)
    async with db.session() as s:
        keys = [r[0] for r in await s.execute(text(
            "SELECT embed_key FROM index_notes WHERE vault = :v ORDER BY nid"), {"v": index.key})]
    vectors = _unit(np.random.default_rng(seed).standard_normal((len(keys), DIM)))
    t0 = time.perf_counter()
    for at in range(0, len(keys), 2000):
        async with db.session() as s:
            await vector_rows.write(s, index.key, model, [
                (k, 0, vectors[at + i]) for i, k in enumerate(keys[at:at + 2000])])
            await s.commit()
    return keys, vectors, time.perf_counter() - t0


async def meaning_search(db: Database, vault: Vault, queries: list[str],
                         engine: str) -> MeaningResult:
    index = SearchIndex(vault)
    rng = np.random.default_rng(1)
    async with db.session() as s:
        column = await vector_rows.vector_column(s)
    keys, vectors, write_s = await random_vectors(db, vault)
    if engine == "postgres":
        async with db.engine.connect() as conn:  # as the indexer's tidy would, after a bulk load
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await auto.execute(text("VACUUM (ANALYZE) index_vectors"))

    targets = rng.integers(0, len(keys), len(queries))
    qvecs = _unit(vectors[targets] + rng.standard_normal((len(queries), DIM)) * 0.05)
    load_ms = await _timed_search(index, db, "warm up", qvecs[0])  # loads the matrix
    matrix = next(m for k, m in _CACHE.items() if k[1] == index.key and k[2] == MODEL)
    lat = [await _timed_search(index, db, q, v) for q, v in zip(queries, qvecs, strict=True)]

    async with db.session() as s:  # one more note's vector, as after a capture
        await vector_rows.write(s, index.key, MODEL, [("bench-new", 0, qvecs[0])])
        await s.commit()
    delta_ms = await _timed_search(index, db, "after one new vector", qvecs[1])

    pg: list[float] = []
    if column == "pgvector":
        for vector in qvecs[:60]:
            literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
            async with db.session() as s:
                t0 = time.perf_counter()
                await s.execute(text(
                    "SELECT key, vector <=> CAST(:q AS vector) AS d FROM index_vectors "
                    "WHERE vault = :v AND model = :m ORDER BY d LIMIT 38"),
                    {"q": literal, "v": index.key, "m": MODEL})
                pg.append((time.perf_counter() - t0) * 1000)
    embed = _embedding_times(queries)
    return MeaningResult(
        len(keys), engine, column, write_s, load_ms, _mb(matrix), _pct(lat, 0.5),
        _pct(lat, 0.95), max(lat), delta_ms, _pct(pg, 0.5) if pg else None,
        _pct(pg, 0.95) if pg else None, *(embed or (None, None)))


def _mb(matrix: VaultMatrix) -> float:
    return matrix.rows * DIM * 4 / 1e6


def _embedding_times(queries: list[str]) -> tuple[float, float] | None:
    meaning = Meaning.load()
    if meaning.embedder is None:
        return None
    meaning.embedder.embed_query("warm up")
    times = []
    for query in [q for q in queries if q.strip()][:100]:
        t0 = time.perf_counter()
        meaning.embedder.embed_query(query)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), _pct(times, 0.95)


def meaning_table(results: list[MeaningResult]) -> str:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f} ms"

    lines = [
        "| notes | database | vector column | matrix | first search (loads it) "
        "| search p50 | search p95 | search max | after 1 new vector | pgvector `<=>` p50 / p95 "
        "| query embedding p50 / p95 |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.notes:,} | {r.db} | {r.column} | {r.matrix_mb:.0f} MB | {r.load_ms:.0f} ms "
            f"| {ms(r.p50_ms)} | {ms(r.p95_ms)} | {ms(r.max_ms)} | {ms(r.delta_ms)} "
            f"| {ms(r.pg_p50_ms)} / {ms(r.pg_p95_ms)} | {ms(r.embed_p50_ms)} / "
            f"{ms(r.embed_p95_ms)} |")
    return "\n".join(lines)
