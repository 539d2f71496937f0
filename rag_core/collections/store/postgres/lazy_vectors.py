"""The dense vectors of a PostgreSQL collection with an HNSW index, read when first needed.

Hybrid search there asks pgvector's HNSW index for the dense candidates and needs the vectors
of a hundred or so chunks, not all of them: a cold ``load_index`` reads the chunks and which of
them have a vector (issue 21: reading 100k vectors was half of a 3 s cold load), and the few
rows a search needs come with the HNSW candidates or are read by their keys. The whole matrix is read on first use of
``index.embeddings`` (an evaluation, the lab's optimiser, a copy), once per process and vectors
generation.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from rag_core.collections.store.postgres.codecs import vectors_from_raw
from rag_core.collections.store.postgres.rows import CollectionRow, load_vectors, vectors_by_key
from rag_core.errors import CollectionError

KNOWN_ROWS = 4096  # vectors kept from the rows searches read lately (6 MB at 384 dimensions)


class LazyVectors:
    """A loaded version's vectors: ``mask`` (which chunks have one) known at load, the rows a
    search asks for read by key, the whole matrix read on first :meth:`matrix`."""

    def __init__(self, store, row: CollectionRow, mask: np.ndarray, row_keys: np.ndarray):
        self._store, self._row, self._row_keys = store, row, row_keys
        self.mask = mask
        self._matrix: np.ndarray | None = None
        self._lock = threading.Lock()
        self._known: OrderedDict[int, np.ndarray] = OrderedDict()  # rows read lately (the HNSW candidates')

    def remember(self, rows: np.ndarray, raw: list[bytes | None]) -> None:
        """Keep the vectors (pgvector's binary form) that came with ``rows``: the search that
        asked for them reads them next."""
        vectors, present = vectors_from_raw(raw, self.dim)
        if vectors is not None:
            self._keep(np.asarray(rows)[present], vectors[present])

    def _keep(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        with self._lock:
            for row, vector in zip(rows.tolist(), vectors, strict=True):
                self._known[row] = vector
                self._known.move_to_end(row)
            while len(self._known) > KNOWN_ROWS:
                self._known.popitem(last=False)

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
        else those that came with the HNSW candidates or were read lately, and the rest by their
        keys in one query."""
        rows = np.asarray(rows, dtype=np.int64)
        if self._matrix is not None:
            return np.asarray(self._matrix[rows], dtype=np.float32), self.mask[rows]
        vectors = np.zeros((len(rows), self.dim), dtype=np.float32)
        present = np.zeros(len(rows), dtype=bool)
        with self._lock:
            for n, row in enumerate(rows.tolist()):
                known = self._known.get(row)
                if known is not None:
                    vectors[n], present[n] = known, True
        wanted = np.flatnonzero(~present & self.mask[rows])
        if len(wanted):
            with self._store.engine.connection() as conn:
                found, has = vectors_by_key(conn, self._row_keys[rows[wanted]], self.dim,
                                            self._store.engine.vector_oid)
            vectors[wanted], present[wanted] = found, has
            self._keep(rows[wanted][has], found[has])
        return vectors, present & self.mask[rows]
