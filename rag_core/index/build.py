"""``RagIndex``: chunks, the TF-IDF matrix, dense embeddings and (lazily) BM25."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rag_core.index.lexical import BM25Index, TfidfScorer, fit_tfidf
from rag_core.index.mapped import read_rows
from rag_core.index.postings import Postings
from rag_core.index.products import matvec
from rag_core.index.tfidf import TfidfTerms
from rag_core.models.embedding import DEFAULT_LONG_TEXT, encode_passages, encode_query
from rag_core.models.loading import load_bi_encoder
from rag_core.models.query_head import active_query_head
from rag_core.text.chunking import chunk_text

if TYPE_CHECKING:
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import TfidfVectorizer

    from rag_core.index.ann import AnnIndex
from rag_core.settings import ANN_OVERFETCH, CHUNK_OVERLAP_CHARS, CHUNK_SIZE_CHARS, DEFAULT_EMBEDDING_MODEL


def index_text(chunk: dict) -> str:
    """What BM25 and the bi-encoder read of a chunk: its ``context`` (document title and section
    heading, :mod:`rag_core.text.passage_context`) on a line before its text, or just the text.
    TF-IDF (the contract's), exact search and the cross-encoder read the text alone."""
    context = chunk.get("context")
    return f"{context}\n{chunk['text']}" if context else chunk["text"]


@dataclass
class RagIndex:
    """A searchable set of chunks.

    ``chunks`` are dicts with at least ``text`` and ``source``; ``matrix`` holds their
    unit-normalised TF-IDF rows; ``embeddings`` their unit-normalised dense vectors, or
    None when built without embeddings. While a collection's vectors are still being
    computed, ``dense_mask`` says which rows of ``embeddings`` hold one (None: all do).
    ``encoder`` is the bi-encoder variant that made the vectors ("torch", "onnx-int8", ...);
    queries are encoded with the same one.

    A stored index gives ``vectorizer`` as its :class:`~rag_core.index.tfidf.TfidfTerms` and
    ``matrix`` as its :class:`~rag_core.index.postings.Postings`: searches read those
    (``tfidf_model``, ``tfidf_matrix``), and ``index.vectorizer`` / ``index.matrix`` turn them
    into scikit-learn's ``TfidfVectorizer`` and SciPy's sparse matrix the first time they are
    read (importing scikit-learn takes ~1 s, SciPy ~0.1 s; a search needs neither).
    """

    chunks: list[dict]
    vectorizer: TfidfVectorizer = field(repr=False, compare=False)
    matrix: sp.csr_matrix = field(repr=False, compare=False)
    embeddings: np.ndarray | None = None
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    chunk_size: int = CHUNK_SIZE_CHARS
    overlap: int = CHUNK_OVERLAP_CHARS
    bm25: BM25Index | None = field(default=None, repr=False)
    dense_mask: np.ndarray | None = field(default=None, repr=False)
    encoder: str | None = None
    ann: AnnIndex | None = field(default=None, repr=False, compare=False)
    _query_vector: tuple | None = field(default=None, repr=False, compare=False)
    _tfidf_scorer: TfidfScorer | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.tfidf_matrix.shape[0] != len(self.chunks):
            raise ValueError(f"TF-IDF matrix has {self.tfidf_matrix.shape[0]} rows for {len(self.chunks)} chunks")
        if self.embeddings is not None and len(self.embeddings) != len(self.chunks):
            raise ValueError(f"{len(self.embeddings)} embeddings for {len(self.chunks)} chunks")
        if self.dense_mask is not None:
            if self.embeddings is None or len(self.dense_mask) != len(self.chunks):
                raise ValueError("dense_mask needs embeddings and one flag per chunk")
            if bool(np.all(self.dense_mask)):
                self.dense_mask = None

    @property
    def has_vectors(self) -> bool:
        """Whether any chunk has a dense vector (without reading them all where they are read
        on first use, as a PostgreSQL index with an HNSW index does)."""
        return self.embeddings is not None

    def vectors_at(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(vectors, present)`` of the given rows (float32, zeros where ``present`` is False),
        or None when the index has no vectors."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.embeddings is None:
            return None
        vectors = np.asarray(read_rows(self.embeddings, rows), dtype=np.float32)  # a few rows: read, not mapped
        present = np.ones(len(rows), dtype=bool) if self.dense_mask is None else self.dense_mask[rows]
        return vectors, present

    @property
    def dense_coverage(self) -> tuple[int, int]:
        """``(chunks with a dense vector, all chunks)``."""
        if not self.has_vectors:
            return 0, len(self.chunks)
        if self.dense_mask is None:
            return len(self.chunks), len(self.chunks)
        return int(np.count_nonzero(self.dense_mask)), len(self.chunks)

    def __len__(self) -> int:
        return len(self.chunks)

    @property
    def sources(self) -> list[str]:
        """Distinct sources, in the order they first appear."""
        return list(dict.fromkeys(c["source"] for c in self.chunks))

    @property
    def tfidf_model(self) -> TfidfVectorizer | TfidfTerms:
        """The fitted TF-IDF as given: a ``TfidfVectorizer`` or the ``TfidfTerms`` of a stored
        index (vocabulary, idf, analyzer: all a search reads)."""
        return self.__dict__["_tfidf_model"]

    @property
    def tfidf_matrix(self) -> sp.spmatrix | Postings:
        """The TF-IDF matrix as given: SciPy's, or the ``Postings`` of a stored index."""
        return self.__dict__["_tfidf_matrix"]

    def _tfidf(self) -> TfidfScorer:
        model, matrix = self.tfidf_model, self.tfidf_matrix
        scorer = self._tfidf_scorer
        if scorer is None or scorer.vectorizer is not model or scorer.source is not matrix:
            self._tfidf_scorer = TfidfScorer(model, matrix)
        return self._tfidf_scorer

    def tfidf_scores(self, query: str) -> np.ndarray:
        return self._tfidf().scores(query)

    def tfidf_at(self, query: str, rows: np.ndarray) -> np.ndarray:
        """TF-IDF cosines of ``rows`` only."""
        return self._tfidf().scores_at(query, rows)

    def bm25_scores(self, query: str) -> np.ndarray:
        if self.bm25 is None:
            self.bm25 = BM25Index.build([index_text(c) for c in self.chunks])
        return self.bm25.scores(query)

    def query_vector(self, query: str, embedding_model: str | None = None) -> np.ndarray:
        """The query's embedding, by the model and encoder variant that made the index's vectors, put
        through the query head when one is in use (the last one is kept: the searches of one
        comparison share it)."""
        key = self.query_key(query, embedding_model)
        if self._query_vector is not None and self._query_vector[0] == key:
            return self._query_vector[1]
        model = load_bi_encoder(embedding_model or self.embedding_model, encoder=self.encoder)
        vector = encode_query(model, query)
        head = active_query_head(embedding_model or self.embedding_model)
        if head is not None:  # the learned query head: query vectors only, chunk vectors as stored
            vector = head.apply(vector)
        self._query_vector = (key, vector)
        return vector

    def query_key(self, query: str, embedding_model: str | None = None) -> tuple:
        """What a query vector depends on: the text, the model, the encoder variant and the query head."""
        model = embedding_model or self.embedding_model
        head = active_query_head(model)
        key = (query, model, self.encoder)
        return key if head is None else (*key, head.sha256)

    def dense_scores(self, query: str, embedding_model: str | None = None) -> np.ndarray:
        """The cosine of every chunk to the query (an exact product over all vectors)."""
        if self.embeddings is None:
            raise ValueError("this index was built without embeddings (compute_embeddings=False)")
        return matvec(self.embeddings, self.query_vector(query, embedding_model))

    def dense_top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cosines)`` of the ``k`` chunks nearest the query, best first, among those with
        a vector: through the HNSW graph when the index has one, else exactly."""
        vector = self.query_vector(query)
        if self.ann is not None:
            # the graph proposes a few more than asked; exact cosines (float32, not the graph's
            # float16 copies) order them, which near-duplicate passages need
            # (a graph whose scores are exact, PostgreSQL's, needs no more than asked)
            ask = int(k) if getattr(self.ann, "exact_scores", False) else max(2 * int(k), ANN_OVERFETCH)
            rows, _ = self.ann.search(vector, ask)
            rows = rows[(rows >= 0) & (rows < len(self.chunks))]
            cosines = self.dense_at(query, rows)
            keep = np.isfinite(cosines)
            rows, cosines = rows[keep], cosines[keep]
            order = np.lexsort((rows, -cosines))[: int(k)]
            return rows[order], cosines[order]
        scores = self.dense_scores(query)
        if self.dense_mask is not None:
            scores = np.where(self.dense_mask, scores, -np.inf)
        from rag_core.index.lexical import top_k

        rows = top_k(scores, k)
        rows = rows[np.isfinite(scores[rows])]
        return rows, scores[rows].astype(np.float32)

    def dense_at(self, query: str, rows: np.ndarray) -> np.ndarray:
        """Exact cosines of the given rows to the query (rows without a vector get NaN)."""
        rows = np.asarray(rows, dtype=np.int64)
        found = self.vectors_at(rows) if len(rows) else None
        if found is None:
            return np.full(len(rows), np.nan, dtype=np.float32)
        vectors, present = found
        values = matvec(vectors, self.query_vector(query)).astype(np.float32)
        values[~present] = np.nan
        return values


def _get_vectorizer(self: RagIndex) -> TfidfVectorizer:
    model = self.__dict__["_tfidf_model"]
    if isinstance(model, TfidfTerms):
        made = self.__dict__.get("_vectorizer_made")
        if made is None or made[0] is not model:
            made = self.__dict__["_vectorizer_made"] = (model, model.to_vectorizer())
        return made[1]
    return model


def _set_vectorizer(self: RagIndex, value) -> None:
    self.__dict__["_tfidf_model"] = value


def _get_matrix(self: RagIndex) -> sp.spmatrix:
    matrix = self.__dict__["_tfidf_matrix"]
    if isinstance(matrix, Postings):
        made = self.__dict__.get("_matrix_made")
        if made is None or made[0] is not matrix:
            made = self.__dict__["_matrix_made"] = (matrix, matrix.to_scipy())
        return made[1]
    return matrix


def _set_matrix(self: RagIndex, value) -> None:
    self.__dict__["_tfidf_matrix"] = value


# ``vectorizer`` and ``matrix`` stay dataclass fields (the contract's constructor arguments);
# reading them builds scikit-learn's and SciPy's objects from a stored index's terms and
# posting lists only when someone asks for them.
RagIndex.vectorizer = property(_get_vectorizer, _set_vectorizer, doc="The fitted TF-IDF vectorizer (scikit-learn).")
RagIndex.matrix = property(_get_matrix, _set_matrix, doc="The unit-normalised TF-IDF matrix (SciPy sparse).")


def build_index_from_chunks(
    chunks: list[dict],
    *,
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    compute_embeddings: bool = True,
    embeddings: np.ndarray | None = None,
    chunk_size: int = CHUNK_SIZE_CHARS,
    overlap: int = CHUNK_OVERLAP_CHARS,
    long_text: str = DEFAULT_LONG_TEXT,
    with_bm25: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> RagIndex:
    """Index prepared chunks; pass ``embeddings`` to reuse vectors already computed."""
    if not chunks:
        raise ValueError("No chunks to index: every document was empty or blank.")
    vectorizer, matrix = fit_tfidf([c["text"] for c in chunks])
    encoder = None
    if embeddings is None and compute_embeddings:
        from rag_core.models.loading import encoder_variant

        model = load_bi_encoder(embedding_model)
        encoder = encoder_variant(model)
        embeddings = encode_passages(model, [index_text(c) for c in chunks], long_text=long_text, progress=progress)
    bm25 = BM25Index.build([index_text(c) for c in chunks]) if with_bm25 else None
    return RagIndex(
        chunks=chunks, vectorizer=vectorizer, matrix=matrix, embeddings=embeddings,
        embedding_model=embedding_model, chunk_size=chunk_size, overlap=overlap, bm25=bm25, encoder=encoder,
    )


def build_index(
    documents: Iterable[tuple[str, str]],
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    compute_embeddings: bool = True,
    chunk_size: int = CHUNK_SIZE_CHARS,
    overlap: int = CHUNK_OVERLAP_CHARS,
    *,
    long_text: str = DEFAULT_LONG_TEXT,
    progress: Callable[[int, int], None] | None = None,
) -> RagIndex:
    """Chunk ``(text, source)`` pairs and index them (TF-IDF, BM25 and, optionally, embeddings).

    Raises ``ValueError`` when there are no chunks at all.
    """
    chunks: list[dict] = []
    for item in documents:
        try:
            text, source = item
        except (TypeError, ValueError):
            raise TypeError(f"documents must be (text, source) pairs, got {item!r:.80}") from None
        chunks.extend(chunk_text(text or "", str(source), chunk_size, overlap))
    return build_index_from_chunks(
        chunks, embedding_model=embedding_model, compute_embeddings=compute_embeddings,
        chunk_size=chunk_size, overlap=overlap, long_text=long_text, progress=progress,
    )
