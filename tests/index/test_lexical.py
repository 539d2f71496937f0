"""BM25 read from bm25s's stored arrays without bm25s, and posting lists without SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rag_core.index import postings as postings_module
from rag_core.index.lexical import BM25_STOPWORDS_EN, BM25Index
from rag_core.index.postings import Postings

TEXTS = [
    "Dense passage retrieval outperforms a strong Lucene-BM25 system on open-domain QA.",
    "Retrieving retrieved retrieval: stemming joins the forms; the the the and of.",
    "A traversable wormhole opens when negative average null energy leaks through it.",
    "Zero-noise extrapolation mitigates errors; errors grow with circuit depth.",
    "Cross-encoders re-read the pool of passages that BM25 and the bi-encoder found.",
    "naïve café résumé Über ΔE α-decay snake_case x2 2x",
]
QUERIES = ["dense passage retrieval", "retrieving the retrieved", "errors errors errors", "wormhole energy",
           "café naïve", "unknown words only", "", "the of and", "BM25 Lucene-BM25"]


@pytest.fixture(scope="module")
def built():
    return BM25Index.build(TEXTS)


def test_stop_words_are_bm25s():
    from bm25s.stopwords import STOPWORDS_EN

    assert frozenset(STOPWORDS_EN) == BM25_STOPWORDS_EN


@pytest.mark.parametrize("query", QUERIES)
def test_query_terms_are_bm25s(built, query):
    import bm25s
    import Stemmer

    theirs = bm25s.tokenize(query, stopwords="en", stemmer=Stemmer.Stemmer("english"), return_ids=False,
                            show_progress=False)[0]
    assert built.tokens(query) == [t for t in theirs if t in built.vocab]


def test_scores_equal_bm25s_to_the_last_bit(built, tmp_path):
    import bm25s

    built.save(tmp_path / "bm25")
    theirs = bm25s.BM25.load(str(tmp_path / "bm25"), mmap=False, allow_pickle=False, show_progress=False)
    loaded = BM25Index.load(tmp_path / "bm25")
    for query in QUERIES:
        tokens = built.tokens(query)
        want = np.asarray(theirs.get_scores(tokens), dtype=np.float32) if tokens else np.zeros(len(TEXTS), np.float32)
        assert np.array_equal(built.scores(query), want), query
        assert np.array_equal(loaded.scores(query), want), query


def test_a_saved_index_reads_back_the_same(built, tmp_path):
    built.save(tmp_path / "a")
    loaded = BM25Index.load(tmp_path / "a", mmap=False)
    assert isinstance(loaded._vocab, bytes)  # parsed at the first query, not at load
    assert loaded.scores("dense passage retrieval").tolist() == built.scores("dense passage retrieval").tolist()
    assert loaded.vocab == built.vocab and loaded.params == built.params
    loaded.save(tmp_path / "b")  # a loaded index saves the same files again
    for name in ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy", "vocab.index.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_vocabulary_that_points_outside_the_scores_is_refused(built, tmp_path):
    built.save(tmp_path / "a")
    (tmp_path / "a" / "vocab.index.json").write_text('{"dens": 999999}', encoding="utf-8")
    loaded = BM25Index.load(tmp_path / "a")
    with pytest.raises(ValueError, match="vocabulary"):
        loaded.scores("dense")


def _random_csc(rng, rows: int, cols: int, density: float) -> sp.csc_matrix:
    return sp.random(rows, cols, density=density, format="csc", dtype=np.float32, random_state=rng)


@pytest.mark.parametrize("block", [3, 1 << 22])
def test_sorted_columns_are_told_as_scipy_tells_them(monkeypatch, block):
    monkeypatch.setattr(postings_module, "_SORT_CHECK_BLOCK", block)
    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(30):
        m = _random_csc(rng, int(rng.integers(1, 40)), int(rng.integers(1, 12)), float(rng.uniform(0, 0.6)))
        if rng.random() < 0.5 and m.nnz > 1:  # shuffle the rows inside one column
            j = int(np.argmax(np.diff(m.indptr)))
            lo, hi = m.indptr[j], m.indptr[j + 1]
            m.indices[lo:hi] = m.indices[lo:hi][::-1].copy()
        p = Postings(m.data, m.indices, m.indptr, m.shape)
        want = sp.csc_matrix((m.data, m.indices, m.indptr), shape=m.shape).has_sorted_indices
        assert p.has_sorted_indices == bool(want)
        assert (p.to_scipy() != m).nnz == 0
        seen.add(bool(want))
    assert seen == {True, False}


def test_posting_arrays_that_disagree_are_refused():
    with pytest.raises(ValueError, match="disagree"):
        Postings(np.ones(3, np.float32), np.zeros(2, np.int32), np.array([0, 3]), (5, 1))
    with pytest.raises(ValueError, match="disagree"):
        Postings(np.ones(2, np.float32), np.zeros(2, np.int32), np.array([0, 2]), (5, 3))


def test_top_k_of_a_large_array_equals_the_plain_selection():
    """top_k looks only in the blocks that can hold the k best (large arrays): the same rows in
    the same order as a full sort by (-score, row), with ties (the first rows of a tie at the
    k-th place, on either path), infinities, zeros and negatives."""
    from rag_core.index import lexical

    rng = np.random.default_rng(8)
    for case in range(12):
        n = int(rng.integers(lexical._SPARSE_FROM, 3 * lexical._SPARSE_FROM)) if case < 10 else 5000
        scores = np.round(rng.random(n).astype(np.float32), 2 if case % 2 else 5)  # coarse: many ties
        scores[rng.random(n) < 0.5] = 0
        scores[rng.random(n) < 0.2] = -np.inf
        if case % 3 == 0:
            scores = -scores  # mostly non-positive
        for k in (1, 10, 30, 200):
            for positive_only in (False, True):
                expected = np.lexsort((np.arange(n), -scores))[:k]
                if positive_only:
                    expected = expected[scores[expected] > 0]
                got = lexical.top_k(scores, k, positive_only=positive_only)
                assert got.tolist() == expected.tolist(), (case, k, positive_only)
