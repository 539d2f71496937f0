"""OCR of scanned pages (rag_core.pdf.ocr through extract_pdf): which pages are read, what
Tesseract's words become, the shared scans read well enough to quote, hostile scans stopped."""

from __future__ import annotations

import re

import pytest

from rag_core.pdf import ocr
from rag_core.pdf.extraction import extract_pdf
from rag_core.testing import scanned_pdf
from rag_core.text.folding import normalize_for_matching
from tests.support import PDF_DIR, TEST_DATA

needs_tesseract = pytest.mark.skipif(ocr.find_tesseract() is None,
                                     reason="Tesseract is not installed (scripts/setup.sh installs it as root)")
BROCHURE = "awkward_scanned_no_text_linn_brochure_2col.pdf"
BOOK_PAGE = "awkward_scanned_no_text_huckfinn_page22.pdf"
NO_MAPPING = "awkward_truetype_font_no_unicode_mapping.pdf"
# Every sentence of the book page, as a reader types it from the page image.
BOOK_SENTENCES = [line for line in (TEST_DATA / "huckfinn_page22_sentences.txt").read_text(encoding="utf-8")
                  .splitlines() if line.strip() and not line.startswith("#")]
LINES = ["Scanned papers are read by Tesseract,", "so their sentences can be searched", "and quoted like any other."]


def character_error_rate(text: str, truth: str) -> float:
    from rapidfuzz.distance import Levenshtein

    def spaced(s: str) -> str:
        return re.sub(r"\s+", " ", s).strip()

    return Levenshtein.distance(spaced(text), spaced(truth)) / len(spaced(truth))


# --------------------------------------------------------------------------- Tesseract's words, as text


def test_closing_marks_join_the_word_before_and_lone_opening_quotes_the_word_after():
    words = ["Then", "he", "says,", "**", "Who", "dah?\u201d", "the", "kitchen", "door", ";", "we", "could"]
    lines = [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2]
    text, corrected = ocr.page_text(words, lines, [(1, 1), (1, 2), (1, 2)])
    assert text == "Then he says,\n\u201cWho dah?\u201d\nthe kitchen door; we could"
    assert corrected[3] == "\u201c" and corrected[9] == ";"  # the words keep their boxes, one for one


def test_a_blank_line_only_between_blocks_and_after_a_sentence_ends():
    words = ["It", "is", "extremely", "powerful.", "Each", "track", "Editing", "To", "erase"]
    lines = [0, 0, 1, 1, 2, 2, 3, 4, 4]
    paragraphs = [(1, 1), (1, 2), (1, 3), (2, 1), (2, 1)]
    text = ocr.page_text(words, lines, paragraphs)[0]
    # a paragraph or block Tesseract starts mid-sentence stays a line; after "powerful." a new paragraph
    assert text == "It is\nextremely powerful.\n\nEach track\nEditing\nTo erase"
    assert ocr.page_text(["said:", "\u201cGo.\u201d", "Then"], [0, 1, 2], [(1, 1), (1, 2), (1, 3)])[0] == \
        "said:\n\n\u201cGo.\u201d\n\nThen"


def test_a_misread_opening_quote_follows_its_closing_quote():
    assert ocr.page_text(["\u2018Who", "dah?\u201d"], [0, 0], [(1, 1)])[0] == "\u201cWho dah?\u201d"
    assert ocr.page_text(["\u2018Who", "dah?\u2019"], [0, 0], [(1, 1)])[0] == "\u2018Who dah?\u2019"  # single, kept


def test_tsv_words_keep_their_boxes_confidences_and_lines():
    tsv = ("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
           "1\t1\t0\t0\t0\t0\t0\t0\t1000\t1000\t-1\t\n"
           "5\t1\t1\t1\t1\t1\t10\t20\t30\t12\t96.5\tHello\n"
           "5\t1\t1\t1\t1\t2\t45\t20\t40\t12\t91.0\tworld,\n"
           "5\t1\t2\t1\t1\t1\t10\t60\t30\t12\t50.0\tagain\n"
           "5\t1\t2\t1\t1\t2\t45\t60\t30\t12\t-1\t \n")
    page = ocr.parse_tsv(3, tsv, 1000, 1000, 300)
    assert page.text == "Hello world,\nagain"  # another block, mid-sentence: one line break
    assert page.words[1] == ("world,", (45, 20, 85, 32), 91.0, 0)
    assert page.mean_confidence == pytest.approx((96.5 + 91 + 50) / 3)
    layer = page.layer()
    assert layer["boxes"][:4] == [10, 20, 40, 32] and layer["lines"] == [0, 0, 1] and layer["size"] == [1000, 1000]


# --------------------------------------------------------------------------- which pages


def test_ocr_mode_off_force_and_unknown():
    data = scanned_pdf([LINES])
    assert extract_pdf(data, ocr="off").status == "no_text"
    with pytest.raises(ValueError, match="ocr must be one of"):
        extract_pdf(data, ocr="sometimes")
    with pytest.raises(ocr.OcrError, match="must be one of"):
        ocr.check_ocr_options("sometimes", "eng")
    with pytest.raises(ocr.OcrError, match="not an OCR language"):
        ocr.check_ocr_options("auto", "eng; rm -rf /")


def test_without_tesseract_force_is_refused_and_auto_leaves_the_scan(monkeypatch):
    monkeypatch.setenv("RAG_CORE_TESSERACT", "/nonexistent/tesseract")
    with pytest.raises(ocr.OcrError, match="apt-get install tesseract-ocr"):
        ocr.check_ocr_options("force", "eng")
    assert ocr.check_ocr_options("auto", "deu") == ("auto", "deu")  # not checked: scans stay no_text
    result = extract_pdf(scanned_pdf([LINES]), ocr="defer")
    assert result.status == "no_text" and result.ocr_needed == [] and "apt-get install" in result.reason


@needs_tesseract
def test_a_language_pack_that_is_not_installed_is_named_with_its_package():
    with pytest.raises(ocr.OcrError, match="tesseract-ocr-xyz"):
        ocr.check_ocr_options("auto", "eng+xyz")


@needs_tesseract
def test_defer_lists_the_pages_auto_would_read_and_reads_none():
    data = scanned_pdf([LINES, [], LINES])  # page 2 has nothing on it but white paper
    result = extract_pdf(data, ocr="defer")
    assert result.ocr_needed == [1, 2, 3] and result.ocr is None  # an image on each: a look decides later
    read = extract_pdf(data)
    assert read.ok and read.ocr["pages"] == [1, 3], read.ocr
    assert read.ocr["skipped"] == {"2": "blank"}
    assert read.pages[1].text == ""


@needs_tesseract
def test_a_synthetic_scan_is_read_word_for_word_with_boxes():
    result = extract_pdf(scanned_pdf([LINES, ["The second page,", "also scanned."]]))
    assert result.status == "ok", result.reason
    assert "ocr: 2 pages, mean confidence" in result.reason
    folded = normalize_for_matching(result.text)[0]
    for line in [*LINES, "The second page, also scanned."]:
        assert normalize_for_matching(line)[0] in folded
    assert [p.number for p in result.pages] == [1, 2]
    layer = result.ocr_layer
    assert set(layer["pages"]) == {"1", "2"} and layer["engine"].startswith("tesseract ")
    page = layer["pages"]["1"]
    assert page["words"][0] == "Scanned" and len(page["boxes"]) == 4 * len(page["words"])
    left, top, right, bottom = page["boxes"][:4]
    # one-inch margin at 200 dpi in the scan, read at 300 dpi: the first word starts about 300 px in
    assert 250 < left < 350 and 250 < top < 350 and right > left and bottom > top
    assert result.ocr["mean_confidence"] > 85 and result.ocr["low_confidence_pages"] == []


@pytest.mark.slow
@needs_tesseract
def test_force_reads_pages_that_have_a_text_layer_and_off_keeps_it():
    path = PDF_DIR / "awkward_scanned_ocr_layer_zfn_a_1999_solitary_waves.pdf"
    if not path.is_file():
        pytest.skip("shared PDFs not present")
    auto = extract_pdf(path)
    assert auto.ok and auto.ocr is None  # an OCR layer of its own: kept under auto
    forced = extract_pdf(path, ocr="force")
    assert forced.ok and forced.ocr["pages"] == [1, 2] and forced.ocr["mode"] == "force"
    assert forced.text != auto.text and "solitary" in forced.text.lower()


CALLED: list[str] = []


def never(*args, **kwargs):
    CALLED.append("called")  # recorded, in case the caller turns the error into a page's status
    raise AssertionError("called where the page should be judged without it")


@needs_tesseract
def test_a_page_too_large_to_render_is_too_large_at_once(monkeypatch):
    import io

    import pypdf

    writer = pypdf.PdfWriter(clone_from=io.BytesIO(scanned_pdf([LINES], size_in=(4, 4), dpi=100)))
    writer.pages[0].scale_by(500)  # 4 inches x 500: a 2,000 x 2,000-inch page
    buffer = io.BytesIO()
    writer.write(buffer)
    import pypdfium2

    monkeypatch.setattr(pypdfium2.PdfPage, "render", never)  # refused from its size, never drawn (issue 30)
    CALLED.clear()
    result = extract_pdf(buffer.getvalue())
    assert not CALLED
    assert result.status == "too_large", result.reason
    assert "2,000 × 2,000 inches" in result.reason


@needs_tesseract
def test_a_thousand_blank_scanned_pages_are_seen_blank_without_tesseract(monkeypatch):
    data = scanned_pdf([[]] * 1000, size_in=(2, 2), dpi=100)
    monkeypatch.setattr(ocr, "_tesseract", never)  # a quick look at each page, no Tesseract (issue 30: no timing)
    CALLED.clear()
    result = extract_pdf(data)
    assert not CALLED
    assert result.status == "no_text" and result.n_pages == 1000
    assert "no text" in result.reason and result.ocr["pages"] == []


# --------------------------------------------------------------------------- the shared scans


@pytest.fixture(scope="module")
def shared_scans():
    if not PDF_DIR.is_dir():
        pytest.skip("shared PDFs not present")
    if ocr.find_tesseract() is None:
        pytest.skip("Tesseract is not installed")
    return {name: extract_pdf(PDF_DIR / name) for name in (BROCHURE, BOOK_PAGE, NO_MAPPING)}


def test_the_brochure_reads_within_two_percent_character_error(shared_scans):
    result = shared_scans[BROCHURE]
    assert result.status == "ok" and result.ocr["pages"] == [1]
    truth = (PDF_DIR / "awkward_scanned_no_text_linn_brochure_2col.groundtruth.txt").read_text(encoding="utf-8")
    assert character_error_rate(result.text, truth) <= 0.02
    assert result.ocr["mean_confidence"] > 80


def test_every_sentence_of_the_book_page_is_found_folded(shared_scans):
    result = shared_scans[BOOK_PAGE]
    assert result.status == "ok" and result.pages[0].number == 1
    folded = normalize_for_matching(result.pages[0].text)[0]
    missing = [s for s in BOOK_SENTENCES if normalize_for_matching(s)[0] not in folded]
    assert missing == []


def test_a_font_without_unicode_mapping_is_read_by_ocr(shared_scans):
    result = shared_scans[NO_MAPPING]
    assert result.status == "ok", result.reason
    assert result.pages[0].text == "Phone"  # the page's one word, where the text layer gave "7+%-"


def test_the_ocr_note_of_a_document_names_its_unsure_pages():
    from rag_core.pdf.extraction import ocr_note

    summary = {"pages": [1, 2], "mean_confidence": 71.4, "low_confidence_pages": [2]}
    assert ocr_note(summary) == "read by OCR: 2 pages, mean confidence 71; low OCR confidence on page 2"
    assert ocr_note(None) == ocr_note({"pages": []}) == ""


@pytest.mark.slow
@needs_tesseract
def test_a_page_tesseract_is_unsure_of_is_flagged_in_the_reason():
    import io

    import pypdf

    writer = pypdf.PdfWriter()
    for noise in (0.0, 0.25):  # a clean page, then one under a quarter of grey speckles
        writer.append(pypdf.PdfReader(io.BytesIO(scanned_pdf([LINES], dpi=200, noise=noise, size_in=(5, 3)))))
    buffer = io.BytesIO()
    writer.write(buffer)
    result = extract_pdf(buffer.getvalue())
    assert result.ok and result.ocr["pages"] == [1, 2]
    assert result.ocr["low_confidence_pages"] == [2], result.ocr
    assert "low OCR confidence on page 2" in result.reason
    assert "Scanned papers are read by Tesseract," in result.pages[0].text
