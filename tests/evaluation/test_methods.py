"""The method registry: one name per method, earlier names where people type them, one way to run each
for BEIR evaluation and the relevance lab."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag_core.evaluation import CHUNK_DEPTH, Evaluator, evaluate, load_beir
from rag_core.evaluation.methods import (
    METHODS,
    REGISTRY,
    MethodUnavailable,
    current_name,
    method_for_spec,
    method_label,
    parse_methods,
    run_method,
    unavailable_reason,
)
from rag_core.evaluation.metrics import docs_from_chunks
from rag_core.retrieval.search_spec import SearchSpec


def test_one_name_per_method_and_earlier_names_where_typed():
    assert METHODS == ("tfidf", "bm25", "dense", "hybrid", "hybrid_mmr", "hybrid_ce")
    assert [method_label(m) for m in METHODS] == ["TF-IDF", "BM25", "dense", "hybrid", "hybrid + MMR",
                                                  "cross-encoder"]
    assert parse_methods("tfidf, mmr,cross_encoder,ce,hybrid_mmr") == ["tfidf", "hybrid_mmr", "hybrid_ce"]
    assert parse_methods(None) == list(METHODS)
    for bad, words in (("tfidf,nope", "unknown method"), (",", "no method given"), ([], "no method given")):
        with pytest.raises(ValueError, match=words):
            parse_methods(bad)
    assert current_name("mmr") == "hybrid_mmr" and method_label("cross_encoder") == "cross-encoder"
    assert method_label("something else") == "something else"
    needs = {m.name for m in REGISTRY.values() if m.needs_vectors}, {m.name for m in REGISTRY.values()
                                                                     if m.needs_cross_encoder}
    assert needs == ({"dense"}, {"hybrid_ce"})
    assert [REGISTRY[m].spec(SearchSpec()).reranker for m in ("hybrid", "hybrid_mmr", "hybrid_ce")] == [
        "none", "mmr", "cross_encoder"]
    assert REGISTRY["tfidf"].spec() is None


def test_the_method_a_spec_gives():
    assert method_for_spec(SearchSpec(reranker="mmr")) == "hybrid_mmr"
    assert method_for_spec(SearchSpec(reranker="none")) == "hybrid"
    assert method_for_spec(SearchSpec(reranker="cross_encoder")) == "hybrid_ce"
    assert method_for_spec(SearchSpec(reranker="auto", cross_encoder_model=None)) == "hybrid"


def test_unavailable_methods_say_why(worked_example_index, tiny_cross_encoder):
    from rag_core.index.build import build_index

    lexical = build_index([("a wormhole leaks information", "a.pdf")], compute_embeddings=False)
    assert unavailable_reason("dense", lexical) == "the collection has no dense vectors yet"
    assert unavailable_reason("hybrid", lexical) is None  # the pool is then lexical only
    assert unavailable_reason("hybrid_ce", lexical, SearchSpec(cross_encoder_model=None)) == (
        "no cross-encoder was asked for")
    with pytest.raises(MethodUnavailable, match="dense cannot run: the collection has no dense vectors yet"):
        run_method("dense", "wormhole", lexical)
    spec = SearchSpec(cross_encoder_model=str(tiny_cross_encoder))
    assert unavailable_reason("hybrid_ce", worked_example_index, spec) is None
    rows = run_method("hybrid_ce", "wormhole", worked_example_index, spec, top=3)
    assert rows and rows[0]["score_type"] == "rerank"


def _write_beir(folder: Path) -> None:
    docs = [{"_id": "d1", "title": "Wormholes", "text": "A traversable wormhole in an eternal BTZ black hole."},
            {"_id": "d2", "title": "", "text": "Zero-noise extrapolation mitigates errors of short-depth circuits."},
            {"_id": "d3", "title": "Reranking", "text": "Cross-encoders read query and passage together."},
            {"_id": "d4", "title": "", "text": "Black holes and wormholes in anti-de Sitter space."}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    queries = [{"_id": "q1", "text": "wormhole black hole"}, {"_id": "q2", "text": "zero-noise extrapolation"}]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n", encoding="utf-8")


def test_beir_first_stage_lists_are_the_lab_lists(tmp_path):
    """BEIR's tfidf and bm25 rankings (through run_method) are the chunk scores' positive top ranks."""
    from rag_core.index.lexical import top_k

    _write_beir(tmp_path)
    ev = Evaluator(load_beir(tmp_path), with_embeddings=False)
    for method in ("tfidf", "bm25"):
        ranked = ev.rankings(method)
        for qi, qid in enumerate(ev.query_ids):
            order = top_k(ev.chunk_scores(method, qi), CHUNK_DEPTH, positive_only=True)
            assert ranked[qid] == docs_from_chunks(order, ev.doc_ids, exclude=qid)
    with pytest.raises(ValueError, match="needs embeddings"):
        ev.rankings("hybrid")


def test_beir_mmr_is_mmr_over_the_hybrid_list_and_takes_its_earlier_name(tmp_path, monkeypatch):
    """hybrid_mmr (``mmr`` before) ranks as DiversityReranker(MMR_LAMBDA) over the whole fused pool did."""
    from rag_core.retrieval.ranking import search
    from rag_core.retrieval.rerankers import DiversityReranker
    from rag_core.settings import MMR_LAMBDA

    monkeypatch.setenv("RAG_CORE_EVAL_CACHE", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    _write_beir(tmp_path / "data")
    results = evaluate(tmp_path / "data", methods="tfidf,mmr,hybrid")
    assert list(results) == ["tfidf", "hybrid_mmr", "hybrid"]
    ev = Evaluator(load_beir(tmp_path / "data"))
    ranked = ev.rankings("hybrid_mmr")
    for qid in ev.query_ids:
        rows = search(ev.dataset.queries[qid], ev.index, top=CHUNK_DEPTH, cross_encoder_model="")
        for row in rows:
            row["embedding"] = np.asarray(ev.index.embeddings[row["chunk_index"]])
        rows = DiversityReranker(MMR_LAMBDA).rerank(ev.dataset.queries[qid], rows)
        assert ranked[qid] == docs_from_chunks([r["chunk_index"] for r in rows], ev.doc_ids, exclude=qid)
