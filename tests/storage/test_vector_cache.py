"""A vault's matrix in memory, grown by appends, ranks keys exactly as brute force does."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.meaning.cache import VaultMatrix
from storage.meaning.vector_rows import Loaded


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.standard_normal((n, 8)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=6),
       shared=st.integers(0, 5), k=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_appended_rows_rank_like_brute_force(sizes: list[int], shared: int, k: int,
                                             seed: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = VaultMatrix(0, matrix=np.zeros((0, 8), dtype=np.float32))
    keys: list[str] = []
    rows: list[np.ndarray] = []
    vid = 0
    for size in sizes:
        block = _unit(rng, size)
        # Some keys get a second vector (a note with two chunks): best of them counts.
        names = [f"k{len(keys) + i}" if i >= shared or not keys else keys[i % len(keys)]
                 for i in range(size)]
        vid += size
        matrix.append(Loaded(vid, names, block))
        keys += names
        rows += list(block)
    assert matrix.rows == len(rows) and matrix.max_vid == vid
    query = _unit(rng, 1)[0]
    got = matrix.top(query, k)
    best: dict[str, float] = {}
    for key, row in zip(keys, rows, strict=True):
        best[key] = max(best.get(key, -2.0), float(row @ query))
    want = sorted(best.items(), key=lambda kv: -kv[1])[:k]
    assert [s for _, s in got] == [s for _, s in want] or np.allclose(
        [s for _, s in got], [s for _, s in want], atol=1e-6)
    assert {key for key, _ in got} <= set(best)
    assert len(got) == min(k, len(best))
