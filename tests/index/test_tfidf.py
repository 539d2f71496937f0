"""TF-IDF from stored terms (no scikit-learn at search time) gives scikit-learn's numbers."""

from __future__ import annotations

import numpy as np
import pytest

from rag_core.index.lexical import TfidfScorer, fit_tfidf, make_tfidf_vectorizer, tfidf_from_state, tfidf_state
from rag_core.index.tfidf import ENGLISH_STOP_WORDS, TfidfTerms, analyze, as_terms

TEXTS = [
    "Dense passage retrieval outperforms BM25 on open-domain QA (Karpukhin et al., 2020).",
    "A traversable wormhole opens when negative average null energy leaks through the throat.",
    "Zero-noise extrapolation mitigates errors in short-depth quantum circuits; ZNE at 3x noise.",
    "Über-große Modelle: naïve café résumé — the cross-encoder re-reads the pool of 30 passages.",
    "snake_case_names, x2 and 2x, e.g. α-decay, ΔE=3.2 MeV, the the the and of of",
    "Cross-encoders read query and passage together; bi-encoders embed them apart.",
    "",
    "a an the",  # only stop words
    "Retrieval-augmented generation (RAG) retrieves passages, then generates; RETRO chunks 1.2M tokens.",
]
QUERIES = [
    "does information leak through a wormhole", "dense passage retrieval", "ZNE noise", "café résumé",
    "the of and", "retrieval retrieval retrieval augmented", "ΔE MeV α-decay", "unknownword", "",
    "snake_case_names x2",
]


def test_stop_words_are_scikit_learns():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS as SKLEARN_STOP_WORDS

    assert ENGLISH_STOP_WORDS == SKLEARN_STOP_WORDS


@pytest.mark.parametrize("text", TEXTS + QUERIES)
def test_terms_are_scikit_learns(text):
    assert analyze(text) == make_tfidf_vectorizer().build_analyzer()(text)


def test_terms_of_real_pdf_text(shared_collection):
    _library, index, _docs = shared_collection
    sklearn_analyzer = make_tfidf_vectorizer().build_analyzer()
    for i in range(0, len(index.chunks), 7):
        text = index.chunks[i]["text"]
        assert analyze(text) == sklearn_analyzer(text), index.chunks[i]["source"]


def test_query_vectors_from_stored_terms_equal_scikit_learns():
    vectorizer, matrix = fit_tfidf(TEXTS)
    vocabulary, idf = tfidf_state(vectorizer)
    terms = tfidf_from_state(vocabulary, idf)
    assert isinstance(terms, TfidfTerms)
    stored = TfidfScorer(terms, matrix)
    fitted = TfidfScorer(vectorizer, matrix)
    for query in QUERIES:
        want = vectorizer.transform([query]).toarray()[0]
        cols, weights = stored.query_vector(query)
        got = np.zeros_like(want)
        got[cols] = weights
        assert got == pytest.approx(want, abs=1e-6), query
        assert stored.scores(query) == pytest.approx(fitted.scores(query), abs=1e-6)
        # and the cosines are what scikit-learn's own product gives
        assert stored.scores(query) == pytest.approx((matrix @ want).ravel(), abs=1e-6)


def test_stored_terms_rebuild_scikit_learns_vectorizer():
    vectorizer, _matrix = fit_tfidf(TEXTS)
    terms = tfidf_from_state(*tfidf_state(vectorizer))
    rebuilt = terms.to_vectorizer()
    assert rebuilt.vocabulary_ == vectorizer.vocabulary_
    for query in QUERIES:
        assert (rebuilt.transform([query]) != vectorizer.transform([query])).nnz == 0


def test_a_vectorizer_keeps_its_own_analyzer():
    from sklearn.feature_extraction.text import TfidfVectorizer

    odd = TfidfVectorizer(lowercase=False).fit(["Alpha beta", "alpha Gamma"])
    terms = as_terms(odd)
    assert terms.build_analyzer()("Alpha beta") == ["Alpha", "beta"]  # not lower-cased, no bigrams
    assert as_terms(terms) is terms


@pytest.mark.parametrize("vocabulary", [{"a": 0, "b": 0}, {"a": 0, "b": 2}, {"a": 1, "b": 2}])
def test_a_damaged_vocabulary_is_refused(vocabulary):
    with pytest.raises(ValueError, match="vocabulary"):
        tfidf_from_state(vocabulary, np.ones(2))
    with pytest.raises(ValueError, match="idf"):
        TfidfTerms({"a": 0}, np.ones(3))


def test_a_loaded_index_searches_with_terms_and_still_offers_the_vectorizer(tmp_path, worked_example):
    from sklearn.feature_extraction.text import TfidfVectorizer

    from rag_core import build_index, load_index, save_index, search

    built = build_index(worked_example, compute_embeddings=False)
    save_index(built, tmp_path / "ix")
    loaded = load_index(tmp_path / "ix")
    assert isinstance(loaded.tfidf_model, TfidfTerms)
    query = "does information leak through a wormhole"
    assert search(query, loaded, rerank=False) == search(query, built, rerank=False)
    assert "_vectorizer_made" not in loaded.__dict__  # the search built no scikit-learn object
    vectorizer = loaded.vectorizer  # the contract's field, made on demand
    assert isinstance(vectorizer, TfidfVectorizer) and loaded.vectorizer is vectorizer
    assert (vectorizer.transform([query]) != built.vectorizer.transform([query])).nnz == 0
    loaded.vectorizer = built.vectorizer  # setting it replaces what searches read
    assert loaded.tfidf_model is built.vectorizer
