"""Passages as a list shows them (rag_core.output.passages): chips, boundaries, marks, overlaps, order."""

from __future__ import annotations

from rag_core.output.passages import (
    MARK_CLOSE,
    MARK_OPEN,
    from_boundary,
    list_passage,
    marked_text,
    ordered_by,
    overlap_marks,
    overlap_text,
    passage_spans,
    term_spans,
    title_chip,
    verify_statement,
)

BERT = {"source": "ml_bert_devlin2018_arxiv1810.04805.pdf", "authors": ["Jacob Devlin", "Ming-Wei Chang"],
        "year": 2019, "title": "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding"}


def test_the_title_chip_is_first_author_year_and_page():
    assert title_chip(BERT, {"page_start": 4, "page_end": 4}) == "Devlin 2019 · p. 4"
    assert title_chip(BERT, {"page_start": 12, "page_end": 12, "page_label": "1"}) == "Devlin 2019 · p. 12 (printed 1)"
    assert title_chip({"authors": "Devlin, Jacob; Chang, Ming-Wei"}) == "Devlin"
    no_author = title_chip({"source": "a_rather_long_file_name_of_a_paper.pdf"}, {"page_start": 2})
    assert no_author == "a_rather_long_file_na… · p. 2"
    assert title_chip(None, {"source": "x.pdf", "page_start": 1}) == "x · p. 1"


def test_a_chip_without_an_author_falls_back_to_the_file_name():
    """Issue 28: the Mitiq manual's chip read "2021 · p. 36", which names no document."""
    mitiq = {"source": "qem_mitiq_manual_v0.5.0_2021.pdf", "year": 2021}
    assert title_chip(mitiq, {"page_start": 36}) == "qem_mitiq_manual_v0.5… 2021 · p. 36"
    scan = {"source": "awkward_scanned_no_text_huckfinn_page22.pdf", "no_record": "a scan"}
    assert title_chip(scan, {"page_start": 1, "ocr": True}) == "awkward_scanned_no_te… · p. 1 (OCR text)"


def test_a_passage_cut_mid_word_starts_at_a_sentence_or_a_word():
    assert from_boundary("ting. The model learns. More text follows.") == ("The model learns. More text follows.", 6)
    text, cut = from_boundary("earning problem is hard because no sentence ends here for a while and more words")
    assert text.startswith("problem") and cut == len("earning ")
    assert from_boundary("The start of a document.", mid_document=False) == ("The start of a document.", 0)
    assert from_boundary("") == ("", 0)
    assert from_boundary("oneverylongwordwithoutanyspaceatall" * 3)[1] == 0  # nothing to cut at: left whole


def test_query_words_are_marked_in_plain_text():
    text = "The masked language model masks tokens; a Masked LM."
    spans = term_spans(text, "masked language model")
    assert [text[s:e] for s, e in spans] == ["masked", "language", "model", "Masked"]
    assert marked_text("a b c", [(2, 3)]) == f"a {MARK_OPEN}b{MARK_CLOSE} c"
    assert marked_text("abc", [(1, 9), (0, 1)]) == f"{MARK_OPEN}a{MARK_CLOSE}bc", "a span outside the text is skipped"
    hostile = "**bold** <img src=x> [link](http://x) mask"
    assert list_passage(hostile, "mask", mid_document=False) == \
        f"**bold** <img src=x> [link](http://x) {MARK_OPEN}mask{MARK_CLOSE}", "nothing is interpreted or lost"


def test_a_list_passage_starts_at_a_boundary_and_shows_the_first_query_word():
    text = "ting. " + "Filler words go here. " * 30 + "The dense retriever wins. " + "More filler. " * 30
    shown = list_passage(text, "dense retriever", chars=120)
    assert shown.startswith("…") and shown.endswith("…")
    assert f"{MARK_OPEN}dense{MARK_CLOSE} {MARK_OPEN}retriever{MARK_CLOSE}" in shown
    assert "ting." not in shown
    start = list_passage("ting. The model wins.", "")
    assert start == "…The model wins."


def test_an_exact_hit_is_shown_in_its_context_with_the_match_whole():
    text = "Some words before. " * 10 + "masked language\nmodel" + " and words after." * 10
    at = text.index("masked")
    shown = list_passage(text, match=(at, at + len("masked language\nmodel")), chars=120)
    assert f"{MARK_OPEN}masked language model{MARK_CLOSE}" in shown
    assert shown.startswith("…") and shown.endswith("…") and len(shown) < 160


def test_overlapping_neighbours_are_marked_with_the_rank_above():
    rows = [{"rank": 1, "chunk_index": 7}, {"rank": 2, "chunk_index": 3}, {"rank": 3, "chunk_index": 8},
            {"rank": 4, "chunk_index": 20}]
    chunks = [{"doc_id": "a", "start": 1000 * i, "end": 1000 * i + 1200} for i in range(10)] + \
             [{"doc_id": "b", "start": 1000 * i, "end": 1000 * i + 1200} for i in range(11)]
    spans = passage_spans(chunks, rows)
    assert spans[7] == ("a", 7000, 8200) and spans[20] == ("b", 10000, 11200)
    marks = overlap_marks(rows, spans)
    assert marks == {3: [1]}, "chunk 8 shares its first 200 characters with chunk 7; chunk 20 is another document"
    assert overlap_text(marks[3]) == "overlaps #1" and overlap_text([]) == ""


def test_the_list_says_what_orders_it():
    assert "MMR" in ordered_by([{"score_type": "fused", "pre_mmr_rank": 3}], "fused")
    assert "not in order" in ordered_by([{"score_type": "fused"}], "mmr")
    assert "cross-encoder" in ordered_by([{"score_type": "rerank"}], "cross_encoder")
    assert "fused score" in ordered_by([{"score_type": "fused"}], "fused")
    assert ordered_by([], "fused") == ""


def test_a_verify_statement_is_whole_sentences_from_a_boundary():
    text = "ting. " + "The model reads the passage. " * 20
    statement = verify_statement(text, chars=100)
    assert statement.startswith("The model") and statement.endswith(".") and len(statement) <= 100
    assert verify_statement("short text", mid_document=False) == "short text"


def test_a_passage_without_marks_for_the_judging_cards():
    shown = list_passage("ting. The masked model wins.", "masked", marks=False)
    assert shown == "…The masked model wins."


def test_page_turn_reads_on_and_keeps_the_mark_on_the_passage_page():
    from rag_core.output.passages import page_turn

    own = page_turn([4, 5], total=9)
    assert (own.shown, own.marked, own.previous, own.next, own.at_passage) == ((4, 5), (4, 5), 3, 6, True)
    on = page_turn([4, 5], total=9, page=6)
    assert (on.shown, on.marked, on.previous, on.next, on.at_passage) == ((6,), (), 5, 7, False)
    back = page_turn([4, 5], total=9, page=5)
    assert back.marked == (5,) and not back.at_passage
    first, last = page_turn([1], total=1), page_turn([3], total=3, page=99)
    assert (first.previous, first.next) == (None, None)
    assert (last.shown, last.marked, last.next) == ((3,), (3,), None)
    assert page_turn([2], total=None, page=3).next == 4  # no known end after the passage


def test_counted():
    from rag_core.output.render import counted

    assert [counted(1, "query"), counted(2, "query"), counted(0, "passage"), counted(3, "day")] == [
        "1 query", "2 queries", "0 passages", "3 days"]
