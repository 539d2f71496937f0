"""Hybrid search rows explain themselves; lexical and dense rankings; bad input."""

from __future__ import annotations

import numpy as np
import pytest

from rag_core import QueryError, search, search_dense, search_exact, search_lexical
from rag_core.citations.verdicts import verify_quote
from rag_core.index.build import RagIndex
from rag_core.retrieval.comparison import compare

DPR = "ml_dpr_karpukhin2020_arxiv2004.04906.pdf"
CMB = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"


@pytest.fixture(scope="module")
def index(paper_library):
    return paper_library.load_index("papers")


def test_hybrid_rows_carry_provenance_and_pages(index):
    rows = search("dense vector retrieval of passages for open-domain question answering", index, top=8)
    assert rows[0]["source"] == DPR
    for row in rows:
        assert row["found_by"] in {"tfidf", "bm25", "tfidf+bm25", "dense", "both"}
        ranks = row["first_stage_ranks"]
        assert set(ranks) == {"tfidf", "bm25", "dense"}
        if row["found_by"] == "dense":
            assert ranks["dense"] and not ranks["tfidf"] and not ranks["bm25"]
        if row["found_by"] == "both":
            assert ranks["dense"] and (ranks["tfidf"] or ranks["bm25"])
        assert -1.0 <= row["dense_cosine"] <= 1.0
        assert 1 <= row["page_start"] <= row["page_end"] <= 13
        assert row["chunk_index"] is not None and index.chunks[row["chunk_index"]]["text"] == row["text"]
        assert row["pool_size"] >= len(rows)
        assert row["truncated"] is None  # no cross-encoder read it


def test_hybrid_finds_a_paraphrase_that_tfidf_misses(index):
    # no word of this question is in the answer sentence's key terms; meaning carries it
    question = "what signature would very light scalar particles leave in the cosmic background radiation"
    hybrid = search(question, index, top=3)
    assert hybrid[0]["source"] == CMB


def test_lexical_and_dense_rankings(index):
    tfidf = search_lexical("BM25 baseline", index, 5)
    assert all(r["score_type"] == "cosine" and r["score"] == r["cosine"] for r in tfidf)
    bm25 = search_lexical("BM25 baseline", index, 5, method="bm25")
    assert bm25[0]["source"] == DPR and bm25[0]["score_type"] == "bm25"
    assert [r["score"] for r in bm25] == sorted((r["score"] for r in bm25), reverse=True)
    dense = search_dense("dark matter", index, 5)
    assert dense[0]["source"] == CMB and dense[0]["score_type"] == "dense_cosine"


def test_sources_filter(index):
    rows = search("retrieval", index, top=5, sources=[CMB])
    assert rows and {r["source"] for r in rows} == {CMB}
    rows = search("retrieval", index, top=5, rerank=False, sources=[CMB])
    assert {r["source"] for r in rows} == {CMB}


@pytest.mark.parametrize("query", ["", "   ", "\n"])
def test_empty_query_is_refused(index, query):
    with pytest.raises(ValueError, match="empty"):
        search(query, index)
    with pytest.raises(ValueError, match="empty"):
        compare(query, index)


def test_bad_arguments(index):
    with pytest.raises(ValueError):
        search("x", index, top=0)
    with pytest.raises(ValueError):
        search("x", index, pool=0)
    with pytest.raises(ValueError, match="embedded with"):
        search("x", index, embedding_model="some/other-model")


def test_compare_cross_references_the_lists(index):
    result = compare("passage retrieval", index, top=5)
    assert len(result.tfidf) == 5 and len(result.hybrid) == 5
    tfidf_ranks = {r["chunk_index"]: r["rank"] for r in result.tfidf}
    for row in result.hybrid:
        expected = tfidf_ranks.get(row["chunk_index"])
        assert row["tfidf_list_rank"] == expected
        if expected is None:
            assert row["movement"] == "new"
        else:
            assert row["movement"] == ("up" if row["rank"] < expected else "down" if row["rank"] > expected
                                       else "same")
    assert all(r["movement"] == "same" for r in result.tfidf)
    assert result.exact and all(" ".join(h["match"].split()).lower() == "passage retrieval" for h in result.exact)
    for hit in result.exact:  # score and cosine next to each other, as in the ranked lists
        assert hit["score_type"] == "exact" and hit["cosine"] > 0 and hit["doc_id"]
    assert result.reranker_kind == "fusion" and "cross-encoder" in result.reranker_detail.lower()
    assert set(result.timings_ms) == {"tfidf", "hybrid", "exact"}


def test_compare_reports_a_bad_regex_without_failing(index):
    query = "(dense passage retrieval"  # an unclosed group: not a regular expression
    result = compare(query, index, top=5, exact_mode="regex")
    assert result.exact == [] and "regex" in result.exact_error.lower()
    # the ranked lists still stand, as a search without the exact list gives them
    added = {"tfidf_list_rank", "hybrid_list_rank", "exact_list_rank", "movement"}
    assert [{k: v for k, v in r.items() if k not in added} for r in result.tfidf] == \
        search(query, index, top=5, rerank=False)
    assert len(result.hybrid) == 5 and result.hybrid[0]["source"] == DPR


def test_verify_quote_levels(index):
    chunk = next(c for c in index.chunks if c["source"] == DPR and c["page_start"] == 2)
    sentence = " ".join(chunk["text"].split()[10:22])
    check = verify_quote(sentence, index)
    assert check.verdict == "verbatim"
    assert check.hits[0]["source"] == DPR and check.hits[0]["page"] >= 2
    # curly quotes, a line break and a ligature still match after folding
    words = chunk["text"].split()[10:22]
    mangled = "“" + " ".join(words[:6]) + "\n  " + " ".join(words[6:]) + "”"
    mangled = mangled.replace("fi", "ﬁ")
    check = verify_quote(mangled.strip("“”"), index)
    assert check.verdict == "verbatim" and check.folded
    check = verify_quote("Quantum gravity was solved by a committee of cats in 1850.", index)
    assert check.verdict in {"not_found", "related"} and check.closest and not check.hits


def test_compare_scores_tfidf_once_and_keeps_the_rows(index, monkeypatch):
    query = "passage retrieval"
    expected_tfidf = search(query, index, top=5, rerank=False)
    expected_hybrid = search(query, index, top=5)
    calls = []
    original = RagIndex.tfidf_scores

    def counting(self, text):
        calls.append(text)
        return original(self, text)

    monkeypatch.setattr(RagIndex, "tfidf_scores", counting)
    result = compare(query, index, top=5)
    assert calls == [query]  # once for the three lists (it was three times)
    assert result.exact  # the exact list needed cosines too
    added = {"tfidf_list_rank", "hybrid_list_rank", "exact_list_rank", "movement"}
    assert [{k: v for k, v in r.items() if k not in added} for r in result.tfidf] == expected_tfidf
    assert [{k: v for k, v in r.items() if k not in added} for r in result.hybrid] == expected_hybrid


INVALID = ["caf\udce9 au lait", "\udcff", "wormhole \ud800"]


@pytest.mark.parametrize("query", INVALID)
def test_invalid_unicode_is_a_query_error_everywhere(index, query):
    calls = [
        lambda: search(query, index),
        lambda: search(query, index, rerank=False),
        lambda: search_lexical(query, index, method="bm25"),
        lambda: search_dense(query, index),
        lambda: compare(query, index),
        lambda: search_exact(query, index),
        lambda: search_exact(query, index, regex=True),
        lambda: search_exact(query, index, mode="normalized"),
    ]
    for call in calls:
        with pytest.raises(QueryError, match="not valid text"):
            call()
    assert issubclass(QueryError, ValueError)


def test_the_cosines_of_a_bm25_or_dense_list_equal_the_whole_tfidf_column(tmp_path):
    """A BM25 list reads the TF-IDF cosines of its rows only (at a million passages the whole
    column cost 8 ms a query); they must be the very numbers the whole column holds."""
    from rag_core.index.build import build_index_from_chunks as build_index
    from rag_core.index.segments import SegmentedIndex
    from rag_core.retrieval.ranking import search_lexical

    texts = [f"passage {i} about {'retrieval' if i % 3 else 'proteins'} and {'dense' if i % 2 else 'sparse'} "
             f"vectors, retrieval augmented generation number {i % 7}" for i in range(60)]
    chunks = [{"text": t, "source": f"doc{i // 10}.pdf"} for i, t in enumerate(texts)]
    single = build_index(chunks, compute_embeddings=False)
    segmented = SegmentedIndex([build_index(chunks[:25], compute_embeddings=False),
                                build_index(chunks[25:], compute_embeddings=False)])
    query = "dense retrieval vectors"
    for index in (single, segmented):
        whole = index.tfidf_scores(query)
        rows = search_lexical(query, index, 20, method="bm25")
        assert len(rows) == 20 and any(r["cosine"] > 0 for r in rows)
        for row in rows:
            assert row["cosine"] == pytest.approx(float(whole[row["chunk_index"]]), abs=1e-6)
        picked = np.array([59, 0, 31, 7, 24, 25])
        assert index.tfidf_at(query, picked) == pytest.approx(whole[picked], abs=1e-6)


def test_tfidf_at_with_posting_lists_out_of_order():
    """A CSC matrix whose chunk numbers are not in order (not made by tocsc) still gives the right cosines."""
    import scipy.sparse as sp

    from rag_core.index.lexical import TfidfScorer, fit_tfidf

    texts = [f"dense retrieval {'of proteins' if i % 2 else 'with vectors'} number {i}" for i in range(12)]
    vectorizer, matrix = fit_tfidf(texts)
    csc = matrix.tocsc()
    shuffled = csc.copy()
    for j in range(shuffled.shape[1]):  # reverse each column's entries
        a, b = shuffled.indptr[j], shuffled.indptr[j + 1]
        shuffled.indices[a:b] = shuffled.indices[a:b][::-1].copy()
        shuffled.data[a:b] = shuffled.data[a:b][::-1].copy()
    shuffled.has_sorted_indices = False
    rows = np.array([11, 0, 5, 6])
    want = TfidfScorer(vectorizer, csc).scores("dense vectors")[rows]
    assert TfidfScorer(vectorizer, shuffled).scores_at("dense vectors", rows) == pytest.approx(want, abs=1e-6)
    assert TfidfScorer(vectorizer, csc).scores_at("dense vectors", rows) == pytest.approx(want, abs=1e-6)
    assert sp.issparse(shuffled)


def test_a_dense_list_over_a_few_embedded_chunks_does_not_outrank_the_lexical_finds():
    """Right after an upload 16 of 1,374 passages had vectors; min-max scaling put the closest of
    those 16 (TF-IDF cosine 0, an unrelated paper) first in the hybrid list."""
    from rag_core.index.build import build_index_from_chunks

    words = ["retrieval", "augmented", "generation", "retrieved", "passages"]
    texts = [" ".join(words[: 1 + i % 5]) + f" and other words, note {i}" for i in range(20)]  # graded matches
    texts += [f"ultra high vacuum preparation chamber for the microscope tip, part {i}" for i in range(20)]
    chunks = [{"text": t, "source": f"d{i // 20}.pdf"} for i, t in enumerate(texts)]
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((40, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = build_index_from_chunks(chunks, embeddings=vectors)
    query = "how does retrieval augmented generation use retrieved passages"
    index._query_vector = ((query, index.embedding_model, index.encoder), vectors[25])  # closest: chunk 25
    mask = np.zeros(40, dtype=bool)
    mask[20:24] = True  # only four chunks of the unrelated document have vectors so far
    mask[25] = True
    index.dense_mask = mask
    top = [r["chunk_index"] for r in search(query, index, top=5, cross_encoder_model="")]
    assert all(i < 20 for i in top), top  # the lexical finds lead; the unrelated chunk is not in the top 5
    index.dense_mask = None  # every chunk has its vector: the dense list has its full say again
    rows = search(query, index, top=40, cross_encoder_model="")
    assert rows[0]["chunk_index"] < 20 and 25 in [r["chunk_index"] for r in rows[:25]]
