"""The sentence Compare's passage dialog sends to the Verify page: the one that matched, not the
whole passage (issue 28)."""

from __future__ import annotations

from rag_core.output.passages import query_sentence

PASSAGE = ("Retrieval is a core step of open-domain question answering. We show that dense passage retrieval "
           "outperforms a strong BM25 system by 9 to 19 points. Training takes a day on eight GPUs.")


def test_the_sentence_with_most_of_the_query_words_is_sent():
    assert query_sentence(PASSAGE, "does dense retrieval beat BM25") == (
        "We show that dense passage retrieval outperforms a strong BM25 system by 9 to 19 points.")


def test_an_exact_match_sends_its_own_sentence():
    start = PASSAGE.index("eight GPUs")
    assert query_sentence(PASSAGE, "whatever", [(start, start + 10)]) == "Training takes a day on eight GPUs."


def test_no_word_in_common_sends_the_opening_and_no_text_nothing():
    assert query_sentence(PASSAGE, "quokka burrows", mid_document=False) == PASSAGE
    assert query_sentence("", "dense") == ""
