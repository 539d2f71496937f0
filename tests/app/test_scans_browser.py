"""Scans in a real browser (Debian's Chromium via Playwright): a sentence of the scanned book page
verified ``verbatim`` on the Verify page with the passage marked on the scan, and a passage of the
scanned brochure marked in Compare's passage dialog. Screenshots go to
test-artifacts/screenshots/scans-*.png (git-ignored)."""

from __future__ import annotations

import re

import pytest

from rag_core.pdf.ocr import find_tesseract
from tests.app.support import app_in_chromium
from tests.app.test_e2e_browser import compare, marked_pixels, open_passage
from tests.support import REPO

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(find_tesseract() is None, reason="Tesseract is not installed")]

SHOTS = REPO / "test-artifacts" / "screenshots"
WIDTH, HEIGHT = 1600, 1000
BOOK_PAGE = "awkward_scanned_no_text_huckfinn_page22.pdf"
BROCHURE = "awkward_scanned_no_text_linn_brochure_2col.pdf"
QUOTE = "There was a place on my ankle that got to itching; but I dasn't scratch it"


@pytest.fixture(scope="module")
def scans_root(tmp_path_factory, pdf_dir):
    from rag_core.collections.library import Library

    root = tmp_path_factory.mktemp("scans-browser")
    report = Library(root).add_pdfs("scans", [pdf_dir / BOOK_PAGE, pdf_dir / BROCHURE], embed="none")
    assert [f.status for f in report.files] == ["ok", "ok"], report.to_dict()
    return root


def test_a_scan_is_verified_and_marked_in_a_browser(scans_root):
    SHOTS.mkdir(parents=True, exist_ok=True)
    with app_in_chromium(scans_root, width=WIDTH, height=HEIGHT) as (page, url, expect):
        context = page.context

        def no_exception() -> None:
            assert page.locator('[data-testid="stException"]').count() == 0, "a traceback reached the page"

        # 1. Verify: a sentence of the book page, verbatim, marked on the scan
        page.goto(f"{url}/verify")
        expect(page.get_by_role("heading", name="Verify a quote or claim")).to_be_visible(timeout=120_000)
        page.get_by_role("textbox", name="Quote or claim").fill(QUOTE)
        page.get_by_role("button", name="Check").click()
        verdict = page.locator(".rc-note").first
        expect(verdict).to_contain_text("verbatim", timeout=120_000)
        expect(verdict).to_contain_text(BOOK_PAGE)
        expect(verdict).to_contain_text("read by OCR")
        image = page.locator('[data-testid="stImage"] img').first
        expect(image).to_be_visible(timeout=60_000)
        expect(page.get_by_text("a scan read by OCR: a character may be misread", exact=False)
               ).to_be_visible()
        assert marked_pixels(context, url, image) > 200, "the passage is marked on the scan"
        no_exception()
        page.set_viewport_size({"width": WIDTH, "height": 2400})
        page.wait_for_timeout(1000)
        page.screenshot(path=str(SHOTS / "scans-1-verify-verbatim.png"))
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

        # 2. Compare: a passage of the brochure opened in its dialog, marked on the scan
        page.goto(f"{url}/compare")
        expect(page.get_by_role("heading", name="Compare searches")).to_be_visible(timeout=120_000)
        compare(page, expect, "disk drive stores complex songs", tables=None)
        open_passage(page, expect, "TF-IDF #1")
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("read by OCR from a scanned page")
        dialog_image = dialog.locator('[data-testid="stImage"] img').first
        expect(dialog_image).to_be_visible(timeout=60_000)
        assert marked_pixels(context, url, dialog_image) > 200, "the passage is marked in the dialog"
        no_exception()
        page.wait_for_timeout(1000)
        page.screenshot(path=str(SHOTS / "scans-2-compare-dialog.png"))
        page.keyboard.press("Escape")

        # 3. Collections: the documents list (a canvas grid: looked at in the screenshot)
        page.goto(f"{url}/collections")
        expect(page.get_by_role("heading", name="Documents")).to_be_visible(timeout=120_000)
        no_exception()
        page.set_viewport_size({"width": WIDTH, "height": 2000})  # Streamlit scrolls inside its container
        page.wait_for_timeout(1500)
        page.screenshot(path=str(SHOTS / "scans-3-documents.png"))

        # 4. Settings: how uploads read scans, and the engine found
        page.goto(f"{url}/settings")
        ocr = page.get_by_role("heading", name="Scanned PDFs (OCR)")
        expect(ocr).to_be_visible(timeout=120_000)
        engine = re.compile(r"OCR engine:\s*tesseract \d.*language packs: .*eng")
        expect(page.locator("body")).to_contain_text(engine)
        no_exception()
        ocr.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(1000)
        page.screenshot(path=str(SHOTS / "scans-4-settings.png"))
