"""Back matter found per passage: reference lists with or without a heading, acknowledgements,
and the prose around them left alone."""

from __future__ import annotations

from rag_core.text.back_matter import back_matter_mask, back_matter_spans, is_back_matter, mark_back_matter
from rag_core.text.chunking import PageText, chunk_pages, join_pages
from rag_core.text.passage_context import chunk_pdf

PROSE = ("We show that the retriever and the generator are trained together and that the model is "
         "better at answering questions when it can read the passages it retrieves from the index. ") * 6
REFERENCES = "\n".join(
    f"[{i}] Jacob Devlin{i}, Ming-Wei Chang, Kenton Lee, Kristina Toutanova. 20{10 + i % 10}. BERT: "
    f"Pre-training deep bidirectional transformers. In NAACL-HLT, pages {i}1–{i}9. arXiv:21{i:02d}.0{i}."
    for i in range(1, 15))
THANKS = "We thank the reviewers and our colleagues for their comments. This work was funded by a grant."


def _pages():
    return [PageText(1, "1 Introduction\n" + PROSE), PageText(2, "5 Conclusion\n" + PROSE + "\nAcknowledgements\n"
                     + THANKS + "\nReferences\n" + REFERENCES), PageText(3, "A Appendix details\n" + PROSE)]


def test_a_reference_list_and_acknowledgements_are_marked_and_the_prose_is_not():
    chunks = chunk_pdf(_pages(), "paper.pdf", 400, 50)
    kinds = {c["back_matter"] for c in chunks}
    assert kinds == {None, "references", "acknowledgements"} or kinds == {None, "references"}
    for chunk in chunks:
        text = chunk["text"]
        if "Proceedings" in text and "retriever" not in text:
            assert chunk["back_matter"] == "references", text
        if "A Appendix" in text or "Introduction" in text:
            assert chunk["back_matter"] is None, text
    text, _ = join_pages(_pages())
    spans = back_matter_spans(text)
    assert [k for _, _, k in spans] == ["acknowledgements", "references"]
    # the reference list stops at the appendix
    assert text[spans[1][0]:spans[1][1]].startswith("References") and "A Appendix" not in text[spans[1][0]:spans[1][1]]


def test_a_reference_list_without_a_heading_is_found_by_how_it_reads():
    pages = [PageText(1, PROSE), PageText(2, REFERENCES)]
    chunks = chunk_pages(pages, "p.pdf", 600, 50)
    mark_back_matter(chunks, join_pages(pages)[0])
    assert chunks[0]["back_matter"] is None
    assert chunks[-1]["back_matter"] == "references"


def test_spaced_and_numbered_headings_and_no_table_of_contents_line():
    text = "Contents\n8 References 107\n" + PROSE + "\nB I B L I O G R A P H Y\n" + REFERENCES
    spans = back_matter_spans(text)
    assert len(spans) == 1 and text[spans[0][0]:].startswith("B I B L I O G R A P H Y")


def test_chunks_stored_before_detection_are_not_back_matter():
    old = [{"text": REFERENCES, "source": "a.pdf"}, {"text": PROSE, "source": "a.pdf"}]
    assert not any(is_back_matter(c) for c in old) and back_matter_mask(old) is None
    new = [{**old[0], "back_matter": "references"}, {**old[1], "back_matter": None}]
    assert back_matter_mask(new).tolist() == [True, False]
