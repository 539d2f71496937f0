"""Lexical rankings: the contract's TF-IDF (scikit-learn) and BM25 (bm25s)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import bm25s
import numpy as np
import scipy.sparse as sp
import Stemmer

from rag_core.settings import BM25_B, BM25_K1, TFIDF_MAX_FEATURES, TFIDF_NGRAM_RANGE

TFIDF_PARAMS = {
    "stop_words": "english",
    "max_features": TFIDF_MAX_FEATURES,
    "ngram_range": list(TFIDF_NGRAM_RANGE),
}
# k1 and b: see rag_core.settings. Lucene's BM25 variant, English Snowball stemming and stop words.
if TYPE_CHECKING:  # scikit-learn (and scipy.stats under it) takes ~0.9 s to import: only when a TF-IDF is made
    from sklearn.feature_extraction.text import TfidfVectorizer

BM25_DEFAULTS = {"k1": BM25_K1, "b": BM25_B, "method": "lucene", "stemmer": "english", "stopwords": "en"}


_TOKEN_SPLIT = re.compile(r"(?u)\b\w\w+\b").findall


def make_tfidf_vectorizer() -> TfidfVectorizer:
    """English stop words, at most 20,000 features, word 1- and 2-grams (the contract)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(
        stop_words=TFIDF_PARAMS["stop_words"],
        max_features=TFIDF_PARAMS["max_features"],
        ngram_range=tuple(TFIDF_PARAMS["ngram_range"]),
        dtype=np.float32,
    )


def fit_tfidf(texts: Sequence[str]) -> tuple[TfidfVectorizer, sp.csr_matrix]:
    """Fit the vectorizer; rows of the matrix are unit-normalised."""
    vectorizer = make_tfidf_vectorizer()
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:
        # Only stop words (or no words at all): keep a usable, empty vocabulary.
        vectorizer = make_tfidf_vectorizer()
        vectorizer.fit(["placeholder"])
        matrix = sp.csr_matrix((len(texts), len(vectorizer.vocabulary_)), dtype=np.float32)
    return vectorizer, sp.csr_matrix(matrix, dtype=np.float32)


def tfidf_state(vectorizer: TfidfVectorizer) -> tuple[dict, np.ndarray]:
    """The vocabulary and idf weights that rebuild ``vectorizer`` without pickle."""
    vocabulary = {term: int(i) for term, i in vectorizer.vocabulary_.items()}
    return vocabulary, np.asarray(vectorizer.idf_, dtype=np.float32)


def tfidf_from_state(vocabulary: dict, idf: np.ndarray) -> TfidfVectorizer:
    """Rebuild a fitted vectorizer from :func:`tfidf_state`'s output."""
    if len(vocabulary) != len(idf):
        raise ValueError(f"TF-IDF vocabulary has {len(vocabulary)} terms but {len(idf)} idf weights")
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(
        stop_words=TFIDF_PARAMS["stop_words"],
        ngram_range=tuple(TFIDF_PARAMS["ngram_range"]),
        vocabulary={str(k): int(v) for k, v in vocabulary.items()},
        dtype=np.float32,
    )
    vectorizer._validate_vocabulary()
    vectorizer.idf_ = np.asarray(idf, dtype=np.float64)
    return vectorizer


class TfidfScorer:
    """Cosine of every chunk to a query, reading only the query's columns."""

    def __init__(self, vectorizer: TfidfVectorizer, matrix: sp.spmatrix):
        self.vectorizer = vectorizer
        # Column-major (posting lists) is what scoring reads: a stored index keeps its matrix
        # that way, memory-mapped, and is used as it is; a matrix built in memory is converted once.
        self.matrix = matrix if sp.issparse(matrix) and matrix.format in ("csr", "csc") else sp.csr_matrix(matrix)
        self._csc: sp.csc_matrix | None = self.matrix if self.matrix.format == "csc" else None
        self._analyzer = None
        self._idf: np.ndarray | None = None
        self._sorted: bool | None = None  # whether each posting list's chunk numbers are in order

    def query_vector(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Column indices and unit-normalised TF-IDF weights of the query.

        The same numbers as ``vectorizer.transform([query])`` (raw counts times idf, L2
        norm), without scikit-learn's per-call validation, which cost ~8 ms a query.
        """
        if self._analyzer is None:
            self._analyzer = self.vectorizer.build_analyzer()
            self._idf = np.asarray(self.vectorizer.idf_, dtype=np.float64)
        vocabulary = self.vectorizer.vocabulary_
        counts: dict[int, int] = {}
        for term in self._analyzer(query):
            j = vocabulary.get(term)
            if j is not None:
                counts[j] = counts.get(j, 0) + 1
        if not counts:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        cols = np.fromiter(sorted(counts), dtype=np.int64, count=len(counts))
        weights = np.fromiter((counts[j] for j in cols), dtype=np.float64, count=len(cols)) * self._idf[cols]
        weights /= np.linalg.norm(weights)
        return cols, weights.astype(np.float32)

    def scores(self, query: str) -> np.ndarray:
        n = self.matrix.shape[0]
        cols, weights = self.query_vector(query)
        if cols.size == 0:
            return np.zeros(n, dtype=np.float32)
        if self._csc is None:
            self._csc = self.matrix.tocsc()
        indptr, indices, data = self._csc.indptr, self._csc.indices, self._csc.data
        # Read only the query's posting lists (columns) and add them up per chunk.
        rows = [indices[indptr[j]:indptr[j + 1]] for j in cols]
        vals = [data[indptr[j]:indptr[j + 1]] * w for j, w in zip(cols, weights, strict=True)]
        out = np.bincount(np.concatenate(rows), weights=np.concatenate(vals), minlength=n)
        return out.astype(np.float32)

    def scores_at(self, query: str, rows: np.ndarray) -> np.ndarray:
        """The cosines of ``rows`` only (a BM25 or dense list needs ten, not a million): each
        row is looked up in the query's posting lists by binary search (their chunk numbers are
        in order in every index made by ``tocsc``; any other gets the whole column)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=np.float64)
        cols, weights = self.query_vector(query)
        if cols.size == 0 or rows.size == 0:
            return out.astype(np.float32)
        if self._csc is None:
            self._csc = self.matrix.tocsc()
        if self._sorted is None:  # checked once (scipy scans the posting lists in C)
            self._sorted = bool(self._csc.has_sorted_indices)
        if not self._sorted:
            return self.scores(query)[rows]
        indptr, indices, data = self._csc.indptr, self._csc.indices, self._csc.data
        for j, w in zip(cols, weights, strict=True):
            start, end = int(indptr[j]), int(indptr[j + 1])
            if start == end:
                continue
            posting = indices[start:end]
            at = np.searchsorted(posting, rows)
            found = at < len(posting)
            found[found] = posting[at[found]] == rows[found]
            out[found] += float(w) * data[start + at[found]]
        return out.astype(np.float32)


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = False) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first (ties: lower index first)."""
    n = scores.shape[0]
    k = min(int(k), n)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
    else:
        part = np.arange(n)
    order = part[np.lexsort((part, -scores[part]))]
    if positive_only:
        order = order[scores[order] > 0]
    return order


class BM25Index:
    """BM25 over chunk texts with bm25s (Lucene variant, English stemming and stop words)."""

    def __init__(self, retriever, params: dict):
        self.retriever = retriever
        self.params = params
        self._stemmer = Stemmer.Stemmer(params["stemmer"]) if params.get("stemmer") else None
        try:  # bm25s's own tokenizer rules, without its per-call progress-bar machinery
            from bm25s.tokenization import _infer_stopwords

            self._stopwords = frozenset(_infer_stopwords(params["stopwords"]))
        except ImportError:  # pragma: no cover - other bm25s versions
            self._stopwords = None

    @classmethod
    def build(cls, texts: Sequence[str], **params) -> BM25Index:
        params = {**BM25_DEFAULTS, **params}
        stemmer = Stemmer.Stemmer(params["stemmer"]) if params.get("stemmer") else None
        tokens = bm25s.tokenize(
            list(texts), stopwords=params["stopwords"], stemmer=stemmer, show_progress=False
        )
        retriever = bm25s.BM25(k1=params["k1"], b=params["b"], method=params["method"])
        retriever.index(tokens, show_progress=False)
        return cls(retriever, params)

    def tokens(self, query: str) -> list[str]:
        vocab = self.retriever.vocab_dict
        if self._stopwords is None:
            tokenized = bm25s.tokenize(
                query, stopwords=self.params["stopwords"], stemmer=self._stemmer,
                return_ids=False, show_progress=False,
            )[0]
        else:  # the same steps as bm25s.tokenize: lower, \w\w+ tokens, stop words, stemming
            tokenized = [t for t in _TOKEN_SPLIT(query.lower()) if t not in self._stopwords]
            if self._stemmer is not None:
                tokenized = self._stemmer.stemWords(tokenized)
        return [t for t in tokenized if t in vocab]

    def scores(self, query: str) -> np.ndarray:
        tokens = self.tokens(query)
        n = int(self.retriever.scores["num_docs"])
        if not tokens:
            return np.zeros(n, dtype=np.float32)
        return np.asarray(self.retriever.get_scores(tokens), dtype=np.float32)

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.retriever.save(str(folder), allow_pickle=False, show_progress=False)
        (folder / "rag_core_bm25.json").write_text(json.dumps(self.params), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path, *, mmap: bool = True) -> BM25Index:
        folder = Path(folder)
        params = {**BM25_DEFAULTS, **json.loads((folder / "rag_core_bm25.json").read_text(encoding="utf-8"))}
        retriever = bm25s.BM25.load(str(folder), mmap=mmap, allow_pickle=False, show_progress=False)
        return cls(retriever, params)
