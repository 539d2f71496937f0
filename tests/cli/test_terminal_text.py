"""What the rag-core command line prints from a document or a user cannot drive the terminal.

A file name and the printed page labels of a PDF can hold escape sequences (clear the screen,
retitle the window); `ingest`, `list`, `search` and the error messages remove each whole sequence
and show ``␛`` in its place, so no remnant such as ``[2J`` or ``]0;pwned`` reaches the terminal.
"""

from __future__ import annotations

import io
import json

import pytest

from rag_core.cli import main
from rag_core.cli.search import print_rows

CLEAR = "\x1b[2J"
TITLE = "\x1b]0;pwned\x07"
NAME = f"evil{CLEAR}{TITLE}.pdf"


def pdf_with_labels(label_prefix: str) -> bytes:
    from fpdf import FPDF
    from pypdf import PdfReader, PdfWriter

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for n in range(2):
        pdf.add_page()
        pdf.multi_cell(0, 6, f"Page {n + 1} of a note about wombat burrows and the soil they are dug in. " * 4)
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(bytes(pdf.output()))))
    writer.set_page_label(0, 1, style="/D", prefix=label_prefix)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture()
def evil_pdf(tmp_path):
    path = tmp_path / NAME
    path.write_bytes(pdf_with_labels(f"{CLEAR}x"))
    return path


def assert_terminal_safe(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text, repr(text)
    assert "[2J" not in text and "]0;pwned" not in text, "no remnant of a sequence"
    assert "␛" in text, "the escape is shown, not dropped silently"


def test_ingest_list_and_search_print_escapes_as_text(tmp_path, evil_pdf, capsys):
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "ingest", "notes", str(evil_pdf), "--no-progress"]) == 0
    assert_terminal_safe(capsys.readouterr().out)

    assert main([*data, "list", "notes"]) == 0
    out = capsys.readouterr().out
    assert_terminal_safe(out)
    assert "evil␛␛.pdf" in out

    assert main([*data, "search", "notes", "wombat burrows", "--mode", "tfidf"]) == 0
    out = capsys.readouterr().out
    assert_terminal_safe(out)
    assert "(printed ␛x1)" in out, out

    assert main([*data, "search", "notes", "wombat", "--mode", "exact"]) == 0
    assert_terminal_safe(capsys.readouterr().out)

    # JSON stays JSON: it escapes control characters itself, and round-trips the name exactly
    assert main([*data, "search", "notes", "wombat", "--mode", "tfidf", "--json"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert json.loads(out)["results"][0]["source"] == NAME


def test_error_messages_print_names_as_text(tmp_path, evil_pdf, capsys):
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "ingest", "notes", str(evil_pdf), "--no-progress"]) == 0
    capsys.readouterr()
    assert main([*data, "remove", "notes", f"nosuch{CLEAR}.pdf"]) == 1
    err = capsys.readouterr().err
    assert_terminal_safe(err)
    assert err.count("\n") == 1, "one line"


def test_print_rows_sanitises_passage_text_and_labels(capsys):
    row = {"rank": 1, "score": 0.5, "score_type": "cosine", "cosine": 0.5, "source": f"a{TITLE}.pdf",
           "page_start": 2, "page_end": 2, "page_label": f"{CLEAR}ii", "found_by": "both",
           "text": f"before{CLEAR}after\rover \u202eevil"}
    print_rows([row], "tfidf")
    out = capsys.readouterr().out
    assert_terminal_safe(out)
    assert "\u202e" not in out and "\\u202e" in out


def test_check_prints_no_remnant_of_an_escape_sequence(tmp_path, evil_pdf, capsys):
    """`check` shows a manuscript's statements: whole sequences go, not only their ESC."""
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "ingest", "notes", str(evil_pdf), "--no-progress", "--no-embed"]) == 0
    capsys.readouterr()
    manuscript = tmp_path / "draft.txt"
    statement = f"The note says that \u201ca note about {CLEAR}{TITLE}wombat burrows and the soil\u201d [1].\n"
    manuscript.write_text(statement, encoding="utf-8")
    assert main([*data, "check", "notes", str(manuscript)]) == 0
    out = capsys.readouterr().out
    assert "wombat burrows" in out
    assert "\x1b" not in out and "[2J" not in out and "]0;pwned" not in out, out
