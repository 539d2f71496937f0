"""Scans in an ingest: the files with a text layer are committed first, the scans read by OCR
follow with their OCR layers, the progress counts their pages, the budgets hold."""

from __future__ import annotations

import pytest

from rag_core.collections.ingest.ocr_layers import layer_key
from rag_core.collections.ingest.rates import measured_rates
from rag_core.collections.library import Library
from rag_core.pdf.ocr import find_tesseract
from rag_core.pdf.pool import ExtractionPool
from rag_core.retrieval.exact import search_exact
from rag_core.testing import scanned_pdf

pytestmark = pytest.mark.skipif(find_tesseract() is None, reason="Tesseract is not installed")

TEXT = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages with a text layer
SCAN = "awkward_scanned_no_text_huckfinn_page22.pdf"
LINES = ["Scanned papers are read by Tesseract,", "so their sentences can be searched", "and quoted like any other."]


def test_text_layer_files_are_searchable_before_the_scans_are_read(tmp_path, pdf_dir):
    library = Library(tmp_path / "data")
    library.create("c")
    seen_at_ocr: list[set[str]] = []
    events = []

    def progress(event):
        events.append(event)
        if event.stage == "ocr" and not seen_at_ocr:  # the scans' reading starts: what is searchable now?
            index = library.load_index("c")
            seen_at_ocr.append(set() if index is None else {c["source"] for c in index.chunks})

    report = library.add_pdfs("c", [pdf_dir / SCAN, pdf_dir / TEXT, ("typed.pdf", scanned_pdf([LINES]))],
                              embed="none", progress=progress)
    assert [(f.source, f.status) for f in report.files] == [(SCAN, "ok"), (TEXT, "ok"), ("typed.pdf", "ok")]
    assert seen_at_ocr == [{TEXT}]  # committed first; the scans came in a second commit
    assert report.searchable_after_s < report.seconds
    ocr_events = [e for e in events if e.stage == "ocr"]
    assert ocr_events[-1].ocr_pages_total == 2 and max(e.ocr_pages_done for e in ocr_events) == 2
    assert all(e.eta_s is not None for e in ocr_events)
    assert events[-1].stage == "done" and events[-1].files_done == 3

    scan = report.files[0]
    assert scan.ocr["pages"] == [1] and scan.ocr["mean_confidence"] > 80 and scan.ocr["engine"].startswith("tess")
    assert "ocr: 1 page, mean confidence" in scan.reason and report.files[1].ocr is None
    docs = {d["source"]: d for d in library.documents("c")}
    assert docs[SCAN]["ocr"]["pages"] == [1] and "ocr" not in docs[TEXT]
    index = library.load_index("c")
    assert all(c.get("ocr") is True for c in index.chunks if c["source"] in (SCAN, "typed.pdf"))
    assert not any(c.get("ocr") for c in index.chunks if c["source"] == TEXT)
    hit = search_exact("stooping down so as the branches wouldn't scrape our heads", index, mode="normalized")[0]
    assert hit["source"] == SCAN and hit["page"] == 1 and hit["ocr"] is True


def test_the_ocr_layer_is_kept_with_the_collection_and_goes_with_its_document(tmp_path, store_location):
    library = Library(tmp_path / "data", store=store_location)
    report = library.add_pdfs("c", [("typed.pdf", scanned_pdf([LINES]))], embed="none")
    assert report.files[0].status == "ok", report.files[0].reason
    doc = library.documents("c")[0]
    layer = library.ocr_layer("c", "typed.pdf")
    assert layer["pages"]["1"]["words"][:3] == ["Scanned", "papers", "are"]
    assert library.store.list_data("c") == [layer_key(doc["sha256"])]
    assert library.check("c").ok
    library.remove_documents("c", ["typed.pdf"])
    assert library.store.list_data("c") == [] and library.ocr_layer("c", "typed.pdf") is None


@pytest.mark.slow
def test_ocr_off_and_force_on_an_ingest(tmp_path, pdf_dir):
    library = Library(tmp_path / "data")
    off = library.add_pdfs("c", [("typed.pdf", scanned_pdf([LINES]))], embed="none", ocr="off")
    assert off.files[0].status == "no_text" and "--ocr auto" in off.files[0].reason and off.collection_removed
    forced = library.add_pdfs("c", [pdf_dir / TEXT], embed="none", ocr="force")
    assert forced.files[0].status == "ok" and forced.files[0].ocr["pages"] == [1, 2, 3]
    with pytest.raises(ValueError, match="ocr must be one of"):
        library.add_pdfs("c", [pdf_dir / TEXT], ocr="maybe")


@pytest.mark.slow
def test_the_ocr_rate_is_remembered_for_the_next_estimate(tmp_path, pdf_dir, monkeypatch):
    from rag_core.collections.ingest import pipeline

    monkeypatch.setattr(pipeline, "OCR_RATE_MIN_SECONDS", 0.0)  # 8 small pages can take under the 3 s floor
    library = Library(tmp_path / "data")
    before = measured_rates()["ocr_pages_per_s"]
    pages = [LINES, ["The second page", "of the same scan."], LINES[::-1], ["A fourth", "page"]]
    report = library.add_pdfs("c", [("typed.pdf", scanned_pdf(pages * 2))], embed="none")
    assert report.files[0].ocr["pages"] == list(range(1, 9))
    after = measured_rates()["ocr_pages_per_s"]
    assert after != before and after > 0  # a rate measured here, whatever the machine's speed (issue 30)


@pytest.mark.slow
def test_a_hostile_scan_is_stopped_at_its_budget_and_the_other_file_finishes(pdf_dir):
    """A thousand pages of grey noise: every page must go to Tesseract, far beyond a small budget."""
    noisy = scanned_pdf([[]] * 1000, size_in=(3, 3), dpi=100, noise=0.05)
    with ExtractionPool(workers=2, seconds_base=5, seconds_per_page=0.01, ocr_seconds_per_page=0.01) as pool:
        results = pool.run([("noise.pdf", noisy), (TEXT, (pdf_dir / TEXT).read_bytes())])
    # a budget of about 5 s and 20 s against 1,000 pages of Tesseract: stopped on any machine; no timing (issue 30)
    assert results[0].status == "too_slow" and "OCR" in results[0].reason, results[0].reason
    assert results[1].status == "ok" and results[1].n_pages == 3
