"""The public contract of ../shared/spec/API.md: names, arguments, defaults, keys."""

from __future__ import annotations

import inspect

import pytest

import rag_core
from rag_core import (
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_CROSS_ENCODER_MODEL,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_POOL,
)
from rag_core.retrieval.fusion import fusion_score_type

RESULT_KEYS = {"rank", "source", "text", "score", "score_type", "cosine"}
EXACT_KEYS = {"source", "chunk_index", "match", "snippet", "start", "end"}


def defaults(fn) -> dict:
    return {
        name: p.default
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
    }


def test_constants():
    assert CHUNK_SIZE_CHARS == 1200
    assert CHUNK_OVERLAP_CHARS == 200
    assert DEFAULT_EMBEDDING_MODEL == "sentence-transformers/all-MiniLM-L6-v2"
    assert DEFAULT_CROSS_ENCODER_MODEL == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    assert isinstance(DEFAULT_POOL, int) and DEFAULT_POOL > 0


def test_every_contract_name_is_exported():
    names = {
        "chunk_text", "build_index", "RagIndex", "search", "search_exact", "save_index", "load_index",
        "reciprocal_rank_fusion", "fuse_search_results", "HybridSearch", "RerankerBase",
        "CrossEncoderReranker", "DiversityReranker", "NoopReranker", "get_reranker", "QueryExpander",
        "CHUNK_SIZE_CHARS", "CHUNK_OVERLAP_CHARS", "DEFAULT_EMBEDDING_MODEL", "DEFAULT_CROSS_ENCODER_MODEL",
        "DEFAULT_POOL",
    }
    assert names <= set(rag_core.__all__)
    for name in names:
        assert hasattr(rag_core, name), name


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (rag_core.chunk_text, {"text": inspect._empty, "source": inspect._empty, "chunk_size": 1200, "overlap": 200}),
        (rag_core.build_index, {"documents": inspect._empty, "embedding_model": DEFAULT_EMBEDDING_MODEL,
                                "compute_embeddings": True, "chunk_size": 1200, "overlap": 200}),
        (rag_core.search, {"query": inspect._empty, "index": inspect._empty, "top": 3, "rerank": True,
                           "pool": DEFAULT_POOL, "embedding_model": DEFAULT_EMBEDDING_MODEL,
                           "cross_encoder_model": DEFAULT_CROSS_ENCODER_MODEL}),
        (rag_core.search_exact, {"pattern": inspect._empty, "index": inspect._empty, "regex": False,
                                 "max_hits": 10, "context": 300}),
        (rag_core.save_index, {"index": inspect._empty, "index_dir": inspect._empty}),
        (rag_core.load_index, {"index_dir": inspect._empty}),
        (rag_core.reciprocal_rank_fusion, {"result_lists": inspect._empty, "k": 60, "weights": None}),
        (rag_core.fuse_search_results, {"result_lists": inspect._empty, "n_results": 5, "dedupe_by": "id"}),
        (rag_core.HybridSearch.__init__, {"self": inspect._empty, "vector_search_fn": None, "bm25_search_fn": None,
                                          "alpha": 0.6, "rrf_k": 60}),
        (rag_core.HybridSearch.search, {"self": inspect._empty, "query": inspect._empty, "n_results": 5,
                                        "mode": "hybrid"}),
        (rag_core.RerankerBase.rerank, {"self": inspect._empty, "query": inspect._empty, "results": inspect._empty,
                                        "n_results": None}),
        (rag_core.CrossEncoderReranker.__init__, {"self": inspect._empty,
                                                  "model_name": "cross-encoder/ms-marco-MiniLM-L-6-v2",
                                                  "max_length": 512, "fastembed_model_name": None}),
        (rag_core.DiversityReranker.__init__, {"self": inspect._empty, "lambda_param": 0.7}),
        (rag_core.get_reranker, {"reranker_type": "none"}),
        (rag_core.QueryExpander.__init__, {"self": inspect._empty, "llm_generate_fn": None, "n_variations": 3,
                                           "include_original": True}),
    ],
    ids=lambda v: getattr(v, "__qualname__", None),
)
def test_signatures_keep_names_and_defaults(fn, expected):
    assert defaults(fn) == expected


def test_rag_index_holds_contract_fields(worked_example_index):
    index = worked_example_index
    assert len(index.chunks) == 3
    assert all({"text", "source"} <= set(c) for c in index.chunks)
    assert index.matrix.shape[0] == 3
    assert index.vectorizer.max_features == 20_000
    assert index.vectorizer.ngram_range == (1, 2)
    assert index.vectorizer.stop_words == "english"
    assert index.embeddings.shape == (3, 384)
    norms = (index.embeddings**2).sum(axis=1)
    assert norms == pytest.approx([1.0, 1.0, 1.0], abs=1e-4)


def test_worked_example_tfidf(worked_example_index):
    results = rag_core.search("does information leak through a wormhole", worked_example_index, rerank=False)
    assert results[0]["source"] == "gao_wormhole.pdf"
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    for r in results:
        assert RESULT_KEYS <= set(r)
        assert r["score_type"] == "cosine"
        assert r["score"] == pytest.approx(r["cosine"])
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)


def test_worked_example_hybrid(worked_example_index):
    results = rag_core.search("does information leak through a wormhole", worked_example_index)
    assert results[0]["source"] == "gao_wormhole.pdf"
    tfidf = {r["source"]: r["cosine"] for r in rag_core.search(
        "does information leak through a wormhole", worked_example_index, rerank=False)}
    for r in results:
        assert RESULT_KEYS <= set(r)
        # cosine is the TF-IDF cosine whatever the mode
        assert r["cosine"] == pytest.approx(tfidf[r["source"]])
        # no cross-encoder can be had offline: the rows say what ordered them instead
        assert r["score_type"] == fusion_score_type()  # "fused" (measured best) or "rrf"
        assert "cross-encoder" in r["reranker_detail"].lower()


def test_worked_example_exact(worked_example_index):
    hits = rag_core.search_exact("negative average null energy", worked_example_index)
    assert len(hits) == 1
    assert hits[0]["source"] == "gao_wormhole.pdf"
    assert hits[0]["match"] == "negative average null energy"
    assert EXACT_KEYS <= set(hits[0])
    chunk = worked_example_index.chunks[hits[0]["chunk_index"]]
    assert chunk["text"][hits[0]["start"]:hits[0]["end"]] == "negative average null energy"


def test_search_without_embeddings_loads_no_model(monkeypatch, worked_example):
    import rag_core.index.build as index_module

    def fail(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(index_module, "load_bi_encoder", fail)
    index = rag_core.build_index(worked_example, compute_embeddings=False)
    assert index.embeddings is None
    results = rag_core.search("wormhole information", index, rerank=False)
    assert results[0]["source"] == "gao_wormhole.pdf"
    # rerank=True without embeddings: the pool is lexical only, still no bi-encoder
    results = rag_core.search("wormhole information", index, rerank=True)
    assert results[0]["source"] == "gao_wormhole.pdf"
    assert all(r["dense_rank"] is None for r in results)


def test_build_index_without_chunks_raises():
    with pytest.raises(ValueError):
        rag_core.build_index([("   ", "blank.pdf"), ("", "empty.pdf")], compute_embeddings=False)


def test_public_functions_stay_functions_after_submodule_imports():
    """Importing a submodule must not shadow a public function of the same package."""
    import importlib

    for module in ("rag_core.retrieval.ranking", "rag_core.retrieval.comparison", "rag_core.retrieval.exact",
                   "rag_core.collections.store"):
        importlib.import_module(module)
    for name in ("search", "search_exact", "save_index", "load_index", "build_index", "compare", "verify_quote"):
        assert callable(getattr(rag_core, name)), name
        assert not inspect.ismodule(getattr(rag_core, name)), name
