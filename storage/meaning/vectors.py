"""Sentence vectors as database values, and brute-force nearest neighbours in numpy.

A vector is stored as a BLOB of little-endian float32 (384 of them = 1,536 bytes for
all-MiniLM-L6-v2), the same bytes on every machine. Vectors are unit length (storage.meaning.embedder
makes them so), so cosine similarity is a dot product: one matrix-vector product over all of a
vault's vectors (~1 ms per 10k on two cores, see docs/performance.md) needs no ANN index.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

DIM = 384  # all-MiniLM-L6-v2 (storage.meaning.embedder.DIM)
DTYPE = np.dtype("<f4")
Matrix = npt.NDArray[np.float32]


class BadVector(ValueError):
    """A BLOB that is not a float32 vector of the expected size."""


def pack(vector: npt.ArrayLike) -> bytes:
    """One 1-D vector as bytes (little-endian float32)."""
    array = np.asarray(vector, dtype=DTYPE)
    if array.ndim != 1:
        raise BadVector(f"expected one vector, got shape {array.shape}")
    return array.tobytes()


def unpack(blob: bytes, dim: int | None = None) -> Matrix:
    """The vector stored in `blob` (a read-only view; copy it to change it)."""
    if len(blob) % DTYPE.itemsize or (dim is not None and len(blob) != dim * DTYPE.itemsize):
        want = f"{dim} floats" if dim is not None else "whole floats"
        raise BadVector(f"a vector BLOB of {len(blob)} bytes does not hold {want}")
    return np.frombuffer(blob, dtype=DTYPE).astype(np.float32, copy=False)


def stack(blobs: Sequence[bytes], dim: int) -> Matrix:
    """Many stored vectors as one (n, dim) matrix, in one copy."""
    size = dim * DTYPE.itemsize
    if any(len(b) != size for b in blobs):
        raise BadVector(f"every vector BLOB must be {size} bytes ({dim} floats)")
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype=DTYPE).reshape(len(blobs), dim).astype(
        np.float32, copy=False)


def cosine_top_k(query: npt.ArrayLike, matrix: Matrix,
                 k: int) -> tuple[npt.NDArray[np.intp], Matrix]:
    """Row indices and scores of the k rows most similar to `query`, best first.

    Rows and query are unit vectors, so the score is their cosine similarity.
    """
    q = np.asarray(query, dtype=np.float32)
    if matrix.ndim != 2 or q.shape != (matrix.shape[1],):
        raise BadVector(f"query of shape {q.shape} against a matrix of shape {matrix.shape}")
    return top_k_scores(matrix @ q, k)


def top_k_per_owner(query: npt.ArrayLike, matrix: Matrix, owners: npt.ArrayLike,
                    k: int) -> tuple[npt.NDArray[np.intp], Matrix]:
    """The k owners (e.g. notes with several window vectors) whose best row is most similar.

    `owners[i]` is a small non-negative integer naming the owner of row i. Returns the owner
    numbers and their best scores, best first.
    """
    q = np.asarray(query, dtype=np.float32)
    own = np.asarray(owners, dtype=np.intp)
    if matrix.ndim != 2 or q.shape != (matrix.shape[1],) or own.shape != (matrix.shape[0],):
        raise BadVector("query, matrix and owners do not fit together")
    if own.size == 0 or k <= 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
    scores = matrix @ q
    best = np.full(int(own.max()) + 1, -np.inf, dtype=np.float32)
    np.maximum.at(best, own, scores)
    present = np.flatnonzero(best > -np.inf)
    top, top_scores = top_k_scores(best[present], k)
    return present[top], top_scores


def top_k_scores(scores: Matrix, k: int) -> tuple[npt.NDArray[np.intp], Matrix]:
    """Indices and values of the k largest scores, largest first (ties: lower index first)."""
    n = scores.shape[0]
    k = max(0, min(k, n))
    if k == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
    # argpartition finds the k best in O(n); only those k get sorted.
    best = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    best = best[np.argsort(-scores[best], kind="stable")]
    return best, scores[best]
