"""Approximate nearest neighbours for the dense stage of large indexes (usearch HNSW).

Below :data:`~rag_core.settings.ANN_MIN_CHUNKS` chunks the dense stage is one exact
matrix-vector product; above it the product touches every vector of the index for each
query (1.5 GB at a million chunks), so an HNSW graph answers the dense top-k instead and
exact inner products are computed only for the candidates that fusion needs. The graph
stores float16 copies of the unit vectors and is memory-mapped on load (``view=True``), so a
query process maps it instead of reading it. Recall@10 against exact search is measured in
``benchmarks/bench_million.py`` (docs/benchmarks.md).
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import numpy as np

from rag_core.settings import ANN_CONNECTIVITY, ANN_EXPANSION_ADD, ANN_EXPANSION_SEARCH

ANN_FILE = "ann.usearch"


def _usearch_index():
    """usearch's ``Index`` class, with onnxruntime loaded first when it is installed: loaded
    after usearch's extension, onnxruntime's own crashes the process (SIGSEGV while importing
    it; usearch 2.26.6 with onnxruntime 1.32.0; the other order is fine), and the query encoder
    loads it later in the same process (the app's server: a large collection opened before the
    model's warm-up had loaded it took the whole server down)."""
    if importlib.util.find_spec("onnxruntime") is not None:
        import onnxruntime  # noqa: F401

    from usearch.index import Index

    return Index


class AnnIndex:
    """An HNSW graph over the rows of a unit-vector matrix; keys are row numbers."""

    def __init__(self, index):
        self._index = index
        # one search at a time on a graph (usearch's per-index search state is not for concurrent
        # callers); searches of different segments' graphs run in parallel
        self._lock = threading.Lock()

    @classmethod
    def build(cls, vectors: np.ndarray, *, rows: np.ndarray | None = None, threads: int = 0) -> AnnIndex:
        """A graph of ``vectors[rows]`` (all rows by default), keyed by row number."""
        Index = _usearch_index()

        vectors = np.asarray(vectors, dtype=np.float32)
        keys = np.arange(len(vectors), dtype=np.uint64) if rows is None else np.asarray(rows, dtype=np.uint64)
        index = Index(ndim=vectors.shape[1], metric="ip", dtype="f16", connectivity=ANN_CONNECTIVITY,
                      expansion_add=ANN_EXPANSION_ADD, expansion_search=ANN_EXPANSION_SEARCH)
        if len(keys):
            index.add(keys, vectors if rows is None else vectors[np.asarray(rows)], threads=threads)
        return cls(index)

    def save(self, path: str | Path) -> None:
        self._index.save(str(path))

    @classmethod
    def load(cls, path: str | Path, *, view: bool = True) -> AnnIndex:
        Index = _usearch_index()

        index = Index.restore(str(path), view=view)
        if index is None:
            raise ValueError(f"{Path(path).name} is not a usearch index")
        index.expansion_search = ANN_EXPANSION_SEARCH
        return cls(index)

    def __len__(self) -> int:
        return len(self._index)

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cosines)`` of the ``k`` nearest rows, best first."""
        k = min(int(k), len(self._index))
        if k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        with self._lock:
            matches = self._index.search(np.asarray(query, dtype=np.float32), k)
        rows = np.asarray(matches.keys, dtype=np.int64)
        cosines = 1.0 - np.asarray(matches.distances, dtype=np.float32)  # usearch's "ip" distance is 1 - ip
        return rows, cosines
