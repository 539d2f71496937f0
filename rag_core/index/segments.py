"""An index made of segments: several stored indexes searched as one.

A large collection keeps its chunks in segments of at most
:data:`~rag_core.settings.SEGMENT_MAX_CHUNKS` (Lucene's idea): an ingest adds a segment
instead of refitting TF-IDF and BM25 over a million chunks, and small neighbouring segments
are merged later. :class:`SegmentedIndex` reads like a :class:`~rag_core.index.build.RagIndex`
to the searches: its ``chunks`` run through the segments in order, each score is the
concatenation of the segments' scores, the query is embedded once.

TF-IDF and BM25 statistics (vocabulary, idf, average length) are each segment's own, so
scores of two segments are not on exactly the same scale: for the large collections that
have several segments, the price of adding documents in seconds instead of minutes. A
collection up to ``SEGMENT_MAX_CHUNKS`` is one segment: one TF-IDF matrix over all chunks,
as the contract says.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from rag_core.index.chunk_table import chunk_sources_mask
from rag_core.settings import SEGMENT_THREADS

if TYPE_CHECKING:
    from rag_core.index.build import RagIndex

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def segment_pool() -> ThreadPoolExecutor:
    """Threads that search segments side by side (shared by every segmented index of the process)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=SEGMENT_THREADS, thread_name_prefix="rag-core-segment")
        return _pool


class ConcatChunks(Sequence):
    """The chunks of several segments, in order, as one sequence."""

    def __init__(self, parts: Sequence[Sequence[dict]]):
        self.parts = list(parts)
        self.offsets = [0]
        for part in self.parts:
            self.offsets.append(self.offsets[-1] + len(part))

    def __len__(self) -> int:
        return self.offsets[-1]

    def locate(self, i: int) -> tuple[int, int]:
        """``(segment, row in it)`` of chunk ``i``."""
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("chunk index out of range")
        k = bisect_right(self.offsets, i) - 1
        return k, i - self.offsets[k]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        k, j = self.locate(i)
        return self.parts[k][j]

    def __iter__(self) -> Iterator[dict]:
        for part in self.parts:
            yield from part

    def mask_of_sources(self, sources) -> np.ndarray:
        return np.concatenate([chunk_sources_mask(part, sources) for part in self.parts]) if self.parts \
            else np.zeros(0, dtype=bool)


class EmbeddingsView:
    """The segments' vector matrices read as one (rows by index; never copied as a whole
    unless asked for with ``np.asarray``)."""

    def __init__(self, parts: Sequence[np.ndarray | None], offsets: Sequence[int], dim: int):
        self.parts = list(parts)
        self.offsets = list(offsets)
        self.dim = dim

    @property
    def shape(self) -> tuple[int, int]:
        return (self.offsets[-1], self.dim)

    def __len__(self) -> int:
        return self.offsets[-1]

    def _row(self, i: int) -> np.ndarray:
        k = bisect_right(self.offsets, i) - 1
        part = self.parts[k]
        return np.zeros(self.dim, dtype=np.float32) if part is None else np.asarray(part[i - self.offsets[k]])

    def __getitem__(self, rows):
        if isinstance(rows, (int, np.integer)):
            i = int(rows) + (len(self) if rows < 0 else 0)
            return self._row(i)
        rows = np.arange(len(self))[rows] if isinstance(rows, slice) else np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        return np.stack([self._row(int(i)) for i in rows]) if len(rows) else np.zeros((0, self.dim), np.float32)

    def __array__(self, dtype=None, copy=None):
        out = np.zeros(self.shape, dtype=np.float32)
        for k, part in enumerate(self.parts):
            if part is not None:
                out[self.offsets[k]:self.offsets[k + 1]] = part
        return out if dtype is None else out.astype(dtype)


class SegmentedIndex:
    """Several :class:`RagIndex` segments searched as one index (see the module docstring)."""

    def __init__(self, parts: Sequence[RagIndex]):
        if not parts:
            raise ValueError("a segmented index needs at least one segment")
        self.parts = list(parts)
        self.chunks = ConcatChunks([p.chunks for p in self.parts])
        self.offsets = self.chunks.offsets
        first = self.parts[0]
        self.embedding_model = first.embedding_model
        self.encoder = next((p.encoder for p in self.parts if p.encoder), None)
        self.chunk_size, self.overlap = first.chunk_size, first.overlap
        dims = {p.embeddings.shape[1] for p in self.parts if p.embeddings is not None}
        if len(dims) > 1:
            raise ValueError(f"the segments' vectors have different dimensions: {sorted(dims)}")
        self.embeddings = None if not dims else EmbeddingsView([p.embeddings for p in self.parts], self.offsets,
                                                               dims.pop())
        self.ann = next((p.ann for p in self.parts if p.ann is not None), None)

    def __len__(self) -> int:
        return len(self.chunks)

    @property
    def has_vectors(self) -> bool:
        return self.embeddings is not None

    def vectors_at(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(vectors, present)`` of the given rows, or None without vectors (as :meth:`RagIndex.vectors_at`)."""
        if self.embeddings is None:
            return None
        rows = np.asarray(rows, dtype=np.int64)
        mask = self.dense_mask
        return (np.asarray(self.embeddings[rows], dtype=np.float32),
                np.ones(len(rows), dtype=bool) if mask is None else mask[rows])

    @property
    def sources(self) -> list[str]:
        return list(dict.fromkeys(s for p in self.parts for s in p.sources))

    @property
    def dense_mask(self) -> np.ndarray | None:
        if self.embeddings is None:
            return None
        masks = [np.zeros(len(p.chunks), dtype=bool) if p.embeddings is None else
                 (np.ones(len(p.chunks), dtype=bool) if p.dense_mask is None else p.dense_mask) for p in self.parts]
        mask = np.concatenate(masks)
        return None if mask.all() else mask

    @property
    def dense_coverage(self) -> tuple[int, int]:
        return sum(p.dense_coverage[0] for p in self.parts), len(self)

    def _concat(self, arrays: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(a, dtype=np.float32) for a in arrays]) if arrays else np.zeros(0, np.float32)

    def tfidf_scores(self, query: str) -> np.ndarray:
        return self._concat([p.tfidf_scores(query) for p in self.parts])

    def bm25_scores(self, query: str) -> np.ndarray:
        return self._concat([p.bm25_scores(query) for p in self.parts])

    def query_vector(self, query: str, embedding_model: str | None = None) -> np.ndarray:
        carrier = next(p for p in self.parts if p.embeddings is not None)
        return carrier.query_vector(query, embedding_model)

    def _share_query_vector(self, query: str) -> None:
        vector = self.query_vector(query)
        for part in self.parts:
            if part.embeddings is not None:
                part._query_vector = (part.query_key(query), vector)

    def dense_scores(self, query: str, embedding_model: str | None = None) -> np.ndarray:
        if self.embeddings is None:
            raise ValueError("this index was built without embeddings (compute_embeddings=False)")
        self._share_query_vector(query)
        return self._concat([np.zeros(len(p.chunks), np.float32) if p.embeddings is None
                             else p.dense_scores(query, embedding_model) for p in self.parts])

    def dense_top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest chunks over every segment (each answers its own top ``k``)."""
        self._share_query_vector(query)
        parts = [(offset, part) for offset, part in zip(self.offsets, self.parts, strict=False)
                 if part.embeddings is not None]
        if SEGMENT_THREADS > 1 and sum(part.ann is not None for _, part in parts) > 1:
            found = list(segment_pool().map(lambda item: item[1].dense_top(query, k), parts))
        else:
            found = [part.dense_top(query, k) for _, part in parts]
        rows = [r + offset for (offset, _), (r, _) in zip(parts, found, strict=True)]
        cosines = [c for _, c in found]
        if not rows:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        rows_all, cos_all = np.concatenate(rows), np.concatenate(cosines)
        order = np.lexsort((rows_all, -cos_all))[:k]
        return rows_all[order], cos_all[order]

    def _by_segment(self, rows: np.ndarray, fill: float, each) -> np.ndarray:
        """``each(part, its rows)`` for the rows in every segment, put back in ``rows`` order."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.full(len(rows), fill, dtype=np.float32)
        segment = np.searchsorted(self.offsets, rows, side="right") - 1
        for k in np.unique(segment):
            at = segment == k
            out[at] = each(self.parts[int(k)], rows[at] - self.offsets[int(k)])
        return out

    def tfidf_at(self, query: str, rows: np.ndarray) -> np.ndarray:
        return self._by_segment(rows, 0.0, lambda part, local: part.tfidf_at(query, local))

    def dense_at(self, query: str, rows: np.ndarray) -> np.ndarray:
        self._share_query_vector(query)
        return self._by_segment(rows, np.nan, lambda part, local: part.dense_at(query, local))
