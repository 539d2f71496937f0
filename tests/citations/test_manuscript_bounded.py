"""Manuscripts read safely: the same markers as Python's patterns (on RE2, in linear time), line
numbers counted once, the hostile inputs of issue 22 answered, only regular files and capped
standard input read, a .docx read from its text part only (declared sizes first, entities not
resolved and the text after them kept), a PDF read by the ingest's budgeted worker."""

from __future__ import annotations

import functools
import io
import re
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_core.citations import drafts, markers, references
from rag_core.citations.manuscript import (
    ManuscriptError,
    extract_statements,
    manuscript_from_text,
    read_manuscript,
)
from rag_core.cli import main
from rag_core.testing import docx_bytes, docx_with_entity, hostile_manuscripts, slow_pdf

# ------------------------------------------------------------------ the patterns, against Python's

# The patterns as Python's re ran them before (they took quadratic time or worse on hostile text):
# the RE2 ones must find the same markers, with the same groups.
PYTHON = {
    "TEX_CITE": re.compile(r"\\(?:cite|citep|citet|citealp|citeauthor|citeyear|parencite|textcite|autocite|"
                           r"footcite)\*?(?:\[[^\]]*\]){0,2}\{([^}]*)\}"),
    "NUMERIC": re.compile(r"\[(\d+(?:\s*[-\u2013,]\s*\d+)*)\]"),
    "_PAREN": re.compile(r"\(([^()]*?\b(?:19|20)\d{2}[a-z]?\b[^()]*)\)"),
    "_AUTHOR_YEAR": re.compile(r"(?P<names>[A-Z][\w'\u2019\-]+(?:\s+(?:and|&)\s+[A-Z][\w'\u2019\-]+)?"
                               r"(?:\s+et\s+al\.?)?),?\s+(?P<year>(?:19|20)\d{2})[a-z]?"),
    "_NARRATIVE": re.compile(r"(?P<names>\b[A-Z][\w'\u2019\-]+(?:\s+(?:and|&)\s+[A-Z][\w'\u2019\-]+)?"
                             r"(?:\s+et\s+al\.?)?)\s*\((?P<year>(?:19|20)\d{2})[a-z]?\)"),
}
PYTHON_QUOTE = re.compile(r"\u201c([^\u201c\u201d]+)\u201d|(?<![\w\"])\"([^\"\n]+)\"(?![\w\"])")
PYTHON_TITLE = re.compile(r"[\u201c\"]([^\u201d\"]{8,}?)[,.]?[\u201d\"]")

# Words and marks of citations; a non-ASCII letter is never right before an ASCII capital or digit
# (RE2's \b is ASCII: "\u00c5B" has a word start at B for RE2, not for Python; documented).
TOKENS = ["Smith", "Jones", "et", "al.", "al", "and", "&", "(2019)", "(2019a)", "2020", "1999;", "[1]", "[2-4]",
          "[3, 7]", "[5\u20137]", "[12", "3]", "\\cite{k2019}", "\\citep[p.~3]{a,b}", "\\cite[", "\\citet{x}",
          "(", ")", "[", "]", "{", "}", "\u201c", "\u201d", '"', "'", "\u2019", "O'Brien", "M\u00fcller",
          "\u00c5str\u00f6m", "A-B", "Lee-Smith", "x.", "e.g.", "Title", "of", "a", "paper.", "\u00a0", "9",
          "\u0663", "19\u0663\u0663", "(see", "Smith,", "2019)", "(Smith", "2019;", "Jones,", "et\u00a0al.",
          "\u201cquoted", "words\u201d", "end.\u201d", "\"x", "y\"", "\n", "12,", "-", "\u2013"]
SEPARATORS = [" ", " ", " ", "\n", "\u00a0", "  ", "\t"]


@st.composite
def sentences(draw) -> str:
    words = draw(st.lists(st.sampled_from(TOKENS), min_size=0, max_size=30))
    seps = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(words), max_size=len(words)))
    return "".join(w + s for w, s in zip(words, seps, strict=True))


def _found(pattern, text: str) -> list:
    return [(m.span(), m.groups()) for m in pattern.finditer(text)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sentences())
def test_the_re2_patterns_find_what_pythons_found(text):
    for name, python in PYTHON.items():
        assert _found(getattr(markers, name), text) == _found(python, text), name
    assert markers.quoted_passages(text) == [m.group(1) or m.group(2) for m in PYTHON_QUOTE.finditer(text)]
    title = PYTHON_TITLE.search(text)
    got = references._quoted_title(text)
    assert got == ((title.start(), title.group(1)) if title else None)


def test_the_marker_patterns_cannot_backtrack():
    """Every pattern that scans a whole sentence for markers runs on RE2 (a DFA: no backtracking)."""
    import re2

    for pattern in (markers.TEX_CITE, markers.NUMERIC, markers._PAREN, markers._AUTHOR_YEAR, markers._NARRATIVE):
        assert isinstance(pattern, re2._Regexp), pattern


# ------------------------------------------------------------------ hostile text: results, not hours


@pytest.mark.parametrize("name", sorted(hostile_manuscripts(100)))
def test_each_hostile_manuscript_gives_a_result_or_a_message(name):
    suffix, data = hostile_manuscripts(200_000)[name]
    try:
        manuscript = read_manuscript(data, name=f"draft{suffix}")
        statements = manuscript.statements()
    except ManuscriptError as exc:  # a message, never another exception
        assert name in ("many-markers", "many-references") and "more than 5,000 checkable statements" in str(exc)
        return
    assert all(s.line is not None and s.text for s in statements)
    if name == "white-space-run":
        assert [s.text for s in statements] == ["Text more text."]
    if name == "huge-numbers":  # 5,000 digits in brackets are no reference number (int() would refuse them)
        assert statements == [] and manuscript.references[0].key is None


def test_line_numbers_are_counted_once_and_right():
    paragraphs = [f"Paragraph {n} cites [{n}]." if n % 3 == 0 else f"Paragraph {n} says nothing." for n in range(900)]
    text = "\n\n".join(paragraphs)
    statements = extract_statements(text)
    assert [s.line for s in statements] == [2 * n + 1 for n in range(0, 900, 3)]
    assert [s.text for s in statements][:2] == ["Paragraph 0 cites.", "Paragraph 3 cites."]


def test_too_many_statements_is_a_message_not_hours_of_checking():
    text = "A claim cites this [1]. " * 30
    assert len(extract_statements(text)) == 30
    with pytest.raises(ManuscriptError, match="more than 20 checkable statements"):
        extract_statements(text, limit=20)


def test_references_are_resolved_by_key_surname_and_year():
    text = ("Alpha agrees here (Smith, 2019). Beta agrees here (Smith, 2021). Gamma agrees here (Smith). "
            "Delta agrees here [2].\n\nReferences\n\n[1] A. Smith. 2019. First title here.\n"
            "[2] B. Smith. 2021. Second title here.\n")
    manuscript = manuscript_from_text(text, kind="markdown")
    got = [(s.text, [c.reference for c in s.citations]) for s in manuscript.statements()]
    assert got == [("Alpha agrees here.", [manuscript.references[0].text]),
                   ("Beta agrees here.", [manuscript.references[1].text]),
                   ("Delta agrees here.", [manuscript.references[1].text])]


# ------------------------------------------------------------------ Word


def _docx_python_docx_text(data: bytes) -> str:
    import docx

    document = docx.Document(io.BytesIO(data))
    return "\n\n".join(p.text for p in document.paragraphs if p.text.strip())


def test_docx_text_is_what_python_docx_reads():
    import docx
    from docx.enum.text import WD_BREAK

    document = docx.Document()
    document.add_paragraph("A first paragraph (Smith, 2019).")
    paragraph = document.add_paragraph("Runs ")
    paragraph.add_run("in bold").bold = True
    paragraph.add_run("\tafter a tab")
    run = paragraph.add_run(" and a line break")
    run.add_break()
    run.add_text("then more")
    run.add_break(WD_BREAK.PAGE)
    run.add_text(" after a page break [2].")
    document.add_paragraph("")
    document.add_table(rows=1, cols=1).cell(0, 0).text = "A cell is not read (as before)."
    document.add_paragraph("\u201cA quote with four words\u201d at the end.")
    buffer = io.BytesIO()
    document.save(buffer)
    data = buffer.getvalue()
    manuscript = read_manuscript(data, name="draft.docx")
    assert manuscript.text == _docx_python_docx_text(data)
    assert "A cell" not in manuscript.text and manuscript.notes == []
    hyperlink = docx_bytes(["x"], document_xml=(
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
        b'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body><w:p>'
        b'<w:r><w:t xml:space="preserve">See </w:t></w:r><w:hyperlink r:id="rId9"><w:r><w:t>the paper</w:t></w:r>'
        b'</w:hyperlink><w:r><w:t xml:space="preserve"> [1].</w:t></w:r><w:r><w:noBreakHyphen/><w:cr/></w:r>'
        b'</w:p></w:body></w:document>'))
    assert read_manuscript(hyperlink, name="link.docx").text == _docx_python_docx_text(hyperlink)


def test_docx_text_after_an_entity_is_kept_with_a_note():
    data = docx_with_entity("BERT \u201cobtains new state-of-the-art results on ", "x",
                            " eleven natural language processing tasks\u201d [1].")
    assert "eleven" not in _docx_python_docx_text(data)  # python-docx drops what follows the entity
    manuscript = read_manuscript(data, name="entity.docx")
    assert manuscript.text == ("BERT \u201cobtains new state-of-the-art results on &x; eleven natural language "
                               "processing tasks\u201d [1].")
    assert len(manuscript.notes) == 1 and "&x;" in manuscript.notes[0] and "entity.docx" in manuscript.notes[0]
    assert [s.kind for s in manuscript.statements()] == ["quote"]


def test_docx_entities_are_never_expanded():
    xml = ('<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">'
           '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><w:document '
           'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>'
           '<w:t>laughs &c;&c;&c; end</w:t></w:r></w:p></w:body></w:document>')
    manuscript = read_manuscript(docx_bytes(["x"], document_xml=xml.encode()), name="laughs.docx")
    assert manuscript.text == "laughs &c;&c;&c; end"


def test_a_docx_text_part_over_the_cap_is_refused_before_it_is_inflated(monkeypatch):
    monkeypatch.setattr(drafts, "MAX_DOCX_XML_BYTES", 64 * 1024)
    big = docx_bytes(["A paragraph of a long manuscript [1]. " * 40] * 100)
    inflated = []
    real = drafts.read_zip_member
    monkeypatch.setattr(drafts, "read_zip_member", lambda archive, info, **kw: inflated.append(info.filename)
                        or real(archive, info, **kw))
    with pytest.raises(ManuscriptError, match=r"big\.docx, member word/document\.xml: declares .* over the limit "
                                              r"of 64\.0 KiB; it was not inflated"):
        read_manuscript(big, name="big.docx")


def test_a_docx_inflates_its_text_part_only(monkeypatch):
    """A bomb in another member (an image of 64 MB of zeros, in 64 KB) is never inflated."""
    bomb = docx_bytes(["A short manuscript cites [1]."], extra_members={"word/media/image1.png": bytes(64 << 20)})
    assert len(bomb) < 200_000
    inflated = []
    real = drafts.read_zip_member
    monkeypatch.setattr(drafts, "read_zip_member", lambda archive, info, **kw: inflated.append(info.filename)
                        or real(archive, info, **kw))
    manuscript = read_manuscript(bomb, name="bomb.docx")
    assert manuscript.text == "A short manuscript cites [1]."
    assert sorted(inflated) == ["_rels/.rels", "word/document.xml"]


@pytest.mark.parametrize("data, says", [
    (b"not a zip", "is not a zip file"),
    (docx_bytes(["x"], document_xml=b"<w:document><w:body>"), "not well-formed XML"),
])
def test_a_damaged_docx_is_a_message(data, says):
    with pytest.raises(ManuscriptError, match=says):
        read_manuscript(data, name="bad.docx")
    no_document = io.BytesIO()
    with zipfile.ZipFile(no_document, "w") as archive:
        archive.writestr("other.xml", "<x/>")
    with pytest.raises(ManuscriptError, match=r"has no word/document\.xml"):
        read_manuscript(no_document.getvalue(), name="empty.docx")


# ------------------------------------------------------------------ doors: files, standard input, PDF


def test_only_regular_files_are_opened(tmp_path):
    import os

    fifo = tmp_path / "draft.md"
    os.mkfifo(fifo)  # nobody writes to it: opening it would block
    zero = tmp_path / "zero.txt"
    zero.symlink_to("/dev/zero")  # reading it would never end
    for path in (fifo, zero):
        with pytest.raises(ManuscriptError, match="is not a regular file"):
            read_manuscript(path)
    with pytest.raises(ManuscriptError, match="is a folder"):
        read_manuscript(tmp_path)
    sparse = tmp_path / "sparse.txt"
    with open(sparse, "wb") as handle:
        handle.truncate(4 * 1024 ** 3)
    with pytest.raises(ManuscriptError, match=r"is 4\.0 GiB, over the limit of 50\.0 MiB"):
        read_manuscript(sparse)


def test_check_on_a_fifo_or_a_device_link_is_a_usage_error(tmp_path, capsys):
    import os

    fifo = tmp_path / "draft.md"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.txt"
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero):
        assert main(["--data-dir", str(tmp_path / "data"), "check", "papers", str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is not a regular file" in err[0]


def test_a_fifo_is_refused_before_the_citation_modules_load(tmp_path):
    """The refusal comes before the second or more of imports a check needs (check on a FIFO
    returns within 1 s): in a new process, nothing of rag_core.citations is imported."""
    import os
    import subprocess
    import sys

    from tests.support import REPO

    fifo = tmp_path / "draft.md"
    os.mkfifo(fifo)
    code = ("import sys; from rag_core.cli import main; code = main(sys.argv[1:]); "
            "print(code, sorted(m for m in sys.modules if m.startswith('rag_core.citations')))")
    done = subprocess.run([sys.executable, "-c", code, "--data-dir", str(tmp_path / "data"), "check", "papers",
                           str(fifo)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["2", "[]"], (done.stdout, done.stderr)
    assert "draft.md: is not a regular file" in done.stderr and "Traceback" not in done.stderr


class _Stdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def test_standard_input_is_capped(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(drafts, "MAX_MANUSCRIPT_BYTES", 1000)
    monkeypatch.setattr("sys.stdin", _Stdin(b"x" * 1001))
    assert main(["--data-dir", str(tmp_path), "check", "papers", "-"]) == 2
    assert "standard input is larger than 1000 bytes" in capsys.readouterr().err
    assert drafts.read_stream(_Stdin("caf\u00e9 [1]".encode("utf-8"))) == "caf\u00e9 [1]"
    assert drafts.read_stream(io.StringIO("text [1]")) == "text [1]"


def test_a_pdf_manuscript_is_read_by_the_budgeted_worker(monkeypatch):
    from rag_core.pdf import pool
    from rag_core.settings import EXTRACT_HOLD_ENV

    monkeypatch.setenv(EXTRACT_HOLD_ENV, "slow.pdf")  # its reader waits until stopped: any machine (issue 30)
    monkeypatch.setattr(pool, "extract_pdf_budgeted",
                        functools.partial(pool.extract_pdf_budgeted, seconds_base=1.0, seconds_per_page=0.01))
    with pytest.raises(ManuscriptError, match=r"slow\.pdf: Reading this PDF took longer than its time budget"):
        read_manuscript(slow_pdf(pages=2), name="slow.pdf")


def test_check_prints_the_notes_of_a_docx(paper_library, tmp_path, capsys):
    path = tmp_path / "entity.docx"
    path.write_bytes(docx_with_entity("BERT \u201cobtains new state-of-the-art results on ", "x",
                                      " eleven natural language processing tasks\u201d [1]."))
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("note: entity.docx: 1 entity reference (&x;)")
    assert len(__import__("json").loads(captured.out)) == 1
