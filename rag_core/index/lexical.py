"""Lexical rankings: the contract's TF-IDF (scikit-learn) and BM25 (bm25s).

scikit-learn and bm25s fit them; a search reads what they fitted without importing either
(nor SciPy, which both import): TF-IDF from its vocabulary, idf and posting lists
(:mod:`rag_core.index.tfidf`, :mod:`rag_core.index.postings`), BM25 from the score matrix
bm25s stores by column. Together those imports were ~1.6 s of a 1.7 s ``rag-core search``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag_core.index.postings import Postings, add_columns
from rag_core.index.tfidf import TfidfTerms
from rag_core.settings import BM25_B, BM25_K1, TFIDF_MAX_FEATURES, TFIDF_NGRAM_RANGE

TFIDF_PARAMS = {
    "stop_words": "english",
    "max_features": TFIDF_MAX_FEATURES,
    "ngram_range": list(TFIDF_NGRAM_RANGE),
}
# k1 and b: see rag_core.settings. Lucene's BM25 variant, English Snowball stemming and stop words.
if TYPE_CHECKING:  # scikit-learn (and scipy.stats under it) takes ~0.9 s to import: only when a TF-IDF is made
    import scipy.sparse as sp
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
    import scipy.sparse as sp

    vectorizer = make_tfidf_vectorizer()
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:
        # Only stop words (or no words at all): keep a usable, empty vocabulary.
        vectorizer = make_tfidf_vectorizer()
        vectorizer.fit(["placeholder"])
        matrix = sp.csr_matrix((len(texts), len(vectorizer.vocabulary_)), dtype=np.float32)
    return vectorizer, sp.csr_matrix(matrix, dtype=np.float32)


def tfidf_state(vectorizer: TfidfVectorizer | TfidfTerms) -> tuple[dict, np.ndarray]:
    """The vocabulary and idf weights that rebuild ``vectorizer`` without pickle."""
    vocabulary = {term: int(i) for term, i in vectorizer.vocabulary_.items()}
    return vocabulary, np.asarray(vectorizer.idf_, dtype=np.float32)


def tfidf_from_state(vocabulary: dict, idf: np.ndarray) -> TfidfTerms:
    """The fitted TF-IDF from :func:`tfidf_state`'s output, as :class:`TfidfTerms` (what a
    search needs; scikit-learn is imported only when its vectorizer is asked for)."""
    terms = {str(k): int(v) for k, v in vocabulary.items()}
    columns = np.fromiter(terms.values(), dtype=np.int64, count=len(terms))
    if not np.array_equal(np.sort(columns), np.arange(len(terms))):
        raise ValueError("the TF-IDF vocabulary does not number its terms 0, 1, 2, ... once each")
    return TfidfTerms(terms, idf)


class TfidfScorer:
    """Cosine of every chunk to a query, reading only the query's columns. ``vectorizer``: a
    fitted ``TfidfVectorizer`` or the :class:`TfidfTerms` of a stored one."""

    def __init__(self, vectorizer: TfidfVectorizer | TfidfTerms, matrix: sp.spmatrix | Postings):
        self.vectorizer = vectorizer
        self.source = matrix  # as given (RagIndex checks it is still its matrix)
        # Column-major (posting lists) is what scoring reads: a stored index keeps its matrix
        # that way (Postings, memory-mapped) and is used as it is; a matrix built in memory is
        # converted once.
        if getattr(matrix, "format", None) not in ("csr", "csc"):
            import scipy.sparse as sp

            matrix = sp.csr_matrix(matrix)
        self.matrix = matrix
        self._csc = matrix if matrix.format == "csc" else None
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


# From this many scores, top_k looks only in the blocks of _TOP_BLOCK scores whose best score is
# among the k best blocks' (every one of the k best scores lies in such a block): at a million
# chunks an argpartition over every score took 5-12 ms, three times a hybrid query (TF-IDF,
# BM25, the dense pool's mostly empty array); the blocks' maxima take ~0.5 ms.
_SPARSE_FROM = 50_000
_TOP_BLOCK = 1024


def _candidate_rows(scores: np.ndarray, k: int) -> np.ndarray | None:
    """The rows of the blocks that can hold the ``k`` best scores, ascending; None when they are
    not much fewer than all."""
    n = scores.shape[0]
    full = n // _TOP_BLOCK
    maxima = scores[: full * _TOP_BLOCK].reshape(full, _TOP_BLOCK).max(axis=1)
    if n > full * _TOP_BLOCK:
        maxima = np.append(maxima, scores[full * _TOP_BLOCK:].max())
    if k >= len(maxima) or np.isnan(maxima).any():  # a NaN score: the plain way
        return None
    kth = np.partition(maxima, len(maxima) - k)[len(maxima) - k]  # the k-th best block's maximum
    blocks = np.flatnonzero(maxima >= kth)
    if len(blocks) * _TOP_BLOCK > n // 4:
        return None
    rows = (blocks[:, None] * _TOP_BLOCK + np.arange(_TOP_BLOCK)).ravel()
    return rows[rows < n]


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = False) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first (ties: lower index first); with
    ``positive_only``, of those only the scores > 0."""
    n = scores.shape[0]
    k = min(int(k), n)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if n >= _SPARSE_FROM:
        rows = _candidate_rows(scores, k)
        if rows is not None:
            order = rows[top_k(scores[rows], k)]
            return order[scores[order] > 0] if positive_only else order
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        edge = scores[part].min()
        if not np.isnan(edge):  # of the rows tied with the k-th best, the first ones (argpartition takes any)
            above = np.flatnonzero(scores > edge)
            part = np.concatenate([above, np.flatnonzero(scores == edge)[: k - len(above)]])
    else:
        part = np.arange(n)
    order = part[np.lexsort((part, -scores[part]))]
    if positive_only:
        order = order[scores[order] > 0]
    return order


# bm25s's English stop words (bm25s/stopwords.py, STOPWORDS_EN), copied so that a query is
# tokenised without importing bm25s; tests/index/test_lexical.py holds the two equal.
_BM25_STOPWORDS_TEXT = ("a an and are as at be but by for if in into is it no not of on or such that the their then "
                        "there these they this to was will with")
BM25_STOPWORDS_EN = frozenset(_BM25_STOPWORDS_TEXT.split())
_BM25_FILES = {"data": "data.csc.index.npy", "indices": "indices.csc.index.npy", "indptr": "indptr.csc.index.npy"}
_BM25_VOCAB, _BM25_PARAMS = "vocab.index.json", "params.index.json"
_BM25_NONOCCURRENCE = "nonoccurrence_array.index.npy"
_PROJECT_PARAMS = "rag_core_bm25.json"


def _bm25_stopwords(name) -> frozenset[str]:
    if name in ("en", "english", True):
        return BM25_STOPWORDS_EN
    if not name:
        return frozenset()
    from bm25s.tokenization import _infer_stopwords  # another language: bm25s's own list

    return frozenset(_infer_stopwords(name))


class BM25Index:
    """BM25 over chunk texts (Lucene variant, English stemming and stop words).

    bm25s fits it (:meth:`build`): the BM25 score of every (term, chunk) pair, stored by term
    as bm25s saves it. A query adds up the columns of its terms, as bm25s's ``get_scores``
    does, from those arrays: loading and searching import neither bm25s nor SciPy.
    """

    def __init__(self, vocab: dict[str, int] | bytes, scores: Postings, params: dict, *, stored: dict | None = None,
                 nonoccurrence: np.ndarray | None = None):
        # the vocabulary may come as its JSON file's bytes, read at load and parsed at the first
        # query (a large segment's runs to megabytes, which an exact search never reads)
        self._vocab = vocab
        self.matrix = scores  # chunks x terms, by column
        self.params = params
        self.stored = dict(stored or {})  # bm25s's own parameters (params.index.json)
        self.nonoccurrence = nonoccurrence
        self._stemmer = None
        if params.get("stemmer"):
            import Stemmer  # PyStemmer: a small C extension

            self._stemmer = Stemmer.Stemmer(params["stemmer"])
        self._stopwords = _bm25_stopwords(params.get("stopwords"))

    @property
    def vocab(self) -> dict[str, int]:
        """term -> column of the score matrix."""
        if isinstance(self._vocab, bytes):
            vocab = json.loads(self._vocab)
            columns = self.matrix.shape[1]
            # bm25s adds the empty token, which no text has, one past the last column
            if not isinstance(vocab, dict) or not all(
                    isinstance(v, int) and (0 <= v < columns or (v == columns and not t))
                    for t, v in vocab.items()):
                raise ValueError("the BM25 vocabulary does not name columns of its score matrix")
            self._vocab = vocab
        return self._vocab

    @property
    def num_docs(self) -> int:
        return self.matrix.shape[0]

    @classmethod
    def build(cls, texts: Sequence[str], **params) -> BM25Index:
        import bm25s
        import Stemmer

        params = {**BM25_DEFAULTS, **params}
        stemmer = Stemmer.Stemmer(params["stemmer"]) if params.get("stemmer") else None
        tokens = bm25s.tokenize(
            list(texts), stopwords=params["stopwords"], stemmer=stemmer, show_progress=False
        )
        retriever = bm25s.BM25(k1=params["k1"], b=params["b"], method=params["method"])
        retriever.index(tokens, show_progress=False)
        found = retriever.scores
        stored = {"k1": retriever.k1, "b": retriever.b, "delta": retriever.delta, "method": retriever.method,
                  "idf_method": retriever.idf_method, "dtype": retriever.dtype, "int_dtype": retriever.int_dtype,
                  "num_docs": int(found["num_docs"]), "version": bm25s.__version__, "backend": retriever.backend}
        matrix = Postings(found["data"], found["indices"], found["indptr"],
                          (int(found["num_docs"]), len(found["indptr"]) - 1))
        return cls(dict(retriever.vocab_dict), matrix, params, stored=stored,
                   nonoccurrence=getattr(retriever, "nonoccurrence_array", None))

    def tokens(self, query: str) -> list[str]:
        """The query's terms as bm25s.tokenize makes them (lower case, ``\\w\\w+`` tokens, stop
        words dropped, then stemmed), kept when the index knows them."""
        tokenized = [t for t in _TOKEN_SPLIT(query.lower()) if t not in self._stopwords]
        if self._stemmer is not None:
            tokenized = self._stemmer.stemWords(tokenized)
        return [t for t in tokenized if t in self.vocab]

    def scores(self, query: str) -> np.ndarray:
        ids = [self.vocab[t] for t in self.tokens(query)]
        dtype = np.dtype(self.stored.get("dtype") or self.matrix.data.dtype)
        if not ids:
            return np.zeros(self.num_docs, dtype=np.float32)
        out = add_columns(self.matrix, ids, n_rows=self.num_docs, dtype=dtype)
        if self.nonoccurrence is not None:  # BM25L and BM25+ score absent terms too
            out += self.nonoccurrence[np.asarray(ids)].sum()
        return np.asarray(out, dtype=np.float32)

    def save(self, folder: str | Path) -> None:
        """bm25s's files (``BM25.load`` reads them) and this project's parameters."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for key, name in _BM25_FILES.items():
            np.save(folder / name, np.asarray(getattr(self.matrix, key)), allow_pickle=False)
        if self.nonoccurrence is not None:
            np.save(folder / _BM25_NONOCCURRENCE, np.asarray(self.nonoccurrence), allow_pickle=False)
        vocab = self._vocab if isinstance(self._vocab, bytes) else json.dumps(self._vocab, ensure_ascii=False).encode()
        (folder / _BM25_VOCAB).write_bytes(vocab)
        (folder / _BM25_PARAMS).write_text(json.dumps(self.stored, indent=4), encoding="utf-8")
        (folder / _PROJECT_PARAMS).write_text(json.dumps(self.params), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path, *, mmap: bool = True) -> BM25Index:
        """Read the files :meth:`save` (or bm25s's own ``save``) wrote; ``ValueError`` when they
        disagree."""
        folder = Path(folder)
        params = {**BM25_DEFAULTS, **json.loads((folder / _PROJECT_PARAMS).read_text(encoding="utf-8"))}
        stored = json.loads((folder / _BM25_PARAMS).read_text(encoding="utf-8"))
        if not isinstance(stored, dict) or not isinstance(stored.get("num_docs"), int):
            raise ValueError("the BM25 parameters are not a JSON object with num_docs")
        vocab = (folder / _BM25_VOCAB).read_bytes()  # parsed at the first query
        arrays = {key: np.load(folder / name, allow_pickle=False, mmap_mode="r" if mmap else None)
                  for key, name in _BM25_FILES.items()}
        matrix = Postings(arrays["data"], arrays["indices"], arrays["indptr"],
                          (stored["num_docs"], len(arrays["indptr"]) - 1))
        nonoccurrence = None
        if (folder / _BM25_NONOCCURRENCE).is_file():
            nonoccurrence = np.load(folder / _BM25_NONOCCURRENCE, allow_pickle=False)
        return cls(vocab, matrix, params, stored=stored, nonoccurrence=nonoccurrence)
