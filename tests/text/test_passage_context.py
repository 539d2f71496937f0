"""Passage context (title and section for BM25 and the bi-encoder) and word-boundary chunk spans."""

from __future__ import annotations

import random

import pytest

from rag_core.index.build import build_index_from_chunks, index_text
from rag_core.text.chunking import PageText, chunk_pages, chunk_spans, word_spans
from rag_core.text.passage_context import add_context, chunk_pdf, guess_title, section_headings


def test_word_spans_never_cut_a_word_and_cover_the_text():
    rng = random.Random(4)
    words = ["".join(rng.choice("abcdefghijk") for _ in range(rng.randint(1, 12))) for _ in range(2500)]
    text = " ".join(words)
    for size, overlap in ((1200, 200), (500, 0), (300, 150)):
        spans = list(word_spans(text, size, overlap))
        assert spans[0][0] == 0 and spans[-1][1] == len(text)
        previous_end = 0
        for start, end in spans:
            assert 0 < end - start <= size
            assert start <= previous_end, "no gap between chunks"
            assert start == 0 or text[start - 1].isspace() or text[start].isspace()
            assert end == len(text) or text[end].isspace() or text[end - 1].isspace()
            previous_end = end
        fixed = list(chunk_spans(len(text), size, overlap))
        assert abs(len(spans) - len(fixed)) <= len(fixed) // 10 + 1


def test_word_spans_cut_a_word_longer_than_the_slack():
    text = "x" * 5000
    assert list(word_spans(text, 1000, 100)) == list(chunk_spans(len(text), 1000, 100))


def test_chunk_pages_with_word_boundaries_keeps_pages():
    pages = [PageText(1, "alpha beta gamma " * 100), PageText(2, "delta epsilon " * 100)]
    chunks = chunk_pages(pages, "doc.pdf", 300, 50, word_boundaries=True)
    assert chunks[0]["page_start"] == 1 and chunks[-1]["page_end"] == 2
    words = {"alpha", "beta", "gamma", "delta", "epsilon"}
    for chunk in chunks:
        pieces = chunk["text"].split()
        assert pieces[0] in words and pieces[-1] in words, chunk["text"][:20]


def test_titles_from_metadata_or_the_first_lines():
    page = ("BERT: Pre-training of Deep Bidirectional Transformers for\nLanguage Understanding\n"
            "Jacob Devlin Ming-Wei Chang Kenton Lee Kristina Toutanova\nGoogle AI Language\nAbstract\n")
    assert guess_title(page) == "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding"
    assert guess_title("Attention Is All You Need\nAshish Vaswani∗\nGoogle Brain") == "Attention Is All You Need"
    header = "Proceedings of the 58th Annual Meeting, pages 4969–4983\nS2ORC: The Semantic Scholar Corpus\n"
    assert guess_title(header, "S2ORC: The Semantic Scholar Open Research Corpus").startswith("S2ORC")
    assert guess_title("12345\n\n") == ""


def test_section_headings_and_context():
    text = ("Abstract\nWe study things.\n1 Introduction\nText of the introduction goes on and on.\n"
            "Table 3: 63.3 78.0\n3.2 Training with negatives\nMore text. 2 The end.\n")
    headings = [h for _, h in section_headings(text)]
    assert headings == ["Abstract", "1 Introduction", "3.2 Training with negatives"]
    chunks = [{"text": text[s:e], "start": s, "end": e} for s, e in ((0, 30), (60, 150))]
    add_context(chunks, text, "A Paper")
    assert chunks[0]["context"] == "A Paper — Abstract"
    assert chunks[1]["context"] == "A Paper — 3.2 Training with negatives"
    assert index_text(chunks[1]).startswith("A Paper — 3.2 Training with negatives\n")
    assert index_text({"text": "plain"}) == "plain"


def test_context_reaches_bm25_but_not_tfidf_or_the_shown_text():
    pages = [PageText(1, "Quokka Survey Methods\nWe counted burrows along transects every morning. " * 3)]
    chunks = chunk_pdf(pages, "q.pdf", 200, 20, context=True)
    assert all(c["context"].startswith("Quokka Survey Methods") for c in chunks)
    later = [c for c in chunks if "Quokka" not in c["text"]]
    assert later, "some chunk does not hold the title in its own text"
    index = build_index_from_chunks(chunks, compute_embeddings=False)
    bm25 = index.bm25_scores("quokka")
    tfidf = index.tfidf_scores("quokka")
    i = chunks.index(later[0])
    assert bm25[i] > 0 and tfidf[i] == pytest.approx(0.0)
    assert "context" not in {k for c in chunk_pdf(pages, "q.pdf", 200, 20, context=False) for k in c}
