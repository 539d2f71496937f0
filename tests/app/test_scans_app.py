"""Scans in the app (AppTest): Verify marks a quote on the scan's page image and says the text
was read by OCR; Compare's passage dialog marks its passage on the scan; Settings chooses how
uploads read scanned pages."""

from __future__ import annotations

import pytest

from rag_core.pdf.ocr import find_tesseract
from tests.app.test_apptest import assert_clean, html_text, notes, open_passage, run_compare, start, texts

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest
pytestmark = pytest.mark.skipif(find_tesseract() is None, reason="Tesseract is not installed")

BOOK_PAGE = "awkward_scanned_no_text_huckfinn_page22.pdf"
BROCHURE = "awkward_scanned_no_text_linn_brochure_2col.pdf"
QUOTE = "He listened some more; then he come tip-toeing down and stood right between us"


@pytest.fixture(scope="module")
def scans_dir(tmp_path_factory, pdf_dir):
    """A data folder with collection "scans": the two shared scans, read by OCR (no embeddings)."""
    from rag_core.collections.library import Library

    root = tmp_path_factory.mktemp("scans-app")
    report = Library(root).add_pdfs("scans", [pdf_dir / BOOK_PAGE, pdf_dir / BROCHURE], embed="none")
    assert [f.status for f in report.files] == ["ok", "ok"], report.to_dict()
    return root


def test_verify_marks_a_quote_on_the_scan_and_says_it_was_read_by_ocr(scans_dir, monkeypatch):
    at = start(scans_dir, monkeypatch, "pages/verify.py")
    at.text_area(key="verify_quote").input(QUOTE)
    at.button(key="FormSubmitter:verify_form-Check").click().run()
    assert_clean(at)
    [found] = notes(at, "success")
    assert found.startswith("✓ verbatim") and BOOK_PAGE in found and "read by OCR" in found
    assert len(at.image) == 1
    shown = "\n".join(html_text(at))
    assert "Page 1: passage marked (a scan read by OCR: a character may be misread)" in shown
    assert "p. 1 (OCR text)" in shown


def test_compare_marks_the_passage_on_the_scan_in_its_dialog(scans_dir, monkeypatch):
    at = start(scans_dir, monkeypatch, "pages/compare.py")
    run_compare(at, "disk drive stores complex songs")
    assert not notes(at, "error"), texts(at)
    open_passage(at, "TF-IDF #1")
    assert len(at.image) >= 1
    shown = "\n".join(html_text(at))
    assert "passage marked (a scan read by OCR" in shown or "closest text marked" in shown, shown
    assert "read by OCR from a scanned page" in shown


def test_settings_choose_how_uploads_read_scans(tmp_path, monkeypatch, pdf_dir):
    from rag_core.collections.library import Library
    from rag_core.collections.preferences import load_preferences

    root = tmp_path / "data"
    Library(root).create("papers")
    at = start(root, monkeypatch, "pages/settings.py")
    assert "tesseract" in texts(at).lower()
    at.radio(key="ocr_mode").set_value("off")
    at.button(key="FormSubmitter:ocr_form-Save OCR settings").click().run()
    assert_clean(at)
    assert load_preferences(root).ocr_mode == "off"
    with pytest.raises(ValueError, match="OCR mode must be one of"):
        from rag_core.collections.preferences import update_preferences

        update_preferences(root, ocr_mode="sometimes")


def test_the_documents_list_says_which_documents_were_read_by_ocr(scans_dir, monkeypatch):
    at = start(scans_dir, monkeypatch, "pages/collections.py")
    assert_clean(at)
    docs = next(df.value for df in at.dataframe if "document" in df.value.columns)
    notes = dict(zip(docs["document"], docs["notes"], strict=True))
    assert notes[BOOK_PAGE].startswith("read by OCR: 1 page, mean confidence 9"), notes
    assert notes[BROCHURE].startswith("read by OCR: 1 page, mean confidence 9"), notes
