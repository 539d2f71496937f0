from __future__ import annotations

import pytest

from rag_core import HybridSearch, QueryExpander, fuse_search_results, reciprocal_rank_fusion


def rows(*ids):
    return [{"id": i, "text": f"doc {i}"} for i in ids]


def test_rrf_scores_are_sums_of_reciprocal_ranks():
    fused = reciprocal_rank_fusion([rows("a", "b", "c"), rows("b", "c", "d")], k=60)
    by_id = {r["id"]: r["rrf_score"] for r in fused}
    assert by_id["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert by_id["a"] == pytest.approx(1 / 61)
    assert by_id["d"] == pytest.approx(1 / 63)
    assert [r["id"] for r in fused][:2] == ["b", "c"]
    assert all(r["score"] == r["rrf_score"] for r in fused)


def test_rrf_weights():
    fused = reciprocal_rank_fusion([rows("a", "b"), rows("b", "a")], k=1, weights=[3.0, 1.0])
    assert fused[0]["id"] == "a"
    assert fused[0]["rrf_score"] == pytest.approx(3 / 2 + 1 / 3)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([rows("a")], weights=[1.0, 2.0])


def test_fuse_search_results_dedupes_and_keeps_order():
    merged = fuse_search_results([rows("a", "b", "c"), rows("b", "d", "a")], n_results=3)
    assert [r["id"] for r in merged] == ["a", "b", "d"]
    merged = fuse_search_results([[{"url": "x"}, {"url": "y"}], [{"url": "x"}]], n_results=5, dedupe_by="url")
    assert [r["url"] for r in merged] == ["x", "y"]


def test_hybrid_search_modes_and_alpha():
    vector = lambda q, n: rows("v1", "both", "v2")[:n]  # noqa: E731
    lexical = lambda q, n: rows("l1", "both", "l2")[:n]  # noqa: E731
    hybrid = HybridSearch(vector, lexical, alpha=0.6)
    assert [r["id"] for r in hybrid.search("q", 2, mode="vector")] == ["v1", "both"]
    assert [r["id"] for r in hybrid.search("q", 2, mode="bm25")] == ["l1", "both"]
    # alpha 0.6: "both" gets 0.6/62 + 0.4/62; then v1 0.6/61, v2 0.6/63, l1 0.4/61, l2 0.4/63
    top = hybrid.search("q", 5)
    assert [r["id"] for r in top] == ["both", "v1", "v2", "l1", "l2"]
    assert top[0]["score"] == pytest.approx(1 / 62) and top[1]["score"] == pytest.approx(0.6 / 61)
    # alpha 1.0: the lexical list weighs nothing, so the vector list's own order comes back
    hybrid.set_alpha(1.0)
    assert [r["id"] for r in hybrid.search("q", 3)] == ["v1", "both", "v2"]
    assert "l1" not in [r["id"] for r in hybrid.search("q", 2)]
    with pytest.raises(ValueError):
        hybrid.set_alpha(1.5)
    with pytest.raises(ValueError):
        hybrid.search("q", mode="nope")
    empty = HybridSearch()
    with pytest.raises(ValueError):
        empty.search("q", mode="vector")
    empty.set_search_functions(vector_search_fn=vector)
    assert empty.search("q", 1, mode="vector")[0]["id"] == "v1"


def test_query_expander_parses_numbered_lists():
    prompts = []

    def llm(prompt):
        prompts.append(prompt)
        return "Here you go:\n1. wormhole information transfer\n2) traversable wormholes\n3. third one\n4. extra"

    expander = QueryExpander(llm, n_variations=3)
    assert expander.expand("wormholes") == [
        "wormholes", "wormhole information transfer", "traversable wormholes", "third one"]
    assert "wormholes" in prompts[0]
    assert QueryExpander(llm, include_original=False).expand("q")[0] == "wormhole information transfer"
    assert QueryExpander().expand("only me") == ["only me"]
    expander = QueryExpander()
    expander.set_llm_function(lambda p: "1. other")
    assert expander.expand("q") == ["q", "other"]


def test_score_scale_says_the_range_of_each_score():
    from rag_core.retrieval.fusion import score_scale

    text = score_scale("fused", fusion="minmax", weights={"tfidf": 0.0, "bm25": 1.0, "dense": 1.0})
    assert "from 0 to 2" in text and "1 × bm25 + 1 × dense" in text
    assert "from 0 to 2" in score_scale("fused", weights={"bm25": 0.4, "dense": 1.6})
    assert "standardised" in score_scale("fused", fusion="zscore")
    assert "at most 0.033" in score_scale("rrf", rrf_k=60)
    assert "cross-encoder" in score_scale("rerank") and score_scale(None) == ""
