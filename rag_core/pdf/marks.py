"""The evidence where it is: a passage's boxes on its PDF page, and the page image marked.

The text we search is pypdf's cleaned text; the boxes come from pdfium's text layer
(pypdfium2's text page: one entry per character, with its box). The two texts differ
(hyphens joined at ingest, ligatures, spacing, reading order), so a passage is found in
pdfium's characters after folding both (:func:`rag_core.retrieval.exact.normalize_for_matching`):
first word for word with the spaces left out, then, failing that, by rapidfuzz's alignment.
A scanned page read by OCR has no text layer: its words as Tesseract read them, each with its
box (the document's OCR layer, :mod:`rag_core.pdf.ocr`), take the place of pdfium's characters,
and the passage is found and marked the same way.

:func:`render_marked_page` draws the boxes as outlines with a bar in the page margin, in a
blue that cannot be taken for the yellow highlight annotations some PDFs carry, and renders
the page without its annotations. :func:`mark_passage` does it for each page a passage
touches, cropped to the passage, and gives the printed page label beside the physical page.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag_core.errors import RagCoreError
from rag_core.text.folding import normalize_for_matching

__all__ = [
    "MARK_COLOUR",
    "MarkedPage",
    "PassageLocation",
    "PdfMarkError",
    "locate_passage",
    "mark_hit",
    "mark_passage",
    "render_marked_page",
]

# An outline and margin bar in blue (RGB), with a light translucent fill: no PDF highlight
# annotation here is blue, and the page is rendered without its annotations anyway.
MARK_COLOUR = (20, 90, 230)
_FILL_ALPHA = 48
# Below this rapidfuzz score (0-100) a fuzzy alignment does not count as the passage.
MIN_ALIGNMENT_SCORE = 80.0


class PdfMarkError(RagCoreError):
    """The PDF cannot be opened, or the page number is out of range."""


@dataclass
class PassageLocation:
    """Where a passage lies on a page: pdfium character range, boxes, how sure we are.

    ``boxes`` are ``(left, bottom, right, top)`` in PDF points (origin at the bottom left of
    the page), one per line of the passage. ``method`` is "exact" (word for word once folded),
    "aligned" (rapidfuzz alignment; ``score`` says how close, 0-1) or "not_found".
    """

    page: int
    char_start: int = 0
    char_end: int = 0
    boxes: list[tuple[float, float, float, float]] = field(default_factory=list)
    score: float = 0.0
    method: str = "not_found"
    text: str = ""
    column: list[tuple[float, float, float, float]] = field(default_factory=list, repr=False)

    @property
    def found(self) -> bool:
        return self.method != "not_found"


@dataclass
class MarkedPage:
    """A rendered page with the passage marked. ``png`` is cropped to the passage unless
    rendered with ``zoom=False``; ``page`` is the physical page (1-based), ``page_label`` the
    printed label when the PDF defines one."""

    page: int
    page_label: str | None
    png: bytes
    location: PassageLocation
    width: int
    height: int
    cropped: bool
    ocr: bool = False  # located in the words OCR read on a scanned page

    @property
    def found(self) -> bool:
        return self.location.found

    def caption(self) -> str:
        label = f" (printed page {self.page_label})" if self.page_label and self.page_label != str(self.page) else ""
        layer = "the words OCR read on this scan" if self.ocr else "the page's text layer"
        how = {"exact": "passage marked", "aligned": f"closest text marked ({self.location.score:.0%} alike)",
               "not_found": f"passage not located in {layer}"}[self.location.method]
        scan = " (a scan read by OCR: a character may be misread)" if self.ocr and self.found else ""
        return f"Page {self.page}{label}: {how}{scan}"


# --------------------------------------------------------------------------- opening


def _open(pdf: str | Path | bytes):
    import pypdfium2 as pdfium

    if isinstance(pdf, (bytes, bytearray, memoryview)):
        source = bytes(pdf)
    elif isinstance(pdf, (str, Path)):
        path = Path(pdf)
        if not path.is_file():
            raise PdfMarkError(f"No such PDF file: {path}")
        source = str(path)
    else:
        raise TypeError(f"pdf must be a path or bytes, got {type(pdf).__name__}")
    try:
        return pdfium.PdfDocument(source)
    except pdfium.PdfiumError as exc:
        raise PdfMarkError(f"Cannot open the PDF to mark the passage: {exc}") from None


def _page(document, page_number: int):
    if isinstance(page_number, bool) or not isinstance(page_number, int):
        raise PdfMarkError(f"The page number must be an integer, got {page_number!r}")
    if not 1 <= page_number <= len(document):
        raise PdfMarkError(f"Page {page_number} is out of range: the PDF has {len(document)} pages")
    return document[page_number - 1]


def _label(document, page_number: int) -> str | None:
    try:
        label = document.get_page_label(page_number - 1)
    except Exception:  # noqa: BLE001 - a broken label tree must not stop the page image
        return None
    return label or None


# --------------------------------------------------------------------------- locating


def _page_chars(textpage) -> str:
    """pdfium's characters of the page, one per character index (generated ones included)."""
    import pypdfium2.raw as pdfium_c

    return "".join(chr(pdfium_c.FPDFText_GetUnicode(textpage, i) or 0xFFFD) for i in range(textpage.count_chars()))


def _without_spaces(folded: str, origin: list[int]) -> tuple[str, list[int]]:
    kept = [(c, o) for c, o in zip(folded, origin, strict=False) if c != " "]
    return "".join(c for c, _ in kept), [o for _, o in kept]


def _locate_in_chars(chars: str, passage: str) -> tuple[int, int, float, str] | None:
    """``(first char, end char, score 0-1, method)`` of ``passage`` in a page's characters."""
    from rapidfuzz import fuzz

    folded, origin = normalize_for_matching(chars)
    needle = normalize_for_matching(passage)[0].strip()
    if not needle or not folded:
        return None
    # 1. word for word once folded, spaces left out (the two extractors space words differently)
    bare, bare_origin = _without_spaces(folded, origin)
    bare_needle = needle.replace(" ", "")
    j = bare.find(bare_needle)
    if j >= 0:
        return bare_origin[j], bare_origin[j + len(bare_needle) - 1] + 1, 1.0, "exact"
    # 2. the closest stretch by rapidfuzz's alignment
    found = fuzz.partial_ratio_alignment(needle, folded, score_cutoff=MIN_ALIGNMENT_SCORE)
    if found is None:
        return None
    if len(needle) <= len(folded):
        a, b = found.dest_start, found.dest_end
    else:  # the whole page text lies inside the passage
        a, b = 0, len(folded)
    if b <= a:
        return None
    return origin[a], origin[b - 1] + 1, found.score / 100.0, "aligned"


def _boxes(textpage, start: int, end: int) -> list[tuple[float, float, float, float]]:
    n = textpage.count_rects(start, end - start)
    boxes = []
    for i in range(n):
        left, bottom, right, top = textpage.get_rect(i)
        if right > left and top > bottom:
            boxes.append((left, bottom, right, top))
    return boxes


def _locate(page, page_number: int, passage: str) -> PassageLocation:
    textpage = page.get_textpage()
    try:
        chars = _page_chars(textpage)
        found = _locate_in_chars(chars, passage)
        if found is None:
            return PassageLocation(page=page_number)
        start, end, score, method = found
        boxes = _boxes(textpage, start, end)
        location = PassageLocation(page=page_number, char_start=start, char_end=end, boxes=boxes, score=score,
                                   method=method, text=chars[start:end])
        if boxes:  # the lines of the same column around the passage, so a crop shows whole lines
            left, right = min(b[0] for b in boxes), max(b[2] for b in boxes)
            location.column = [b for b in _boxes(textpage, 0, len(chars)) if b[0] < right and b[2] > left]
        return location
    finally:
        textpage.close()


def _ocr_chars(ocr_page: dict) -> tuple[str, list[int]]:
    """The OCR words of a page as one text (spaces between words, line breaks between lines),
    and for each of its characters the word it belongs to (-1 for a separator)."""
    parts: list[str] = []
    owner: list[int] = []
    lines = ocr_page.get("lines") or [0] * len(ocr_page["words"])
    for i, word in enumerate(ocr_page["words"]):
        if i:
            parts.append("\n" if lines[i] != lines[i - 1] else " ")
            owner.append(-1)
        parts.append(str(word))
        owner.extend([i] * len(str(word)))
    return "".join(parts), owner


def _image_to_page(page, ocr_page: dict, box) -> tuple[float, float, float, float]:
    """A box in pixels of the OCR image (``(left, top, right, bottom)``) to PDF points
    ``(left, bottom, right, top)``, through pdfium's own mapping (rotation and crop box included)."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    width, height = (int(v) for v in ocr_page["size"])
    xs, ys = [], []
    for x, y in ((box[0], box[1]), (box[2], box[3])):
        px, py = ctypes.c_double(), ctypes.c_double()
        pdfium_c.FPDF_DeviceToPage(page, 0, 0, width, height, 0, int(x), int(y), px, py)
        xs.append(px.value)
        ys.append(py.value)
    return min(xs), min(ys), max(xs), max(ys)


def _line_boxes(ocr_page: dict, words: range) -> dict[int, list[float]]:
    """The union box (image pixels) of the given words on each of their lines."""
    boxes, lines = ocr_page["boxes"], ocr_page.get("lines") or [0] * len(ocr_page["words"])
    out: dict[int, list[float]] = {}
    for i in words:
        left, top, right, bottom = boxes[4 * i: 4 * i + 4]
        box = out.setdefault(lines[i], [left, top, right, bottom])
        box[0], box[1], box[2], box[3] = min(box[0], left), min(box[1], top), max(box[2], right), max(box[3], bottom)
    return out


def _locate_ocr(page, page_number: int, passage: str, ocr_page: dict) -> PassageLocation:
    """Where ``passage`` lies among the words OCR read on the page (see :mod:`rag_core.pdf.ocr`)."""
    chars, owner = _ocr_chars(ocr_page)
    found = _locate_in_chars(chars, passage)
    if found is None:
        return PassageLocation(page=page_number)
    start, end, score, method = found
    covered = [owner[i] for i in range(start, end) if owner[i] >= 0]
    if not covered:
        return PassageLocation(page=page_number)
    first, last = min(covered), max(covered)
    lines = _line_boxes(ocr_page, range(first, last + 1))
    boxes = [_image_to_page(page, ocr_page, box) for _, box in sorted(lines.items())]
    location = PassageLocation(page=page_number, char_start=start, char_end=end, boxes=boxes, score=score,
                               method=method, text=" ".join(str(w) for w in ocr_page["words"][first:last + 1]))
    left, right = min(b[0] for b in boxes), max(b[2] for b in boxes)
    every_line = _line_boxes(ocr_page, range(len(ocr_page["words"])))
    location.column = [b for b in (_image_to_page(page, ocr_page, box) for box in every_line.values())
                       if b[0] < right and b[2] > left]
    return location


def _ocr_page(ocr_layer: dict | None, page_number: int) -> dict | None:
    """The OCR words of one page of a document's layer, when it has them."""
    if not ocr_layer:
        return None
    page = (ocr_layer.get("pages") or {}).get(str(page_number))
    return page if isinstance(page, dict) and page.get("words") is not None and page.get("size") else None


def locate_passage(pdf: str | Path | bytes, page_number: int, passage: str, *,
                   ocr_layer: dict | None = None) -> PassageLocation:
    """Where ``passage`` (text from our extraction of that page) lies on page ``page_number``
    (among the words of ``ocr_layer`` when that page was read by OCR)."""
    document = _open(pdf)
    try:
        page = _page(document, page_number)
        try:
            ocr_page = _ocr_page(ocr_layer, page_number)
            if ocr_page is not None:
                return _locate_ocr(page, page_number, passage, ocr_page)
            return _locate(page, page_number, passage)
        finally:
            page.close()
    finally:
        document.close()


# --------------------------------------------------------------------------- drawing


def _to_device(page, box, width_px: int, height_px: int) -> tuple[float, float, float, float]:
    """A box in PDF points to ``(x0, y0, x1, y1)`` pixels of the full-page bitmap."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    xs, ys = [], []
    left, bottom, right, top = box
    for x, y in ((left, bottom), (right, top), (left, top), (right, bottom)):
        dx, dy = ctypes.c_int(), ctypes.c_int()
        pdfium_c.FPDF_PageToDevice(page, 0, 0, width_px, height_px, 0, x, y, dx, dy)
        xs.append(dx.value)
        ys.append(dy.value)
    return min(xs), min(ys), max(xs), max(ys)


def _draw(image, rects: Sequence[tuple[float, float, float, float]], scale: float):
    from PIL import Image, ImageDraw

    base = image.convert("RGBA")
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    pad = max(1, round(1.5 * scale))
    line = max(2, round(1.2 * scale))
    for x0, y0, x1, y1 in rects:
        draw.rectangle((x0 - pad, y0 - pad, x1 + pad, y1 + pad), fill=(*MARK_COLOUR, _FILL_ALPHA),
                       outline=(*MARK_COLOUR, 255), width=line)
    if rects:  # a bar in the margin beside the passage, left of its leftmost line
        top = min(r[1] for r in rects) - pad
        bottom = max(r[3] for r in rects) + pad
        x = max(2, min(r[0] for r in rects) - round(8 * scale))
        draw.rectangle((x - round(2 * scale), top, x, bottom), fill=(*MARK_COLOUR, 255))
    return Image.alpha_composite(base, overlay).convert("RGB")


def _render(page, location: PassageLocation, *, scale: float, zoom: bool, margin_pt: float):
    bitmap = page.render(scale=scale, draw_annots=False)
    try:
        image = bitmap.to_pil()
    finally:
        bitmap.close()
    rects = [_to_device(page, box, image.width, image.height) for box in location.boxes]
    image = _draw(image, rects, scale)
    cropped = False
    if zoom and rects:
        margin = margin_pt * scale
        y0 = max(0, int(min(r[1] for r in rects) - margin))
        y1 = min(image.height, int(max(r[3] for r in rects) + margin))
        # as wide as the lines of the passage's column within the crop, plus the margin bar
        column = [_to_device(page, box, image.width, image.height) for box in location.column]
        wide = rects + [r for r in column if r[3] > y0 and r[1] < y1]
        x0 = max(0, int(min(r[0] for r in wide) - 16 * scale))
        x1 = min(image.width, int(max(r[2] for r in wide) + 6 * scale))
        if x1 > x0 and y1 > y0:
            image = image.crop((x0, y0, x1, y1))
            cropped = True
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue(), image.width, image.height, cropped


def render_marked_page(
    pdf: str | Path | bytes,
    page_number: int,
    passage: str,
    *,
    scale: float = 2.0,
    zoom: bool = True,
    margin_pt: float = 48.0,
    ocr_layer: dict | None = None,
) -> MarkedPage:
    """Render page ``page_number`` (1-based) without its annotations, ``passage`` marked.

    ``zoom`` crops the image to the passage with ``margin_pt`` points around it (the whole
    page when the passage is not located). ``ocr_layer``: the document's OCR layer
    (:meth:`rag_core.collections.library.Library.ocr_layer`), whose words locate the passage on
    a page read by OCR. Raises :class:`PdfMarkError` for a PDF that cannot be opened or a page
    out of range.
    """
    if not scale or scale <= 0 or scale > 8:
        raise PdfMarkError(f"scale must be greater than 0 and at most 8, got {scale!r}")
    document = _open(pdf)
    try:
        page = _page(document, page_number)
        ocr_page = _ocr_page(ocr_layer, page_number)
        try:
            location = (_locate_ocr(page, page_number, passage, ocr_page) if ocr_page is not None
                        else _locate(page, page_number, passage))
            png, width, height, cropped = _render(page, location, scale=scale, zoom=zoom, margin_pt=margin_pt)
        finally:
            page.close()
        return MarkedPage(page=page_number, page_label=_label(document, page_number), png=png, location=location,
                          width=width, height=height, cropped=cropped, ocr=ocr_page is not None)
    finally:
        document.close()


def mark_passage(
    pdf: str | Path | bytes,
    segments: Sequence[dict],
    *,
    scale: float = 2.0,
    zoom: bool = True,
    ocr_layer: dict | None = None,
) -> list[MarkedPage]:
    """One marked page per segment: ``segments`` are dicts with ``page`` and ``text`` (the
    passage's text on that page), such as a hit's ``pages`` from :func:`rag_core.retrieval.exact.find_places`
    or :func:`rag_core.citations.verdicts.verify_quote`. A passage that crosses a page gives both pages.
    ``ocr_layer``: the document's OCR layer, for pages of a scan."""
    pages = []
    for segment in segments:
        page, text = segment.get("page"), segment.get("text") or ""
        if not isinstance(page, int) or not text.strip():
            continue
        marked = render_marked_page(pdf, page, text, scale=scale, zoom=zoom, ocr_layer=ocr_layer)
        if marked.page_label is None and segment.get("page_label"):
            marked.page_label = str(segment["page_label"])
        pages.append(marked)
    return pages


def mark_hit(pdf: str | Path | bytes, hit: dict, *, scale: float = 2.0, zoom: bool = True,
             ocr_layer: dict | None = None) -> list[MarkedPage]:
    """The marked page(s) of a verbatim place, a near-verbatim alignment or a related passage
    (its best sentence) from :func:`rag_core.citations.verdicts.verify_quote`, or of a search
    row (its text). ``ocr_layer``: the document's OCR layer, for pages of a scan."""
    options = {"scale": scale, "zoom": zoom, "ocr_layer": ocr_layer}
    if hit.get("pages"):
        return mark_passage(pdf, hit["pages"], **options)
    if hit.get("sentence_pages"):
        return mark_passage(pdf, hit["sentence_pages"], **options)
    if hit.get("sentence") and hit.get("sentence_page"):
        return mark_passage(pdf, [{"page": hit["sentence_page"], "text": hit["sentence"],
                                   "page_label": hit.get("page_label")}], **options)
    page = hit.get("page") or hit.get("page_start")
    text = hit.get("match") or hit.get("text") or ""
    return mark_passage(pdf, [{"page": page, "text": text, "page_label": hit.get("page_label")}], **options)

