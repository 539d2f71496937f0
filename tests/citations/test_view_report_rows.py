"""What the Verify page says of a manuscript's works and how tall the report's rows are (issue 28):
"13 entries in its reference list" for 6 works in the draft and 7 in the .bib counted right; a
report row tall enough for its longest "cited → matched to"."""

from __future__ import annotations

from rag_core.citations.manuscript import add_bib_references, manuscript_from_text
from rag_core.citations.view import references_summary, report_records, report_row_height

BIB = "\n".join(
    f"@article{{k{n}, title={{Work number {n} about retrieval}}, author={{Author{n}, Ann}}, year={{2020}}}}"
    for n in range(1, 8))
DRAFT = ("\n\n".join(f"Claim number {n} is made here [@k{n}]." for n in range(1, 7)) + "\n\nReferences\n\n"
         + "\n".join(f"Author{n}, A. ({2020}). Work number {n} about retrieval." for n in range(1, 7)))


def test_six_works_in_the_draft_and_seven_in_the_bib_are_not_thirteen_entries():
    manuscript = manuscript_from_text(DRAFT, kind="markdown")
    add_bib_references(manuscript, ("refs.bib", BIB.encode()))
    assert len(manuscript.references) == 13  # what the page used to call "13 entries in its reference list"
    text = references_summary(manuscript.references, manuscript.statements())
    assert text == "6 works cited; 6 entries in its reference list; refs.bib: 7 records, 6 of them cited"


def test_a_draft_without_a_list():
    manuscript = manuscript_from_text("A claim with a marker is here (Smith et al., 2020).")
    assert references_summary(manuscript.references, manuscript.statements()) == (
        "1 work cited; 0 entries in its reference list")


def test_a_report_row_is_tall_enough_for_its_longest_cell():
    short = {"statement": "Short.", "cited \u2192 matched to": "[1] \u2192 matched to a.pdf"}
    long = {"statement": "Short.", "cited \u2192 matched to": (
        "(Karpukhin et al., 2020) \u2192 matched to ml_dpr_karpukhin2020_arxiv2004.04906.pdf (first author "
        "V. Karpukhin + year 2020 + title) \u00b7 (Lewis et al., 2020) \u2192 ambiguous: "
        "ml_rag_lewis2020_arxiv2005.11401.pdf (2 entries of the reference list are Lewis 2020 (Retrieval-augmented "
        "generation for knowledge-intensive NLP…; BART: Denoising sequence-to-sequence pre-training…); the "
        "marker does not say which)")}
    assert report_row_height([short]) == 14 + 21 * 3  # three lines at least
    tall = report_row_height([short, long])
    assert tall > report_row_height([short]) and tall <= 14 + 21 * 12
    lines = (tall - 14) // 21
    assert lines * ((280 - 16) // 7.4) >= len(long["cited \u2192 matched to"]) * 0.9


def test_report_records_name_no_document_for_a_work_not_in_the_collection():
    row = {"statement": "s", "verdict": "related", "source": "a.pdf", "page": 3, "not_in_collection": True,
           "meaning": "unclear"}
    (record,) = report_records([row])
    assert record["verdict"] == "not_in_collection" and record["document"] == "" and record["page"] is None
