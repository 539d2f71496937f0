"""Tests of rag_core.pdf.extraction against the shared sample PDFs and synthetic PDFs built with pypdf."""

from __future__ import annotations

import hashlib
import io
import logging
import warnings
from pathlib import Path

import pypdf
import pytest

from rag_core.pdf.extraction import (
    PdfExtraction,
    clean_extracted_text,
    extract_pdf,
    render_page_png,
)
from rag_core.text.chunking import PageText
from tests.support import PDF_DIR

DATA = PDF_DIR
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"sample PDF folder {DATA} not present (see shared/data/README.md)"
)

SMALL_PAPER = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"  # 4 pages, two-column
THESIS = "phys_lie_theory_quantum_info_thesis_draft_stemen2021.pdf"  # /PageLabels: i, ii, ...
APL = "awkward_apl2011_custom_font_encoding_2col.pdf"
TRACEMONKEY = "cs_tracemonkey_gal2009_pldi.pdf"


def _sample(name: str) -> Path:
    path = DATA / name
    if not path.is_file():
        pytest.skip(f"sample file {name} not present in {DATA}")
    return path


def _blank_pdf(n_pages: int = 1) -> bytes:
    writer = pypdf.PdfWriter()
    for _ in range(n_pages):
        writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _small_pdf_with_text() -> bytes:
    """The first page of the small sample paper, so that it has a real text layer."""
    reader = pypdf.PdfReader(_sample(SMALL_PAPER))
    writer = pypdf.PdfWriter()
    writer.add_page(reader.pages[0])
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


# --------------------------------------------------------------------------- sample folder


@needs_data
@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("awkward_scanned_no_text_linn_brochure_2col.pdf", "no_text"),
        ("awkward_scanned_no_text_huckfinn_page22.pdf", "no_text"),
        ("awkward_truetype_font_no_unicode_mapping.pdf", "unreadable_text"),
        ("awkward_scanned_ocr_layer_ieee_imtc1996.pdf", "ok"),
        ("awkward_scanned_ocr_layer_zfn_a_1999_solitary_waves.pdf", "ok"),
        (APL, "ok"),
    ],
)
def test_awkward_files_get_the_right_status_without_ocr(name, status):
    """With OCR off, the text layer alone decides (tests/pdf/test_ocr.py reads the scans)."""
    result = extract_pdf(_sample(name), ocr="off")
    assert result.status == status, result.reason
    assert result.ok is (status == "ok")
    assert result.source == name
    assert result.reason
    assert result.ocr is None and result.ocr_layer is None
    if status == "no_text":
        assert "scan" in result.reason and "OCR was off" in result.reason and "--ocr auto" in result.reason
        assert result.n_pages == 1
    if status == "unreadable_text":
        assert "OCR was off" in result.reason


@needs_data
@pytest.mark.parametrize("name", ["awkward_scanned_no_text_huckfinn_page22.pdf",
                                  "awkward_truetype_font_no_unicode_mapping.pdf"])
def test_without_tesseract_a_scan_says_how_to_install_it(name, monkeypatch):
    monkeypatch.setenv("RAG_CORE_TESSERACT", "/nonexistent/tesseract")
    result = extract_pdf(_sample(name))
    assert result.status in ("no_text", "unreadable_text"), result.reason
    assert "OCR is not available" in result.reason
    assert "apt-get install tesseract-ocr tesseract-ocr-eng" in result.reason
    assert any("need" in w and "OCR" in w for w in result.warnings)


@needs_data
def test_real_paper_extracts_numbered_pages_with_text():
    path = _sample(SMALL_PAPER)
    result = extract_pdf(path)
    assert isinstance(result, PdfExtraction)
    assert result.status == "ok", result.reason
    assert result.reason == "4 pages"
    assert result.n_pages == 4
    assert [p.number for p in result.pages] == [1, 2, 3, 4]
    assert all(isinstance(p, PageText) for p in result.pages)
    assert all(p.label is None for p in result.pages)  # no /PageLabels in this file
    assert "dark matter" in result.pages[0].text.lower()
    assert len(result.pages[0].text) > 1000
    assert result.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert result.warnings == []
    # The same from bytes and from a file object, with a display name.
    from_bytes = extract_pdf(path.read_bytes(), name="paper.pdf")
    assert from_bytes.source == "paper.pdf"
    assert [p.text for p in from_bytes.pages] == [p.text for p in result.pages]
    with path.open("rb") as handle:
        assert extract_pdf(handle).source == SMALL_PAPER


@needs_data
def test_ligatures_and_hyphenation_are_repaired_on_a_real_paper():
    raw = "\n".join(p.extract_text() for p in pypdf.PdfReader(_sample(SMALL_PAPER)).pages)
    assert "\ufb01" in raw or "\ufb02" in raw  # the raw pypdf text has ligatures
    text = extract_pdf(_sample(SMALL_PAPER)).text
    assert not any(ch in text for ch in "\ufb00\ufb01\ufb02\ufb03\ufb04")
    assert "\u00ad" not in text


@needs_data
def test_apl_bracket_glyph_names_become_brackets():
    text = extract_pdf(_sample(APL)).text
    assert "Cr/MgO(001)" in text
    assert "[001]" in text
    assert "/H2085" not in text and "/H20849" not in text


@needs_data
def test_page_labels_from_the_pdf():
    result = extract_pdf(_sample(THESIS))
    assert result.status == "ok", result.reason
    assert [p.label for p in result.pages[:3]] == ["i", "ii", "iii"]
    assert all(p.label for p in result.pages)


def test_page_labels_from_a_built_pdf(tmp_path):
    writer = pypdf.PdfWriter()
    for _ in range(5):
        writer.add_blank_page(width=200, height=200)
    writer.set_page_label(0, 1, style="/r")
    writer.set_page_label(2, 4, style="/D", start=1)
    path = tmp_path / "labelled.pdf"
    with path.open("wb") as handle:
        writer.write(handle)
    result = extract_pdf(path)
    assert result.status == "no_text"  # blank pages, but the pages still come back
    assert [p.label for p in result.pages] == ["i", "ii", "1", "2", "3"]


def test_no_labels_without_page_labels_entry():
    result = extract_pdf(_blank_pdf(2))
    assert [p.label for p in result.pages] == [None, None]


# --------------------------------------------------------------------------- bad input


def test_text_file_renamed_to_pdf_is_not_pdf(tmp_path):
    path = tmp_path / "notes.pdf"
    path.write_text("These are my notes, not a PDF.\n" * 20)
    result = extract_pdf(path)
    assert result.status == "not_pdf"
    assert result.source == "notes.pdf"
    assert result.pages == [] and result.n_pages == 0
    assert result.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert extract_pdf(b"").status == "empty"  # the README's status for a 0-byte file


def test_garbage_after_a_pdf_header_is_damaged():
    result = extract_pdf(b"%PDF-1.7\n" + bytes(range(256)) * 10)
    assert result.status == "damaged", result.reason
    assert not result.ok


@needs_data
@pytest.mark.parametrize("fraction", [0.3, 0.9])
def test_truncated_pdf_never_raises(fraction):
    data = _sample(SMALL_PAPER).read_bytes()
    result = extract_pdf(data[: int(len(data) * fraction)], name="cut.pdf")
    assert result.status in {"damaged", "ok"}, result.reason
    if result.status == "ok":
        assert 0 < result.n_pages <= 4
    else:
        assert "damaged" in result.reason


@needs_data
def test_encrypted_pdf_with_a_password_is_reported():
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(_small_pdf_with_text()))
    writer.encrypt("secret", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    result = extract_pdf(buffer.getvalue(), name="locked.pdf")
    assert result.status == "encrypted", result.reason
    assert "password" in result.reason
    assert result.pages == []


@needs_data
def test_encrypted_pdf_with_empty_user_password_is_read():
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(_small_pdf_with_text()))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    assert pypdf.PdfReader(io.BytesIO(buffer.getvalue())).is_encrypted
    result = extract_pdf(buffer.getvalue())
    assert result.status == "ok", result.reason
    assert "dark matter" in result.pages[0].text.lower()


def test_too_large_by_bytes_and_by_pages(tmp_path):
    data = _blank_pdf(3)
    result = extract_pdf(data, max_bytes=100)
    assert result.status == "too_large"
    assert "limit" in result.reason
    path = tmp_path / "big.pdf"
    path.write_bytes(data)
    assert extract_pdf(path, max_bytes=100).status == "too_large"
    with path.open("rb") as handle:
        assert extract_pdf(handle, max_bytes=100).status == "too_large"
    by_pages = extract_pdf(data, max_pages=2)
    assert by_pages.status == "too_large"
    assert by_pages.n_pages == 3 and "3 pages" in by_pages.reason



def test_a_file_just_over_the_limit_is_not_said_to_be_the_limit(tmp_path):
    """Issue 27 row 22: "50.0 MiB, over the limit of 50.0 MiB": the two sizes never read alike."""
    limit = 50 * 1024 * 1024
    path = tmp_path / "big.pdf"
    with path.open("wb") as handle:
        handle.truncate(limit + 1)
    result = extract_pdf(path, max_bytes=limit)
    assert result.status == "too_large"
    assert result.reason == "The file is 52,428,801 bytes, over the limit of 52,428,800 bytes (50.0 MiB)."
    assert "60.0 MiB, over the limit of 50.0 MiB" in extract_pdf(b"%" * (60 * 1024 * 1024), max_bytes=limit).reason
    with path.open("rb") as handle:  # a stream is read to one byte past the limit: its size is not known
        reason = extract_pdf(handle, max_bytes=limit).reason
    assert reason == "The file is larger than the limit of 50.0 MiB (52,428,800 bytes)."

def test_pdf_without_pages_is_empty():
    assert extract_pdf(_blank_pdf(0)).status == "empty"


def test_blank_pages_are_no_text():
    result = extract_pdf(_blank_pdf(2))
    assert result.status == "no_text"
    assert "blank" in result.reason and result.ocr is None  # nothing to read by OCR either
    assert [p.number for p in result.pages] == [1, 2]
    assert all(p.text == "" for p in result.pages)


# --------------------------------------------------------------------------- pypdf noise


def _wrong_startxref(name: str) -> bytes:
    """A real PDF whose ``startxref`` points nowhere: pypdf recovers, and logs warnings."""
    data = _sample(name).read_bytes()
    return data[: data.rfind(b"startxref")] + b"startxref\n999999\n%%EOF\n"


@needs_data
@pytest.mark.parametrize("name", [APL, TRACEMONKEY])
def test_no_pypdf_warnings_reach_the_user(name, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = extract_pdf(_wrong_startxref(name))
    assert result.status == "ok", result.reason
    assert [r for r in caplog.records if r.name.startswith("pypdf")] == []
    assert caught == []
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    assert logging.getLogger("pypdf").level == logging.NOTSET  # restored afterwards


@needs_data
def test_the_damaged_file_really_is_noisy_without_the_guard(caplog):
    """Makes sure the test above can fail: raw pypdf does log warnings for this file."""
    caplog.set_level(logging.WARNING)
    reader = pypdf.PdfReader(io.BytesIO(_wrong_startxref(APL)))
    for page in reader.pages:
        page.extract_text()
    assert any(r.name.startswith("pypdf") for r in caplog.records)


# --------------------------------------------------------------------------- cleaning


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("e\ufb00ect \ufb01nd \ufb02ow o\ufb03ce wa\ufb04e \ufb05 \ufb06", "effect find flow office waffle st st"),
        ("dense retrie-\nval works", "dense retrieval\nworks"),
        ("dense retrie-\nval\nnext line", "dense retrieval\nnext line"),
        ("the retrie-\nval", "the retrieval"),
        ("from 1990-\n2000 on", "from 1990-\n2000 on"),
        ("type A-\n2 and 3-\nfold", "type A-\n2 and 3-\nfold"),
        ("state-of-the-\nArt methods", "state-of-the-\nArt methods"),
        ("a left-to-\nright model", "a left-to-right\nmodel"),  # a compound keeps its hyphen
        ("pre\u00ad\nviously shown", "previously\nshown"),
        ("soft\u00adhyphen", "softhyphen"),
        ("a  b\t\tc\u00a0\u00a0d", "a b c d"),
        ("line one   \nline two\t\n", "line one\nline two"),
        ("para one\n\n\n\n\npara two", "para one\n\npara two"),
        ("keep\nsingle\nnewlines", "keep\nsingle\nnewlines"),
        ("nul\x00 and\x07 bell\x1b", "nul and bell"),
        ("windows\r\nline\rends", "windows\nline\nends"),
        ("cafe\u0301", "caf\u00e9"),  # NFC
        ("x\u00b2 \u2211 \u2264 \U0001d44e", "x\u00b2 \u2211 \u2264 \U0001d44e"),  # not NFKC
        ("R/e.sc /t.sc /r.sc/o.sc [O/f.sc /f.sc ] model", "RETRO [OFF ] model"),
        ("Cr/MgO/H20849001/H20850 along /H20851110/H20852", "Cr/MgO(001) along [110]"),
        ("", ""),
    ],
)
def test_clean_extracted_text(raw, clean):
    assert clean_extracted_text(raw) == clean


# --------------------------------------------------------------------------- rendering


@needs_data
def test_render_page_png():
    path = _sample(SMALL_PAPER)
    png = render_page_png(path, 1, scale=0.5)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) > 1000
    assert render_page_png(path.read_bytes(), 4, scale=0.5).startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="between 1 and 4"):
        render_page_png(path, 5)
    with pytest.raises(ValueError, match="between 1 and 4"):
        render_page_png(path, 0)


def test_render_rejects_non_pdf():
    with pytest.raises(ValueError):
        render_page_png(b"not a pdf at all", 1)
