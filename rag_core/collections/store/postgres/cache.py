"""Each process's cache of what it read from PostgreSQL: per collection version, the chunks with
TF-IDF and BM25 ready to search (loaded from the stored files, or fitted when they are missing
or damaged), and per vectors generation, the dense vectors."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import OrderedDict

import numpy as np

from rag_core.collections.store.lexical_state import LexicalState, lexical_state_from_bytes
from rag_core.collections.store.postgres.codecs import chunk_from_row
from rag_core.collections.store.postgres.disk_copy import keep_copy
from rag_core.index.build import RagIndex, build_index_from_chunks
from rag_core.index.lexical import TfidfScorer
from rag_core.settings import PG_INDEX_CACHE_ENTRIES

log = logging.getLogger(__name__)


@dataclasses.dataclass
class LexicalIndex:
    """A version's chunks with TF-IDF and BM25 built, and where each chunk row is."""

    index: RagIndex
    row_keys: np.ndarray  # (document row id, seq) of each chunk, in index order
    _positions: dict | None = None

    @property
    def positions(self) -> dict[tuple[int, int], int]:
        if self._positions is None:
            self._positions = {(int(a), int(b)): i for i, (a, b) in enumerate(self.row_keys)}
        return self._positions


lexical_cache: OrderedDict[tuple, LexicalIndex] = OrderedDict()
vector_cache: OrderedDict[tuple, tuple[np.ndarray | None, np.ndarray]] = OrderedDict()
_cache_lock = threading.Lock()
_build_locks: dict[tuple, threading.Lock] = {}


def cached(cache: OrderedDict, key: tuple):
    with _cache_lock:
        value = cache.get(key)
        if value is not None:
            cache.move_to_end(key)
        return value


def remember(cache: OrderedDict, key: tuple, value) -> None:
    with _cache_lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > PG_INDEX_CACHE_ENTRIES:
            cache.popitem(last=False)


def build_lock(key: tuple) -> threading.Lock:
    """One lock per cache key, so threads of a process build a version's index once."""
    with _cache_lock:
        return _build_locks.setdefault(key, threading.Lock())


def fit_lexical(chunks: list[dict], settings: dict) -> RagIndex:
    """TF-IDF and BM25 fitted over ``chunks``, exactly as the folder store fits a segment (no vectors)."""
    return build_index_from_chunks(chunks, embedding_model=settings["embedding_model"], compute_embeddings=False,
                                   chunk_size=settings["chunk_size"], overlap=settings["overlap"])


def index_from_stored(files: dict[str, bytes], chunks: list[dict], settings: dict, *,
                      digests: dict[str, str] | None = None) -> RagIndex:
    """A :class:`RagIndex` (no vectors) from the stored TF-IDF/BM25 files and the chunks (with
    ``digests``, the files' checksums: read from this machine's disk copy, made here)."""
    state = keep_copy(files, digests, n_chunks=len(chunks)) if digests else None
    return index_from_state(state or lexical_state_from_bytes(files, n_chunks=len(chunks)), chunks, settings)


def index_from_state(state: LexicalState, chunks: list[dict], settings: dict) -> RagIndex:
    return RagIndex(chunks=chunks, vectorizer=state.vectorizer, matrix=state.matrix, embeddings=None,
                    embedding_model=settings["embedding_model"], chunk_size=settings["chunk_size"],
                    overlap=settings["overlap"], bm25=state.bm25)


def build_lexical(name: str, settings: dict, rows: list[tuple], files: dict[str, bytes] | None, *,
                  state: LexicalState | None = None, digests: dict[str, str] | None = None) -> LexicalIndex:
    """The searchable lexical index of a version from its chunk rows: ``state`` (read from this
    machine's disk copy) or the stored ``files`` when they can be read, else fitted again
    (``check-store`` reports that)."""
    chunks = [chunk_from_row(text, escaped, meta) for _doc, _seq, text, escaped, meta in rows]
    index = None if state is None else index_from_state(state, chunks, settings)
    if index is None and files:
        try:
            index = index_from_stored(files, chunks, settings, digests=digests)
        except (KeyError, TypeError, ValueError, OSError) as exc:  # damaged: fit again (check-store says so)
            log.warning("Collection %r: stored TF-IDF/BM25 unusable (%s); fitting them again", name, exc)
    if index is None:
        index = fit_lexical(chunks, settings)
    index._tfidf_scorer = TfidfScorer(index.tfidf_model, index.tfidf_matrix)
    keys = np.array([(doc, seq) for doc, seq, *_ in rows], dtype=np.int64).reshape(len(rows), 2)
    return LexicalIndex(index, keys)
