"""Each vault's vectors as one matrix in memory, kept in step with the database, and the
notes nearest a query vector.

A search must not read 50k vectors from the database: the matrix is loaded once per process
(keyed by database URL, vault and model) and then only the rows added since (`vid` only
grows). The vault's `vector_generation` (read with its generation, no extra query) says when
to look; a row count that does not add up (vectors pruned, or committed out of order by
another process) reloads the whole matrix. Rows whose note is gone stay in the matrix until
then: they map to no note, so they are never shown.

Memory: 1.5 kB per vector (50k notes: 77 MB); all matrices of a process together stay under
MAX_BYTES, the least recently used vault's being dropped first.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession

from storage.meaning import vector_rows, vectors

MAX_BYTES = 512 * 2**20
# Below this many rows the matrix product runs on the event loop (a thread hop costs more).
INLINE_ROWS = 4000

CacheKey = tuple[str, str, str]  # (database URL, vault, model)
_CACHE: OrderedDict[CacheKey, VaultMatrix] = OrderedDict()
_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[CacheKey, asyncio.Lock]] = (
    weakref.WeakKeyDictionary())


@dataclass
class VaultMatrix:
    """One vault's vectors: row i belongs to keys[owners[i]]."""

    vector_generation: int
    max_vid: int = 0
    rows: int = 0
    matrix: vectors.Matrix = field(
        default_factory=lambda: np.zeros((0, vectors.DIM), dtype=np.float32))
    owners: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    keys: list[str] = field(default_factory=list)
    key_ids: dict[str, int] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes + self.owners.nbytes)

    def append(self, loaded: vector_rows.Loaded) -> None:
        n = len(loaded.keys)
        if n:
            need = self.rows + n
            if need > self.matrix.shape[0]:  # grow by a quarter: appends stay amortised O(1)
                capacity = max(need + need // 8, int(self.matrix.shape[0] * 1.25)) + 64
                grown = np.zeros((capacity, loaded.matrix.shape[1]), dtype=np.float32)
                grown[:self.rows] = self.matrix[:self.rows]
                owners = np.zeros(capacity, dtype=np.intp)
                owners[:self.rows] = self.owners[:self.rows]
                self.matrix, self.owners = grown, owners
            self.matrix[self.rows:need] = loaded.matrix
            for i, key in enumerate(loaded.keys):
                self.owners[self.rows + i] = self.key_ids.setdefault(key, len(self.key_ids))
            self.keys.extend(list(self.key_ids)[len(self.keys):])
            self.rows = need
        self.max_vid = max(self.max_vid, loaded.max_vid)

    def top(self, query: vectors.Matrix, k: int) -> list[tuple[str, float]]:
        """The k keys whose best vector is closest to `query`, with their cosine."""
        rows = self.rows  # a snapshot: appends on the event loop write past it
        if len(self.keys) >= rows:  # one vector per key (the shipped recipe): no pooling
            found, scores = vectors.cosine_top_k(query, self.matrix[:rows], k)
            owners = self.owners[found]
        else:
            owners, scores = vectors.top_k_per_owner(query, self.matrix[:rows],
                                                     self.owners[:rows], k)
        return [(self.keys[int(o)], float(s)) for o, s in zip(owners, scores, strict=True)]


def _lock(key: CacheKey) -> asyncio.Lock:
    locks = _LOCKS.setdefault(asyncio.get_running_loop(), {})
    return locks.setdefault(key, asyncio.Lock())


def _evict() -> None:
    while len(_CACHE) > 1 and sum(m.nbytes for m in _CACHE.values()) > MAX_BYTES:
        _CACHE.popitem(last=False)


def forget(url: str, vault: str) -> None:
    """Drop a vault's matrices (its vectors were deleted)."""
    for key in [k for k in _CACHE if k[0] == url and k[1] == vault]:
        del _CACHE[key]


def database_url(session: AsyncSession) -> str:
    return str(session.get_bind().engine.url)


async def matrix_for(session: AsyncSession, vault: str, model: str,
                     vector_generation: int) -> VaultMatrix:
    """The vault's matrix, brought up to `vector_generation` (rows added since, or all)."""
    key = (database_url(session), vault, model)
    entry = _CACHE.get(key)
    if entry is not None and entry.vector_generation == vector_generation:
        _CACHE.move_to_end(key)
        return entry
    async with _lock(key):
        entry = _CACHE.get(key)
        if entry is not None and entry.vector_generation == vector_generation:
            return entry
        count, high = await vector_rows.state(session, vault, model)
        if entry is not None:
            added = await vector_rows.load(session, vault, model, entry.max_vid, high)
            if entry.rows + len(added.keys) == count:
                entry.append(added)
                entry.vector_generation = vector_generation
                _CACHE.move_to_end(key)
                return entry
        fresh = VaultMatrix(vector_generation)
        fresh.append(await vector_rows.load(session, vault, model, 0, high))
        _CACHE[key] = fresh
        _CACHE.move_to_end(key)
        _evict()
        return fresh


async def nearest(session: AsyncSession, vault: str, model: str, vector_generation: int,
                  query: vectors.Matrix, k: int) -> list[tuple[str, float]]:
    """The k embed keys nearest `query` (best first, with cosine)."""
    return await top_keys(await matrix_for(session, vault, model, vector_generation), query, k)


async def top_keys(matrix: VaultMatrix, query: vectors.Matrix | None,
                   k: int) -> list[tuple[str, float]]:
    """The k keys of `matrix` nearest `query`. No database: it may run beside a query."""
    if query is None or matrix.rows == 0 or k <= 0:
        return []
    if matrix.rows < INLINE_ROWS:
        return matrix.top(query, k)
    return await asyncio.to_thread(matrix.top, query, k)  # numpy lets go of the GIL


def depth_for(depth: int, filtered: bool) -> int:
    """How many nearest keys to take for `depth` notes (a filter keeps fewer of them)."""
    return depth * (4 if filtered else 1) + 8


async def notes_of(session: AsyncSession, vault: str, keys: list[tuple[str, float]], *,
                   depth: int, floor: float, category: str | None = None,
                   status: str | None = None) -> list[tuple[int, float]]:
    """(nid, cosine) of the notes with these keys, best first, at least `floor`, within the
    filters."""
    score = {k: s for k, s in keys if s >= floor}
    pairs = await vector_rows.notes_for_keys(session, vault, list(score), category, status)
    found = sorted(((nid, score[key]) for nid, key in pairs), key=lambda p: (-p[1], p[0]))
    return found[:depth]


async def ranked(session: AsyncSession, vault: str, model: str, vector_generation: int,
                 query: vectors.Matrix, *, depth: int, floor: float,
                 category: str | None = None, status: str | None = None,
                 ) -> list[tuple[int, float]]:
    """(nid, cosine) of the notes nearest `query`, best first, at least `floor`, within the
    filters."""
    want = depth_for(depth, category is not None or status is not None)
    keys = await nearest(session, vault, model, vector_generation, query, want)
    return await notes_of(session, vault, keys, depth=depth, floor=floor, category=category,
                          status=status)
