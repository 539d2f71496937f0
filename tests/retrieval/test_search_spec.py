"""SearchSpec: one value for a hybrid search; the contract's search() is a thin wrapper that builds one."""

from __future__ import annotations

import pytest

from rag_core.errors import RagCoreError
from rag_core.retrieval.comparison import compare
from rag_core.retrieval.ranking import search, search_with_spec
from rag_core.retrieval.search_spec import (
    DEFAULT_SPEC,
    SearchSpec,
    SearchSpecError,
    saved_collection_spec,
)
from rag_core.settings import DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_FUSION_WEIGHTS, DEFAULT_POOL, MMR_LAMBDA

QUERY = "does information leak through a wormhole"


def test_defaults_are_the_packages():
    spec = SearchSpec()
    assert spec == DEFAULT_SPEC
    assert (spec.reranker, spec.cross_encoder_model, spec.pool, spec.mmr_lambda) == (
        "auto", DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_POOL, MMR_LAMBDA)
    assert spec.weights() == DEFAULT_FUSION_WEIGHTS
    assert spec.asks_cross_encoder == DEFAULT_CROSS_ENCODER_MODEL and spec.mmr is None
    assert spec.describe() == "min-max score fusion, dense weight 0.50, pool 30, BM25 + TF-IDF"


def test_validation_says_what_is_wrong_and_what_to_do():
    with pytest.raises(SearchSpecError) as caught:
        SearchSpec(reranker="colbert", pool=0, fusion="sum", dense_weight=2, mmr_lambda=-1, lexical="none", rrf_k=0)
    message = str(caught.value)
    for words in ("reranker must be one of auto, cross_encoder, mmr, none", "pool must be a whole number",
                  "fusion must be one of", "dense weight must be between 0 and 1", "MMR lambda",
                  "the pool needs a lexical list", "RRF k"):
        assert words in message, words
    assert isinstance(caught.value, RagCoreError) and isinstance(caught.value, ValueError)
    with pytest.raises(SearchSpecError, match="reranker 'mmr'"):
        SearchSpec(reranker="none", mmr_after_cross_encoder=True)
    with pytest.raises(SearchSpecError, match="whole number"):
        SearchSpec(pool=2.5)
    assert SearchSpec(cross_encoder_model="  ").cross_encoder_model is None  # blank names none
    assert SearchSpec(dense_weight=1).dense_weight == 1.0 and isinstance(SearchSpec(dense_weight=1).dense_weight, float)


def test_round_trip_through_a_dict_and_earlier_saved_data():
    specs = [SearchSpec(), SearchSpec(fusion="rrf", rrf_k=10, dense_weight=0.25, pool=50, lexical="tfidf",
                                      reranker="mmr", mmr_lambda=0.4, cross_encoder_model=None),
             SearchSpec(fusion_weights={"bm25": 1.0, "dense": 1.5}, reranker="auto", mmr_after_cross_encoder=True)]
    for spec in specs:
        assert SearchSpec.from_dict(spec.to_dict()) == spec
        assert hash(spec) == hash(SearchSpec.from_dict(spec.to_dict()))
    assert "fusion_weights" not in SearchSpec().to_dict() and "mmr_after_cross_encoder" not in SearchSpec().to_dict()
    # a snapshot's "config" from before the spec (no cross-encoder field), and unknown keys
    earlier = {"fusion": "zscore", "dense_weight": 0.6, "rrf_k": 60, "pool": 20, "lexical": "bm25",
               "reranker": "none", "mmr_lambda": 0.7, "something_new": 1}
    spec = SearchSpec.from_dict(earlier)
    assert (spec.fusion, spec.pool, spec.lexical, spec.cross_encoder_model) == (
        "zscore", 20, "bm25", DEFAULT_CROSS_ENCODER_MODEL)
    assert SearchSpec.from_dict({"pool": -3, "fusion": "zscore"}, strict=False) == SearchSpec(fusion="zscore")
    # a collection's saved default: only its saved fields count, bad values are dropped
    settings = {"chunk_size": 1200, "search": {"fusion": "rrf", "pool": 20, "dense_weight": "nonsense",
                                               "reranker": "mmr", "saved_at": 1.0, "note": "optimiser"}}
    spec = SearchSpec.for_collection(settings)
    assert (spec.fusion, spec.pool, spec.dense_weight, spec.reranker) == ("rrf", 20, 0.5, "auto")
    assert SearchSpec.for_collection({}) == DEFAULT_SPEC and SearchSpec.for_collection(None) == DEFAULT_SPEC
    assert saved_collection_spec(settings)["note"] == "optimiser" and saved_collection_spec({}) is None
    assert spec.saved() == {"fusion": "rrf", "dense_weight": 0.5, "rrf_k": 60, "pool": 20, "lexical": "both"}


def _contract_kwargs(spec: SearchSpec) -> dict:
    """What a caller of the contract's search() passes for ``spec``."""
    kwargs = dict(spec.search_kwargs(), cross_encoder_model=spec.asks_cross_encoder or "")
    if spec.mmr is not None:
        kwargs["mmr_lambda"] = spec.mmr
    return kwargs


@pytest.mark.parametrize("spec", [
    SearchSpec(reranker="none"),
    SearchSpec(reranker="none", fusion="rrf", rrf_k=10, dense_weight=0.3),
    SearchSpec(reranker="none", fusion="zscore", pool=2, lexical="bm25"),
    SearchSpec(reranker="mmr", mmr_lambda=0.4, lexical="tfidf", dense_weight=0.8),
    SearchSpec(reranker="none", fusion_weights={"tfidf": 0.25, "bm25": 1.0, "dense": 1.5}),
], ids=lambda s: s.describe() + f" / {s.reranker}")
def test_the_contracts_search_is_a_thin_wrapper(worked_example_index, spec):
    index = worked_example_index
    for query in (QUERY, "cross-encoders rank passages", "noise"):
        direct = search_with_spec(query, index, spec, top=3)
        assert search(query, index, top=3, **_contract_kwargs(spec)) == direct
        added = ("tfidf_list_rank", "hybrid_list_rank", "exact_list_rank", "movement")  # compare's cross-ranks
        side_by_side = compare(query, index, top=3, spec=spec).hybrid
        assert [{k: v for k, v in r.items() if k not in added} for r in side_by_side] == direct


def test_search_keeps_its_own_meaning_of_leaving_bm25_out(worked_example_index):
    """search(with_bm25=False) with no weights fuses with the package's weights (TF-IDF's is 0), not
    with the dense weight's mapping of a "TF-IDF only" pool (which weighs TF-IDF): the spec it builds
    carries the weights as given."""
    index = worked_example_index
    rows = search(QUERY, index, top=3, cross_encoder_model="", with_bm25=False)
    package = SearchSpec(reranker="none", lexical="tfidf", fusion_weights=DEFAULT_FUSION_WEIGHTS)
    assert rows == search_with_spec(QUERY, index, package, top=3)
    assert all("bm25" not in r["first_stage_ranks"] for r in rows)


def test_search_with_spec_checks_its_arguments(worked_example_index):
    from rag_core.errors import QueryError
    from rag_core.retrieval.ranking import QueryScores

    with pytest.raises(QueryError):
        search_with_spec("   ", worked_example_index)
    with pytest.raises(ValueError, match="top must be at least 1"):
        search_with_spec(QUERY, worked_example_index, top=0)
    other = QueryScores(object(), QUERY)
    with pytest.raises(ValueError, match="another index"):
        search_with_spec(other, worked_example_index)
    rows = search_with_spec(QUERY, worked_example_index, SearchSpec(reranker="mmr", mmr_lambda=0.5), top=3,
                            sources=["gao_wormhole.pdf"])
    assert [r["source"] for r in rows] == ["gao_wormhole.pdf"] and rows[0]["reranker"] == "mmr"
    assert "λ=0.5" in rows[0]["reranker_detail"]
