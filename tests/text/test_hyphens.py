"""Line-end hyphens decided by the document's own words (issue 28: "knowledgeintensive")."""

from __future__ import annotations

from rag_core.text.hyphens import Vocabulary, join_line_hyphens, resolve_line_hyphens


def test_a_real_hyphen_is_kept_and_a_broken_word_is_joined():
    pages = ["Tasks that are knowledge-\nintensive need a dual-\nencoder that we pre-\ntrain, a retrie-\nval step and "
             "infor-\nmation.",
             "Knowledge-intensive tasks. A dual model and an encoder. We pre-train it for retrieval."]
    first = resolve_line_hyphens(pages)[0]
    assert "knowledge-intensive\n" in first  # the document writes it hyphenated elsewhere
    assert "dual-encoder\n" in first  # "dualencoder" is no word of it; "dual" and "encoder" are
    assert "pre-train,\n" in first
    assert "retrieval\n" in first  # written joined elsewhere
    assert "information." in first  # "infor" and "mation" are no words of it
    # the lines stay as many (but the last: its break ended the page, the word ends it now)
    assert first.count("\n") == pages[0].count("\n") - 1


def test_a_word_written_joined_elsewhere_is_joined_and_capitals_are_left_alone():
    vocabulary = Vocabulary(["We finetuned the model; it was pretrained. Lucene-BM25."])
    assert join_line_hyphens("the model was fine-\ntuned and pre-\ntrained", vocabulary) == \
        "the model was finetuned\nand pretrained"
    assert join_line_hyphens("Lucene-\nBM25 and left-to-\nright", vocabulary) == "Lucene-\nBM25 and left-to-right"


def test_the_pdf_extraction_keeps_the_hyphen_of_a_compound(tmp_path):
    from fpdf import FPDF

    from rag_core.pdf.extraction import extract_pdf

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    for line in ("Retrieval helps knowledge-", "intensive tasks, and knowledge-intensive tasks need a retrie-",
                 "val step with a dual-", "encoder; a dual model or an encoder alone is weaker."):
        pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    text = extract_pdf(bytes(pdf.output()), name="h.pdf").pages[0].text
    assert "knowledge-intensive" in text.split("\n")[0]
    assert "retrieval" in text and "retrie-" not in text
    assert "dual-encoder;" in text
