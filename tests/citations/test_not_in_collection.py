"""A statement whose cited work is not in the collection has that as its outcome in every view
(issue 28): its own count in every summary, meaning unclear, the passages found elsewhere for
reference only; one statement resolves its citation like a manuscript's; the HTML report carries
each verdict's passage with document and page."""

from __future__ import annotations

import csv
import io
import json

import pytest

from rag_core.citations.manuscript import check_one_statement, check_statements, manuscript_from_text
from rag_core.citations.report import outcome, rows_to_csv, rows_to_html, rows_to_json, severity
from rag_core.citations.view import outcome_counts, report_records, statement_option, verdict_summary
from rag_core.index.build import build_index_from_chunks
from rag_core.pdf.extraction import PageText
from rag_core.text.chunking import chunk_pages

SPLADE = ("Sparse lexical representations expand each query and document with related terms learned by a "
          "masked language model.")
DPR_TEXT = ("Dense passage retrieval outperforms a strong Lucene-BM25 system greatly by 9 to 19 percent absolute "
            "in terms of top-20 passage retrieval accuracy.")
SEAL_TEXT = ("Autoregressive search engines generate substrings as document identifiers, and sparse lexical "
             "representations expand each query with related terms from a language model.")
DOCUMENTS = [
    {"source": "dpr.pdf", "authors": ["Vladimir Karpukhin", "Barlas Oğuz"], "year": 2020,
     "title": "Dense Passage Retrieval for Open-Domain Question Answering"},
    {"source": "seal.pdf", "authors": ["Michele Bevilacqua"], "year": 2022,
     "title": "Autoregressive Search Engines: Generating Substrings as Document Identifiers"},
]


@pytest.fixture(scope="module")
def index():
    chunks = []
    for source, text in (("dpr.pdf", DPR_TEXT), ("seal.pdf", SEAL_TEXT)):
        for chunk in chunk_pages([PageText(1, text)], source):
            chunk["doc_id"] = source
            chunks.append(chunk)
    return build_index_from_chunks(chunks, compute_embeddings=False)


def rows_of(text, index):
    return check_statements(manuscript_from_text(text).statements(), index, documents=DOCUMENTS)


def test_a_cited_work_not_in_the_collection_is_the_outcome(index):
    (row,) = rows_of(f"{SPLADE[:-1]} (Formal et al., 2021).", index)
    assert row.not_in_collection and outcome(row) == "not_in_collection"
    assert row.meaning == "unclear" and row.meaning_cues == [] and not row.misattributed
    assert row.message.startswith("The cited work is not in the collection")
    assert row.check.meaning == "unclear" and "nothing to compare" in row.check.meaning_note
    data = row.to_dict()
    assert data["outcome"] == "not_in_collection" and data["not_in_collection"] is True
    # what was found elsewhere is for reference, never the answer
    assert data["evidence"] and {p["role"] for p in data["evidence"]} == {"for reference"}
    (record,) = report_records([data])
    assert record["verdict"] == "not_in_collection" and record["document"] == "" and record["page"] is None
    assert record["similarity"] is None  # the score of a passage of another work
    assert verdict_summary([data]).startswith("1 statement: 0 verbatim · 0 near_verbatim · 0 related · 0 not_found"
                                              " · 1 not in collection")
    assert outcome_counts([data])["not_in_collection"] == 1
    assert statement_option(1, data).startswith("#1 · not_in_collection · ")
    assert severity(data) == 1


def test_one_cited_work_present_is_checked_as_usual(index):
    (row,) = rows_of(f"{DPR_TEXT[:-1]} (Formal et al., 2021; Karpukhin et al., 2020).", index)
    assert not row.not_in_collection and outcome(row) == "verbatim" and row.source == "dpr.pdf"


def test_the_exports_carry_the_outcome_and_the_evidence(index):
    rows = rows_of(f"{SPLADE[:-1]} (Formal et al., 2021).\n\n\u201c{DPR_TEXT}\u201d (Karpukhin et al., 2020).", index)
    page = rows_to_html(rows)
    assert "Cited work not in collection: 1" in page and "Verbatim: 1" in page
    assert "For reference (not evidence): seal.pdf, p. 1" in page or "For reference (not evidence): dpr.pdf" in page
    assert "Evidence: dpr.pdf, p. 1" in page and "<mark>" in page
    assert "passages close in meaning are below" not in page.lower() or "Close in meaning" in page
    table = list(csv.DictReader(io.StringIO(rows_to_csv(rows).decode("utf-8-sig"))))
    assert [r["outcome"] for r in table] == ["not_in_collection", "verbatim"]
    assert table[1]["evidence"].startswith("evidence: dpr.pdf, p. 1: ")
    assert json.loads(rows_to_json(rows))[0]["outcome"] == "not_in_collection"


def test_a_related_statement_carries_its_close_passages_in_the_html(index):
    rows = check_statements(manuscript_from_text("Dense retrieval beats a BM25 baseline on passage accuracy "
                                                 "[1].\n\nReferences\n\n[1] V. Karpukhin et al. Dense passage "
                                                 "retrieval for open-domain question answering. 2020.").statements(),
                            index, documents=DOCUMENTS)
    (row,) = rows
    assert row.verdict in ("related", "not_found") and row.evidence
    page = rows_to_html(rows)
    assert "dpr.pdf, p. 1" in page and "<mark>" in page


def test_one_statement_resolves_its_citation_and_leaves_it_out_of_the_words(index):
    row = check_one_statement(f"{DPR_TEXT} (Karpukhin et al., 2020)", index, documents=DOCUMENTS)
    assert row.check.quote == DPR_TEXT and row.verdict == "verbatim"
    assert [r["status"] for r in row.resolutions] == ["matched"] and row.cited_sources == ["dpr.pdf"]
    assert "et al" not in row.check.quote and "2020" not in row.check.quote
    absent = check_one_statement(f"{SPLADE} (Formal et al., 2021)", index, documents=DOCUMENTS)
    assert absent.not_in_collection and absent.meaning == "unclear"
    plain = check_one_statement(DPR_TEXT, index, documents=DOCUMENTS)
    assert plain.resolutions == [] and plain.verdict == "verbatim" and not plain.not_in_collection
    quoted = check_one_statement(f"They say \u201c{DPR_TEXT}\u201d (Karpukhin et al., 2020).", index,
                                 documents=DOCUMENTS, sources=["dpr.pdf"])
    assert quoted.kind == "quote" and quoted.check.quote == DPR_TEXT and quoted.verdict == "verbatim"
