"""rag_core.output.render: page labels, short titles, snippets, and text that stays text (HTML, terminal, CSV)."""

from __future__ import annotations

import pytest

from rag_core.output.render import (
    highlight_html,
    literal_html,
    page_label,
    page_span,
    seconds_text,
    short_title,
    snippet,
    spreadsheet_safe,
    terminal_safe,
)

MARKDOWN_AND_HTML = '**bold** ![x](http://127.0.0.1:9/beacon) [link](http://h/) <img src=x onerror=alert(1)> & "q"'


# ----------------------------------------------------------------------------- pages


@pytest.mark.parametrize(("row", "span", "label"), [
    ({"page_start": 3, "page_end": 3, "page_label": "117"}, "3", "p. 3 (printed 117)"),
    ({"page_start": 3, "page_end": 4}, "3–4", "pp. 3–4"),
    ({"page_start": 3, "page_end": 4, "page_label": "iv"}, "3–4", "pp. 3–4 (printed iv)"),
    ({"page": 5, "page_label": "5"}, "5", "p. 5"),  # a label equal to the page number is not repeated
    ({"page_start": 2, "page_label": ""}, "2", "p. 2"),
    ({"page": None}, "?", "p. ?"),
])
def test_page_span_and_label(row, span, label):
    assert page_span(row) == span
    assert page_label(row) == label


# ----------------------------------------------------------------------------- titles and snippets

BERT = {"source": "ml_bert.pdf", "year": 2018,
        "title": "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding"}


@pytest.mark.parametrize(("authors", "who"), [
    (["Jacob Devlin", "Ming-Wei Chang", "Kenton Lee"], "Devlin et al."),
    (["Devlin, Jacob", "Chang, Ming-Wei"], "Devlin and Chang"),
    ("Jacob Devlin and Ming-Wei Chang and Kenton Lee", "Devlin et al."),
    ("Jacob Devlin; Ming-Wei Chang", "Devlin and Chang"),
    (["Jacob Devlin"], "Devlin"),
])
def test_short_title_from_metadata(authors, who):
    title = short_title({**BERT, "authors": authors}, max_chars=60)
    assert title.startswith(f"{who} 2018 · BERT: Pre-training")
    assert title.endswith("…") and len(title) <= 60


def test_short_title_falls_back_to_the_whole_file_name():
    name = "ml_dpr_karpukhin2020_arxiv2004.04906.pdf"
    assert short_title({"source": name}, max_chars=20) == name
    assert short_title(None, "x.pdf") == "x.pdf"
    assert short_title({"source": name, "year": 2020}) == f"2020 · {name}"
    assert short_title({"source": name, "title": "Dense Passage Retrieval"}) == "Dense Passage Retrieval"


def test_snippet_centres_on_the_first_query_word_and_marks_cuts():
    text = "intro " * 60 + "the masked\nlanguage model predicts tokens " + "tail " * 60
    out = snippet(text, "masked language model", chars=80)
    assert out.startswith("…") and out.endswith("…")
    assert "masked language model" in out and "\n" not in out
    assert len(out) <= 82
    assert snippet("short text", "anything") == "short text"
    assert snippet(text, "", chars=30).startswith("intro intro")


def test_seconds_text():
    assert (seconds_text(None), seconds_text(4.4), seconds_text(125)) == ("?", "4 s", "2 min 05 s")


# ----------------------------------------------------------------------------- HTML


def test_literal_html_escapes_everything_markup_needs():
    out = literal_html(MARKDOWN_AND_HTML)
    assert "<" not in out and ">" not in out and '"' not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out and "&amp;" in out
    assert "**bold** ![x](http://127.0.0.1:9/beacon)" in out  # markdown stays characters
    assert literal_html("a\nb\n\nc", reflow=True) == "a b\n\nc"
    assert literal_html(None) == ""


def test_highlight_escapes_first_then_marks():
    text = MARKDOWN_AND_HTML + " masked language models"
    out = highlight_html(text, "masked <b>model</b>", spans=[(0, 8)])
    assert out.startswith('<mark class="rc-hit">**bold**</mark>')
    assert '<mark class="rc-term">masked</mark>' in out and '<mark class="rc-term">models</mark>' in out
    stripped = out.replace('<mark class="rc-hit">', "").replace('<mark class="rc-term">', "").replace("</mark>", "")
    assert stripped == literal_html(text)  # nothing but our own tags was added
    assert "<b>" not in out and "<img" not in out


def test_highlight_ignores_bad_and_overlapping_spans():
    out = highlight_html("abcdef", "", spans=[(2, 4), (3, 5), (-1, 2), (4, 99), (5, 5)])
    assert out == 'ab<mark class="rc-hit">cd</mark>ef'


# ----------------------------------------------------------------------------- terminal


@pytest.mark.parametrize(("raw", "shown"), [
    ("clear\x1b[2Jscreen", "clear␛screen"),  # a whole sequence goes, shown as the escape symbol
    ("\x1b]0;pwned\x07title", "␛title"),
    ("\x1b]0;pwned\x1b\\title", "␛title"),  # ended by ST
    ("\x1b]0;never ended", "␛"),
    ("csi\x9b31m", "csi␛"),
    ("\x1b[38;5;196mred\x1b[0m", "␛red␛"),
    ("dcs\x1bPq#0;2;0;0;0\x1b\\end", "dcs␛end"),
    ("charset\x1b(Bx", "charset␛x"),
    ("lone escape\x1b", "lone escape\\x1b"),  # no sequence: the control character is shown
    ("bell\x07", "bell\\x07"),
    ("over\rwrite", "over\\x0dwrite"),
    ("del\x7f", "del\\x7f"),
    ("bidi \u202eevil\u202c", "bidi \\u202eevil\\u202c"),
    ("isolate \u2066x\u2069", "isolate \\u2066x\\u2069"),
    ("bad \udcff byte", "bad \\udcff byte"),
    ("Ünïcödé, ligature ﬁ and “quotes”", "Ünïcödé, ligature ﬁ and “quotes”"),
])
def test_terminal_safe_shows_control_characters_as_escapes(raw, shown):
    assert terminal_safe(raw) == shown
    assert terminal_safe(raw).isprintable()
    for remnant in ("[2J", "]0;pwned", "[38;5", "#0;2", "31m"):
        assert remnant not in terminal_safe(raw)


def test_terminal_safe_keeps_lines_unless_one_line():
    assert terminal_safe("a\n\tb") == "a\n\tb"
    assert terminal_safe("a\n\tb", one_line=True) == "a\\x0a\\x09b"
    assert terminal_safe(None) == ""


# ----------------------------------------------------------------------------- spreadsheets


@pytest.mark.parametrize("cell", ["=HYPERLINK(\"http://x\",\"y\")", "+1+2", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_spreadsheet_safe_prefixes_formula_starts(cell):
    assert spreadsheet_safe(cell) == "'" + cell


@pytest.mark.parametrize("value", ["plain", " =not at the start", "", -2, -0.5, 3, None, True])
def test_spreadsheet_safe_leaves_other_values(value):
    assert spreadsheet_safe(value) == value
