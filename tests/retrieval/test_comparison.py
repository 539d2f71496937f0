"""rag_core.retrieval.comparison.compare: what the side-by-side view says when nothing matches, and how many
places the exact search found."""

from __future__ import annotations

import pytest

from rag_core import build_index
from rag_core.retrieval.comparison import compare

DOCS = [
    ("Alpha particles and beta decay: alpha alpha beta.", "a.pdf"),
    ("A note that mentions alpha once among many other words about weather and tides.", "b.pdf"),
    ("Beta blockers lower blood pressure; alpha blockers too.", "c.pdf"),
    ("Nothing relevant here, only cooking and gardening.", "d.pdf"),
    ("Alpha and beta versions of the software were released.", "e.pdf"),
]


@pytest.fixture(scope="module")
def index():
    return build_index(DOCS, compute_embeddings=False)


def test_exact_counts_every_place_and_keeps_those_most_about_the_question(index):
    result = compare("alpha beta", index, exact_mode="literal", exact_query="alpha", max_exact_hits=2, top=5)
    # every occurrence counts: a.pdf says alpha three times, in one passage
    assert (result.exact_total, result.exact_documents, result.exact_capped) == (6, 4, False)
    assert [h["rank"] for h in result.exact] == [1, 2]
    every = compare("alpha beta", index, exact_mode="literal", exact_query="alpha", max_exact_hits=10, top=5)
    assert len(every.exact) == 6
    assert sorted(h["start"] for h in every.exact if h["source"] == "a.pdf") == [0, 32, 38]
    best_two = sorted(every.exact, key=lambda h: (-h["cosine"], h["chunk_index"]))[:2]
    assert [h["source"] for h in result.exact] == [h["source"] for h in best_two]
    # b.pdf comes second in document order but mentions alpha once in a long text: listed last
    assert [h["source"] for h in every.exact][-1] == "b.pdf" and "b.pdf" not in [h["source"] for h in result.exact]
    assert result.to_dict()["exact_total"] == 6


def test_tfidf_lists_only_passages_sharing_a_term(index):
    result = compare("alpha", index, top=5)
    assert {r["source"] for r in result.tfidf} == {"a.pdf", "b.pdf", "c.pdf", "e.pdf"}
    assert all(r["cosine"] > 0 for r in result.tfidf)
    assert result.lexical_match


def test_nonsense_matches_nothing_and_says_so(worked_example_index):
    result = compare("qwertyuiop zxcvbnm", worked_example_index, top=3)
    assert result.tfidf == [] and result.exact == [] and result.exact_total == 0
    assert result.lexical_match is False and result.to_dict()["lexical_match"] is False
    assert all(r["found_by"] == "dense" for r in result.hybrid), "only close in meaning"


def _pool_row(rank: int, chunk: int, **extra) -> dict:
    return {"rank": rank, "chunk_index": chunk, "source": f"{chunk}.pdf", **extra}


def test_stage_view_reads_the_order_a_re_reading_stage_was_handed():
    from rag_core.retrieval.comparison import stage_view

    rows = [_pool_row(1, 7, pre_rerank_rank=3, reranker="ce"), _pool_row(2, 8, pre_rerank_rank=1, reranker="ce"),
            _pool_row(3, 9, pre_rerank_rank=2, reranker="ce")]
    view = stage_view(rows)
    assert view.stage == "rerank" and "ce re-read" in view.after_label
    assert [(r["chunk_index"], r["before"], r["after"], r["movement"]) for r in view.after()] == [
        (7, 3, 1, "up"), (8, 1, 2, "down"), (9, 2, 3, "down")]
    assert [r["chunk_index"] for r in view.before()] == [8, 9, 7]
    assert [r["chunk_index"] for r in view.movers(1)] == [7]  # moved two places


def test_stage_view_after_mmr_and_after_fusion_alone():
    from rag_core.retrieval.comparison import stage_view

    mmr = stage_view([_pool_row(1, 1, pre_mmr_rank=1), _pool_row(2, 2, pre_mmr_rank=3),
                      _pool_row(3, 3, pre_mmr_rank=2)])
    assert mmr.stage == "mmr" and [r["movement"] for r in mmr.after()] == ["same", "up", "down"]
    # fusion only: against the best first-stage rank; ties go to the passage more lists found
    fused = stage_view([
        _pool_row(1, 10, first_stage_ranks={"bm25": 2, "dense": 1}),
        _pool_row(2, 11, first_stage_ranks={"bm25": 1, "dense": None}),
        _pool_row(3, 12, first_stage_ranks={"bm25": 3, "dense": 2}),
    ])
    assert fused.stage == "fusion"
    assert {r["chunk_index"]: r["before"] for r in fused.rows} == {10: 1, 11: 2, 12: 3}
    assert [r["movement"] for r in fused.after()] == ["same", "same", "same"]
    assert fused.movers(3) == []


def test_a_cross_encoder_row_reports_its_fused_rank_before_the_re_reading(index):
    from rag_core.retrieval import ranking
    from rag_core.retrieval.search_spec import SearchSpec

    class Reverse:  # a re-reading stage that puts the fused order upside down
        def score(self, query, texts):
            return [float(n) for n in range(len(texts))], [False] * len(texts)

    spec = SearchSpec(reranker="none", lexical="both")
    fused = ranking.search_with_spec("alpha beta", index, spec, top=5)
    status = ranking.spec_status(spec)
    from dataclasses import replace

    real = ranking.spec_status
    try:
        ranking.spec_status = lambda s: replace(status, reranker=Reverse())
        reread = ranking.search_with_spec("alpha beta", index, spec, top=5)
    finally:
        ranking.spec_status = real
    fused_rank = {r["chunk_index"]: r["rank"] for r in fused}
    assert reread and all(r["pre_rerank_rank"] == fused_rank[r["chunk_index"]] for r in reread)
    assert "pre_rerank_rank" not in fused[0]


def test_back_matter_left_out_of_all_three_lists_on_request():
    """A chunk marked as a reference list is in every list by default, marked, and in none with
    ``back_matter=False`` (issue 28: bibliographies answered questions)."""
    from rag_core.retrieval.search_spec import SearchSpec

    index = build_index(DOCS, compute_embeddings=False)
    index.chunks[0]["back_matter"] = "references"  # a.pdf's passage
    spec = SearchSpec(reranker="none")
    shown = compare("alpha beta", index, exact_mode="literal", exact_query="alpha", top=5, spec=spec)
    for rows in (shown.tfidf, shown.hybrid, shown.exact):
        assert [r.get("back_matter") for r in rows if r["source"] == "a.pdf"] and all(
            r.get("back_matter") == "references" for r in rows if r["source"] == "a.pdf")
    left = compare("alpha beta", index, exact_mode="literal", exact_query="alpha", top=5, spec=spec,
                   back_matter=False)
    for rows in (left.tfidf, left.hybrid, left.exact):
        assert rows and "a.pdf" not in {r["source"] for r in rows}
