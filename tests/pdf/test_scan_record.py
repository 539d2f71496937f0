"""Issue 28: no record fields from text a scan's OCR mistook for a title block -- the brochure's
first lines were read as its authors ("The Linn Sequencer"), the scan's creation date as its year;
the record says "no record" and the file name stands for the document."""

from __future__ import annotations

import io

import pypdf
import pytest

from rag_core.pdf import ocr
from rag_core.pdf.extraction import extract_pdf
from rag_core.pdf.metadata import SCANNED_NO_RECORD, guess_metadata
from rag_core.testing import scanned_pdf

BROCHURE_LINES = ["The Linn Sequencer", "32 Track MIDI Sequence Recorder",
                  "The LinnSequencer is a state-of-the-art composition tool", "for the professional musician."]


@pytest.mark.skipif(ocr.find_tesseract() is None, reason="Tesseract is not installed")
def test_a_scan_read_by_ocr_has_no_record_from_its_text_nor_its_scanning_date():
    data = scanned_pdf([BROCHURE_LINES], size_in=(6, 3))
    result = extract_pdf(data)
    assert result.ok and result.ocr["pages"] == [1]
    record = result.metadata
    assert (record["title"], record["authors"], record["year"]) == (None, None, None)
    assert record["no_record"] == SCANNED_NO_RECORD and record["origin"] == {}
    # the same text read as a text layer's: what the old reader made of it
    plain = guess_metadata(pypdf.PdfReader(io.BytesIO(data)), result.pages[0].text, "scan.pdf")
    assert plain["authors"] and plain["year"]


def test_a_scan_keeps_what_its_information_dictionary_and_file_name_say():
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(scanned_pdf([[]], size_in=(2, 2), dpi=72)))
    writer.add_metadata({"/Title": "The LinnSequencer brochure", "/Author": "Roger Linn"})
    buffer = io.BytesIO()
    writer.write(buffer)
    record = guess_metadata(pypdf.PdfReader(buffer), "THEY TIP-TOED ALONG.\nMark Twain", "scan_2004.04906.pdf",
                            scanned=True)
    assert record["title"] == "The LinnSequencer brochure" and record["authors"] == ["Roger Linn"]
    assert record["arxiv_id"] == "2004.04906" and record["year"] == 2020 and "no_record" not in record


@pytest.mark.skipif(ocr.find_tesseract() is None, reason="Tesseract is not installed")
def test_the_huck_finn_page_gets_no_record_and_its_chip_is_the_file_name(pdf_dir):
    """The walk-through's scan: OCR read "THEY TIP-TOED ALONG." as its authors and 2015 as its year,
    and the chip read "ALONG. 2015"; now no record, and the file name names it."""
    from rag_core.output.passages import title_chip

    name = "awkward_scanned_no_text_huckfinn_page22.pdf"
    result = extract_pdf(pdf_dir / name)
    assert result.ok and result.ocr["pages"] == [1] and "TIP-TOED" in result.pages[0].text.upper()
    record = result.metadata
    assert (record["title"], record["authors"], record["year"]) == (None, None, None)
    assert record["no_record"] == SCANNED_NO_RECORD
    chip = title_chip({**record, "source": name}, {"page_start": 1})
    assert chip.startswith("awkward_scanned_no_te") and "ALONG" not in chip and "2015" not in chip
