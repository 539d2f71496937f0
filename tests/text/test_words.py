"""Tests of rag_core.text.words: a text's words as a reader compares them."""

from __future__ import annotations

import pytest

from rag_core.text.words import american, is_content, stem, words


def norms(text: str) -> list[str]:
    return [w.norm for w in words(text)]


def test_words_keep_their_offsets():
    text = "We mask 15% of all WordPiece tokens [12]."
    for w in words(text):
        assert text[w.start:w.end] == w.text
    assert [(w.norm, w.kind) for w in words(text)][:5] == [("we", "word"), ("mask", "word"), ("15", "number"),
                                                         ("%", "symbol"), ("of", "word")]


@pytest.mark.parametrize(("text", "expected"), [
    ("task-specific", ["taskspecific"]),            # a compound is one word, its parts kept
    ("taskspecific", ["taskspecific"]),             # as the PDF's extraction joins it
    ("task-\nspecific", ["taskspecific"]),          # broken at a line end
    ("retrie\u00ad\nval", ["retrieval"]),           # a soft hyphen
    ("top-20", ["top", "20"]),                      # a number is its own word
    ("21-million", ["21", "million"]),
    ("7-18", ["7", "-", "18"]),                     # a range keeps its dash
    ("9%-19%", ["9", "%", "-", "19", "%"]),
    ("7\u201318", ["7", "-", "18"]),                # an en dash too
    ("predictions\u2014a", ["predictions", "-", "a"]),  # an em dash is a pause, not a join
    ("twenty-one", ["twenty", "one"]),              # number words stay apart
    ("BM25 P100 seq2seq", ["bm25", "p100", "seq2seq"]),  # digits against letters: a name
    ("8.5 100,000 8.1M 100k 2nd 10x", ["8.5", "100,000", "8.1m", "100k", "2nd", "10x"]),
    ("e.g. i.e.", ["eg", ".", "ie", "."]),
    ("don\u2019t Mozilla\u2019s", ["don't", "mozilla"]),
    ("\u201cquoted\u201d 'words'", ["quoted", "words"]),  # quote marks are not words
    ("\ufb01ne-tuning", ["finetuning"]),             # a ligature
])
def test_reading(text, expected):
    assert norms(text) == expected


@pytest.mark.parametrize(("british", "us"), [
    ("modelling", "modeling"), ("labelled", "labeled"), ("specialised", "specialized"),
    ("organisation", "organization"), ("analyse", "analyze"), ("colour", "color"), ("behaviours", "behaviors"),
    ("centre", "center"), ("programme", "program"), ("catalogue", "catalog"), ("whilst", "while"),
])
def test_british_spelling_reads_as_american(british, us):
    assert american(british) == american(us) == us
    assert norms(f"the {british.capitalize()}") == ["the", us]


def test_american_leaves_other_words_alone():
    for word in ("four", "hour", "model", "filled", "rise", "the", "bm25"):
        assert american(american(word)) == american(word)
    assert american("four") == "four" and american("filled") == "filled"


def test_stem_and_content():
    assert stem("improves") == stem("improved") == stem("improvement")
    [the, model] = words("the model")
    assert not is_content(the) and is_content(model)
