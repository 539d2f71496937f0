"""Rerankers, with a tiny real cross-encoder built in a temporary folder."""

from __future__ import annotations

import pytest

from rag_core import CrossEncoderReranker, DiversityReranker, NoopReranker, get_reranker, search
from rag_core.retrieval.fusion import FUSION_DESCRIPTIONS, fusion_score_type
from rag_core.retrieval.ranking import cross_encoder_status, forget_rerankers
from rag_core.settings import DEFAULT_FUSION

PASSAGES = [
    {"id": 1, "text": "Zero-noise extrapolation mitigates errors in short-depth circuits.", "score": 0.9},
    {"id": 2, "text": "Zero noise extrapolation reduces errors in shallow circuits.", "score": 0.8},
    {"id": 3, "text": "Traversable wormholes need negative null energy.", "score": 0.5},
]


def test_factory():
    assert isinstance(get_reranker(), NoopReranker)
    assert isinstance(get_reranker("diversity", lambda_param=0.2), DiversityReranker)
    assert isinstance(get_reranker("cross_encoder", model_name="x"), CrossEncoderReranker)
    with pytest.raises(ValueError, match="unknown reranker_type"):
        get_reranker("magic")


def test_noop_cuts():
    assert NoopReranker().rerank("q", PASSAGES, n_results=2) == PASSAGES[:2]
    assert NoopReranker().rerank("q", PASSAGES) == PASSAGES


def test_diversity_prefers_a_different_second_result():
    relevance_only = DiversityReranker(lambda_param=1.0).rerank("q", PASSAGES)
    assert [r["id"] for r in relevance_only] == [1, 2, 3]
    diverse = DiversityReranker(lambda_param=0.3).rerank("q", PASSAGES, n_results=2)
    assert [r["id"] for r in diverse] == [1, 3]
    with pytest.raises(ValueError):
        DiversityReranker(lambda_param=2)


def test_cross_encoder_reranker_with_tiny_model(tiny_cross_encoder):
    reranker = CrossEncoderReranker(str(tiny_cross_encoder), max_length=64)
    out = reranker.rerank("zero noise extrapolation", PASSAGES, n_results=3)
    assert len(out) == 3
    assert {r["id"] for r in out} == {1, 2, 3}
    scores = [r["score"] for r in out]
    assert scores == sorted(scores, reverse=True)
    assert all(r["score_type"] == "rerank" for r in out)
    # raw logits, same as scoring each pair alone (length-sorted batching keeps the order right)
    single = {p["id"]: reranker.score("zero noise extrapolation", [p["text"]])[0][0] for p in PASSAGES}
    for r in out:
        assert r["score"] == pytest.approx(float(single[r["id"]]), abs=1e-4)
    long_text = "word " * 200
    _, truncated = reranker.score("q", [long_text, "short"])
    assert truncated == [True, False]


def test_hybrid_search_uses_a_local_cross_encoder(worked_example_index, tiny_cross_encoder):
    forget_rerankers()
    results = search("does information leak through a wormhole", worked_example_index, top=3,
                     cross_encoder_model=str(tiny_cross_encoder))
    assert all(r["score_type"] == "rerank" for r in results)
    assert all(r["reranker"] == str(tiny_cross_encoder) for r in results)
    assert all(isinstance(r["truncated"], bool) for r in results)
    assert "local folder" in results[0]["reranker_detail"]
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)


def test_missing_cross_encoder_falls_back_and_says_why(worked_example_index, tmp_path):
    forget_rerankers()
    status = cross_encoder_status(str(tmp_path / "no-such-model"))
    assert status.kind == "fusion" and status.reranker is None
    assert "does not exist" in status.detail
    results = search("wormhole", worked_example_index, cross_encoder_model=str(tmp_path / "no-such-model"))
    assert results and all(r["score_type"] == fusion_score_type() for r in results)
    assert all(FUSION_DESCRIPTIONS[DEFAULT_FUSION] in r["reranker_detail"] for r in results)


def test_status_says_why_and_what_instead_in_fields(tmp_path, tiny_cross_encoder):
    forget_rerankers()
    missing = cross_encoder_status(str(tmp_path / "no-such-model"))
    assert missing.uses_cross_encoder is False
    assert "does not exist" in missing.reason
    assert missing.fallback == FUSION_DESCRIPTIONS[DEFAULT_FUSION] and missing.fusion == DEFAULT_FUSION
    assert missing.name == fusion_score_type()
    # the human message is made of the fields; the explanation drops the "No cross-encoder" lead-in
    assert missing.reason in missing.detail and missing.fallback in missing.detail
    assert not missing.explanation.lower().startswith("no cross-encoder")
    assert missing.reason[1:] in missing.explanation and missing.fallback in missing.explanation
    none_asked = cross_encoder_status("")
    assert none_asked.reason == "no cross-encoder was asked for" and none_asked.fallback == missing.fallback
    loaded = cross_encoder_status(str(tiny_cross_encoder))
    assert loaded.uses_cross_encoder and loaded.kind == "cross_encoder"
    assert loaded.reason is None and loaded.fallback is None and "local folder" in loaded.source
    assert loaded.explanation == loaded.detail
