"""Citation checks against scans read by OCR: verdicts say the text was read by OCR, a
near-verbatim difference may be the scan's, and the passage is marked on the scan's page image
by the words OCR read there."""

from __future__ import annotations

import io

import numpy as np
import pytest

from rag_core.citations.verdicts import verify_quote
from rag_core.output.render import page_label
from rag_core.pdf.marks import MARK_COLOUR, locate_passage, mark_hit, render_marked_page
from rag_core.pdf.ocr import find_tesseract

pytestmark = pytest.mark.skipif(find_tesseract() is None, reason="Tesseract is not installed")
BOOK_PAGE = "awkward_scanned_no_text_huckfinn_page22.pdf"
BROCHURE = "awkward_scanned_no_text_linn_brochure_2col.pdf"
QUOTE = 'Then he says, "Who dah?" He listened some more; then he come tip-toeing down and stood right between us'


@pytest.fixture(scope="module")
def scans(tmp_path_factory, pdf_dir):
    """A collection of the two shared scans, read by OCR (no embeddings)."""
    from rag_core.collections.library import Library

    library = Library(tmp_path_factory.mktemp("scans"))
    report = library.add_pdfs("scans", [pdf_dir / BOOK_PAGE, pdf_dir / BROCHURE], embed="none")
    assert [f.status for f in report.files] == ["ok", "ok"], report.files
    return library, library.load_index("scans")


def blue_pixels(png: bytes) -> int:
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)
    return int((np.abs(pixels - np.array(MARK_COLOUR)) < 30).all(axis=2).sum())


def test_a_verbatim_quote_from_a_scan_says_it_was_read_by_ocr(scans):
    _, index = scans
    check = verify_quote(QUOTE, index, meaning=False)
    assert check.verdict == "verbatim" and check.source == BOOK_PAGE and check.page == 1
    assert check.ocr and "read by OCR" in check.message and check.to_dict()["ocr"] is True
    assert page_label(check.hits[0]) == "p. 1 (OCR text)"


def test_a_near_verbatim_quote_says_the_difference_may_be_the_scans(scans):
    _, index = scans
    check = verify_quote("Each of the 100 sequences contains 32 simultaneous, monophonic tracks.", index,
                         meaning=False)
    assert check.verdict == "near_verbatim" and check.source == BROCHURE
    assert "polyphonic" in check.best["diff"]
    assert check.ocr and "a difference may be the scan's" in check.message


def test_the_passage_is_marked_on_the_scan_where_ocr_read_it(scans):
    library, index = scans
    check = verify_quote(QUOTE, index, meaning=False)
    pdf, layer = library.pdf_path("scans", BOOK_PAGE), library.ocr_layer("scans", BOOK_PAGE)
    pages = mark_hit(pdf, check.hits[0], ocr_layer=layer)
    assert len(pages) == 1 and pages[0].found and pages[0].ocr and pages[0].location.method == "exact"
    assert "read by OCR" in pages[0].caption() and pages[0].cropped
    assert blue_pixels(pages[0].png) > 200
    # the boxes lie where Tesseract found the words: "listened" on the page, in PDF points
    words, boxes = layer["pages"]["1"]["words"], layer["pages"]["1"]["boxes"]
    left, top, right, bottom = boxes[4 * words.index("listened"): 4 * words.index("listened") + 4]
    width, height = layer["pages"]["1"]["size"]
    page_w, page_h = 384.0, 470.88  # the book page's size in points
    x, y = (left + right) / 2 * page_w / width, page_h - (top + bottom) / 2 * page_h / height
    location = locate_passage(pdf, 1, QUOTE, ocr_layer=layer)
    assert any(b[0] - 1 <= x <= b[2] + 1 and b[1] - 1 <= y <= b[3] + 1 for b in location.boxes)
    assert len(location.boxes) == 6  # one a line: "Then he", "says,", "Who dah?", three more lines
    # without the OCR layer the scan has no text to find it in
    assert not render_marked_page(pdf, 1, QUOTE).found


def test_search_rows_from_a_scan_say_ocr_text(scans):
    from rag_core.retrieval.ranking import search

    _, index = scans
    rows = search("sequencer disk drive stores songs", index, rerank=False, top=2)
    assert rows[0]["source"] == BROCHURE and rows[0]["ocr"] is True
    assert page_label(rows[0]).endswith("(OCR text)")
