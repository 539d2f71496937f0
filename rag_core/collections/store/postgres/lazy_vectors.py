"""The dense vectors of a PostgreSQL collection with an HNSW index, read when first needed.

Hybrid search there asks pgvector's HNSW index for the dense candidates and needs the vectors
of a hundred or so chunks, not all of them: a cold ``load_index`` reads the chunks and which of
them have a vector (issue 21: reading 100k vectors was half of a 3 s cold load), and the few
rows a search needs are read by their keys. The whole matrix is read on first use of
``index.embeddings`` (an evaluation, the lab's optimiser, a copy), once per process and vectors
generation.
"""

from __future__ import annotations

import threading

import numpy as np

from rag_core.collections.store.postgres.rows import CollectionRow, load_vectors, vectors_by_key
from rag_core.errors import CollectionError


class LazyVectors:
    """A loaded version's vectors: ``mask`` (which chunks have one) known at load, the rows a
    search asks for read by key, the whole matrix read on first :meth:`matrix`."""

    def __init__(self, store, row: CollectionRow, mask: np.ndarray, row_keys: np.ndarray):
        self._store, self._row, self._row_keys = store, row, row_keys
        self.mask = mask
        self._matrix: np.ndarray | None = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return int(self._row.dim)

    @property
    def loaded(self) -> bool:
        return self._matrix is not None

    def matrix(self) -> np.ndarray:
        """Every chunk's vector (zeros where ``mask`` is False), read once."""
        with self._lock:
            if self._matrix is None:
                with self._store._read() as conn:
                    matrix, mask = load_vectors(conn, self._row, self._row.live, self._store.engine.vector_oid)
                if len(mask) != len(self.mask) or bool((self.mask & ~mask).any()):
                    raise CollectionError(
                        f"The collection {self._row.name!r} changed since its index was loaded; load it again.")
                if matrix is None:  # cannot be: the mask said some chunk has a vector
                    matrix = np.zeros((len(self.mask), self.dim), dtype=np.float32)
                self._matrix = matrix
            return self._matrix

    def rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, present)`` of the index rows ``rows``: from the matrix once it is read,
        else by their keys in one query."""
        rows = np.asarray(rows, dtype=np.int64)
        if self._matrix is not None:
            return np.asarray(self._matrix[rows], dtype=np.float32), self.mask[rows]
        with self._store.engine.connection() as conn:
            vectors, present = vectors_by_key(conn, self._row_keys[rows], self.dim, self._store.engine.vector_oid)
        return vectors, present & self.mask[rows]
