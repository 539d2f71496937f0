"""A sparse matrix kept by column as three arrays (SciPy's CSC layout), read without SciPy.

A stored index keeps its TF-IDF matrix and its BM25 scores by column: the posting list of
each term, which is all a query reads (:mod:`rag_core.collections.store.lexical_state`).
:class:`Postings` holds the three arrays, memory-mapped or in memory, with the attributes a
scorer reads of a ``scipy.sparse.csc_matrix`` (``indptr``, ``indices``, ``data``, ``shape``,
``nnz``, ``format``, ``has_sorted_indices``); ``to_scipy()`` makes the SciPy matrix (no copy)
when someone asks for it. Importing ``scipy.sparse`` took ~0.1 s of a 0.4 s ``rag-core
search``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Postings", "add_columns"]

_SORT_CHECK_BLOCK = 1 << 22  # entries checked at a time: bounded memory for a large segment


class Postings:
    """Column ``j`` holds rows ``indices[indptr[j]:indptr[j + 1]]`` with values ``data[...]``."""

    format = "csc"

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]):
        if indptr.ndim != 1 or len(indptr) != shape[1] + 1 or len(data) != len(indices) or (
                len(indptr) and int(indptr[-1]) != len(data)):
            raise ValueError("the posting arrays disagree with each other")
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = (int(shape[0]), int(shape[1]))
        self._sorted: bool | None = None

    @property
    def nnz(self) -> int:
        return len(self.data)

    @property
    def has_sorted_indices(self) -> bool:
        """Whether every column's row numbers are in increasing order (checked once, in blocks)."""
        if self._sorted is None:
            self._sorted = _columns_sorted(self.indices, self.indptr)
        return self._sorted

    def to_scipy(self):
        """The same matrix as ``scipy.sparse.csc_matrix`` (the arrays are shared, not copied)."""
        import scipy.sparse as sp

        return sp.csc_matrix((self.data, self.indices, self.indptr), shape=self.shape, copy=False)

    tocsc = to_scipy

    def __repr__(self) -> str:
        return f"Postings(shape={self.shape}, nnz={self.nnz})"


def _columns_sorted(indices: np.ndarray, indptr: np.ndarray) -> bool:
    n = len(indices)
    if n < 2:
        return True
    starts = np.asarray(indptr[1:-1], dtype=np.int64)  # where a new column begins
    for lo in range(0, n - 1, _SORT_CHECK_BLOCK):
        hi = min(lo + _SORT_CHECK_BLOCK, n - 1)  # pairs (k, k + 1) for k in [lo, hi)
        rising = np.asarray(indices[lo + 1:hi + 1], dtype=np.int64) > np.asarray(indices[lo:hi], dtype=np.int64)
        at = starts[(starts > lo) & (starts <= hi)] - 1 - lo  # a pair that crosses into a new column
        rising[at] = True
        if not rising.all():
            return False
    return True


def add_columns(postings, columns, *, n_rows: int, dtype=np.float32) -> np.ndarray:
    """The sum of the given columns (a column named twice counts twice) as a dense vector of
    ``n_rows``, accumulated in ``dtype`` column by column in the order given (as bm25s adds
    a query's BM25 scores, so the sums are the same to the last bit)."""
    out = np.zeros(n_rows, dtype=dtype)
    indptr, indices, data = postings.indptr, postings.indices, postings.data
    for j in columns:
        start, end = int(indptr[j]), int(indptr[j + 1])
        if start < end:
            np.add.at(out, indices[start:end], data[start:end])
    return out
