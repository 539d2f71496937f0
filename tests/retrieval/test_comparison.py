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
