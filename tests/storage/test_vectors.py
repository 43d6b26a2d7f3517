"""Vectors as BLOBs and brute-force nearest neighbours (pure numpy, no model)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from storage.meaning.vectors import BadVector, cosine_top_k, pack, stack, top_k_per_owner, unpack

floats = st.floats(-1e6, 1e6, width=32, allow_nan=False)


@given(hnp.arrays(np.float32, st.integers(0, 400), elements=floats))
def test_pack_unpack_round_trips_exactly(vector: np.ndarray) -> None:
    blob = pack(vector)
    assert len(blob) == 4 * vector.size
    assert np.array_equal(unpack(blob), vector)


def test_the_blob_is_little_endian_float32_on_every_machine() -> None:
    assert pack([1.0, -2.5]) == b"\x00\x00\x80\x3f\x00\x00\x20\xc0"
    assert unpack(b"\x00\x00\x80\x3f", dim=1).tolist() == [1.0]


@pytest.mark.parametrize(("blob", "dim"), [(b"\x00\x00\x80", None), (b"\x00" * 8, 3)])
def test_a_blob_of_the_wrong_size_is_a_clear_error(blob: bytes, dim: int | None) -> None:
    with pytest.raises(BadVector, match="does not hold"):
        unpack(blob, dim)


def test_pack_refuses_a_matrix() -> None:
    with pytest.raises(BadVector, match="one vector"):
        pack(np.zeros((2, 3)))


def test_stack_builds_one_matrix_and_checks_every_size() -> None:
    rows = [np.arange(4, dtype=np.float32) + i for i in range(3)]
    matrix = stack([pack(r) for r in rows], 4)
    assert matrix.shape == (3, 4) and np.array_equal(matrix[2], rows[2])
    assert stack([], 4).shape == (0, 4)
    with pytest.raises(BadVector):
        stack([pack(rows[0]), b"\x00" * 12], 4)


def unit_rows(rng: np.random.Generator, n: int, d: int = 16) -> np.ndarray:
    m = rng.standard_normal((n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


@given(st.integers(1, 60), st.integers(0, 70), st.integers(0, 2**31))
def test_top_k_equals_a_full_sort(n: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = unit_rows(rng, n)
    query = matrix[rng.integers(n)]
    idx, scores = cosine_top_k(query, matrix, k)
    full = matrix @ query
    expected = np.argsort(-full, kind="stable")[:min(k, n)]
    assert np.allclose(scores, full[expected])
    assert np.all(np.diff(scores) <= 0)
    assert len(set(idx.tolist())) == len(idx) == min(k, n)


def test_the_query_itself_comes_first() -> None:
    matrix = unit_rows(np.random.default_rng(1), 100)
    idx, scores = cosine_top_k(matrix[42], matrix, 3)
    assert idx[0] == 42 and scores[0] == pytest.approx(1.0)


def test_top_k_refuses_a_query_of_the_wrong_size() -> None:
    with pytest.raises(BadVector):
        cosine_top_k(np.zeros(3), np.zeros((5, 4), dtype=np.float32), 2)


def test_top_k_per_owner_ranks_owners_by_their_best_row() -> None:
    q = np.array([1.0, 0.0], dtype=np.float32)
    matrix = np.array([[0.0, 1.0], [0.6, 0.8], [0.8, 0.6], [1.0, 0.0], [0.0, -1.0]],
                      dtype=np.float32)
    owners = [5, 5, 2, 7, 2]
    idx, scores = top_k_per_owner(q, matrix, owners, 10)
    assert idx.tolist() == [7, 2, 5]
    assert scores.tolist() == pytest.approx([1.0, 0.8, 0.6])
    assert top_k_per_owner(q, matrix, owners, 1)[0].tolist() == [7]
    assert top_k_per_owner(q, matrix[:0], [], 3)[0].size == 0
