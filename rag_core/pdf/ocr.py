"""OCR of scanned pages with Tesseract: which pages need it, their images, words with boxes.

A page is read by OCR when its text layer is no use (:func:`pages_to_ocr`): it has no text
but something is drawn on it (a scanned image), or its text is not text (a font without a
Unicode mapping: the ``unreadable_text`` case). Under ``force`` every page is read again, for
a bad OCR layer a PDF already carries.

Each page is rendered with pypdfium2 (in the calling thread: pdfium is not thread-safe) and
read by the ``tesseract`` program in TSV mode, several pages at once (one Tesseract process
per core, each single-threaded: ``OMP_THREAD_LIMIT=1``). Every word keeps its box, in pixels
of the page image Tesseract read, and its confidence (0-100), so a passage found on a scan is
marked on its page as on a born-digital one (:mod:`rag_core.pdf.marks`). The words of a page
travel as a small JSON dict (:meth:`OcrPage.layer`): the *OCR layer* a collection keeps with
the document.

Pages that need no reading are skipped without Tesseract: a page with nothing drawn on it, a
rendered page on which nothing stands out of the paper (:func:`_unreadable`: judged on the page's
own levels, so faint text is read), and a page too large to render at a readable resolution (a
2,000-inch page) is reported instead of rendered. A page without marks whose image cannot be
decoded (a broken JPEG or JBIG2 stream) says so rather than "blank". A page of low contrast is
handed to Tesseract with its levels stretched (:func:`_normalised`).
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import subprocess
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from rag_core.settings import (
    OCR_BLANK_DARK_PIXELS,
    OCR_CONTRAST_NOISE_RATIO,
    OCR_DPI,
    OCR_LOW_CONFIDENCE,
    OCR_MAX_PIXELS,
    OCR_MIN_CONTRAST,
    OCR_MIN_DPI,
    OCR_PAGE_TIMEOUT_S,
    OCR_SCAN_IMAGE_COVER,
    OCR_SCAN_MAX_TEXT_CHARS,
    OCR_STRETCH_BELOW,
    ocr_threads,
    tesseract_command,
)

__all__ = [
    "INSTALL_HINT",
    "LAYER_FORMAT",
    "OCR_MODES",
    "OcrError",
    "OcrPage",
    "OcrRun",
    "TesseractInfo",
    "check_ocr_options",
    "find_tesseract",
    "ocr_pages",
    "pages_to_ocr",
]

# "auto": only the pages without a usable text layer; "force": every page; "off": none.
OCR_MODES = ("auto", "force", "off")
INSTALL_HINT = ("install Tesseract: `apt-get install tesseract-ocr tesseract-ocr-eng` (or run `bash scripts/setup.sh` "
                "as root)")
LAYER_FORMAT = "rag_core.ocr_layer"
LAYER_VERSION = 1


class OcrError(ValueError):
    """OCR cannot run as asked: Tesseract is missing, or a language pack is not installed."""


@dataclass(frozen=True)
class TesseractInfo:
    """The ``tesseract`` program found: its path, version and installed language packs."""

    command: str
    version: str
    languages: tuple[str, ...]

    @property
    def engine(self) -> str:
        return f"tesseract {self.version}"


def find_tesseract(command: str | None = None) -> TesseractInfo | None:
    """The Tesseract program (``RAG_CORE_TESSERACT``, else ``tesseract`` on the PATH), or None."""
    return _find_tesseract(command or tesseract_command())


@functools.lru_cache(maxsize=8)
def _find_tesseract(command: str) -> TesseractInfo | None:
    path = shutil.which(command)
    if path is None:
        return None
    try:
        version = subprocess.run([path, "--version"], capture_output=True, timeout=20, check=False)
        langs = subprocess.run([path, "--list-langs"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if version.returncode != 0:
        return None
    first = (version.stdout or version.stderr).decode("utf-8", "replace").strip().splitlines()
    number = first[0].split()[-1] if first and first[0].split() else "?"
    listed = langs.stdout.decode("utf-8", "replace").splitlines()[1:]
    languages = tuple(sorted(line.strip() for line in listed if line.strip() and line.strip() != "osd"))
    return TesseractInfo(path, number, languages)


def check_ocr_options(mode: str, lang: str | None) -> tuple[str, str]:
    """``(mode, lang)`` checked; raises :class:`OcrError` (a ``ValueError``) saying what is wrong.

    ``lang`` is Tesseract's: ``eng``, ``deu``, ``eng+deu``; every pack must be installed. With
    mode "off", or "auto" on a machine without Tesseract, the language is not checked (auto
    then leaves scans ``no_text`` with the install line)."""
    if mode not in OCR_MODES:
        raise OcrError(f"OCR mode must be one of {', '.join(OCR_MODES)}, got {mode!r}")
    lang = (lang or "eng").strip()
    packs = [p for p in lang.split("+") if p]
    if not packs or any(not p.replace("_", "").isalnum() or len(p) > 40 for p in packs):
        raise OcrError(f"not an OCR language: {lang!r} (Tesseract's names, such as eng, deu or eng+deu)")
    if mode == "off":
        return mode, lang
    info = find_tesseract()
    if info is None:
        if mode == "force":
            raise OcrError(f"OCR is not available: Tesseract is not installed; {INSTALL_HINT}")
        return mode, lang
    missing = [p for p in packs if p not in info.languages]
    if missing:
        raise OcrError(
            f"the OCR language pack {', '.join(missing)} is not installed (installed: "
            f"{', '.join(info.languages) or 'none'}); install it with `apt-get install "
            f"{' '.join('tesseract-ocr-' + p.lower().replace('_', '-') for p in missing)}`")
    return mode, lang


# --------------------------------------------------------------------------- which pages


def _image_cover(page, width: float, height: float) -> float:
    """The share of the page that images cover (capped at 1)."""
    import pypdfium2.raw as pdfium_c

    area = 0.0
    for obj in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3):
        left, bottom, right, top = obj.get_bounds()
        area += max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))
    return min(area / max(width * height, 1e-6), 1.0)


def _draws_something(page) -> bool:
    for _ in page.get_objects(max_depth=1):
        return True
    return False


def pages_to_ocr(document, texts: Sequence[str], mode: str, *, has_text: Callable[[str], bool],
                 is_junk_page: Callable[[int], bool], all_junk: bool) -> list[int]:
    """The 1-based pages of ``document`` (a pypdfium2 document) to read by OCR under ``mode``.

    ``texts`` are the pages' text layers; ``has_text(text)`` says whether a text layer holds
    any text, ``is_junk_page(i)`` whether page ``i`` (0-based) has text that is not text, and
    ``all_junk`` whether the document's text as a whole is not text. Under "auto" a page is
    read when something is drawn on it and its text layer is missing or junk, or when it is a
    scanned image (images cover most of it) under a few words of text (a stamp, a page number)."""
    if mode == "off":
        return []
    if mode == "force":
        return list(range(1, len(texts) + 1))
    wanted = []
    for i, text in enumerate(texts):
        short = len("".join(text.split())) < OCR_SCAN_MAX_TEXT_CHARS
        if has_text(text) and not all_junk and not is_junk_page(i) and not short:
            continue
        page = document[i]
        try:
            if not _draws_something(page):
                continue
            if has_text(text) and not all_junk and not is_junk_page(i):  # a few words: only over a scanned image
                width, height = page.get_size()
                if _image_cover(page, width, height) < OCR_SCAN_IMAGE_COVER:
                    continue
            wanted.append(i + 1)
        finally:
            page.close()
    return wanted


# --------------------------------------------------------------------------- results


@dataclass
class OcrPage:
    """One page as Tesseract read it. ``words`` are ``(text, (left, top, right, bottom), confidence,
    line)``, the box in pixels of the ``width`` x ``height`` image rendered at ``dpi``; ``line``
    numbers the lines in reading order. ``text`` is the page's text: words joined by spaces, lines by
    line breaks, paragraphs by a blank line."""

    number: int
    width: int
    height: int
    dpi: float
    words: list[tuple[str, tuple[int, int, int, int], float, int]] = field(default_factory=list)
    text: str = ""
    paragraphs: list[tuple[int, int]] = field(default_factory=list, repr=False)  # (block, paragraph) of each line

    @property
    def mean_confidence(self) -> float | None:
        confidences = [w[2] for w in self.words if w[2] >= 0]
        return sum(confidences) / len(confidences) if confidences else None

    def layer(self) -> dict:
        """The page's words as kept with the document: compact JSON (boxes as one flat list)."""
        return {
            "size": [self.width, self.height], "dpi": round(self.dpi, 2),
            "words": [w[0] for w in self.words],
            "boxes": [c for w in self.words for c in w[1]],
            "conf": [round(w[2], 1) for w in self.words],
            "lines": [w[3] for w in self.words],
        }


@dataclass
class OcrRun:
    """What :func:`ocr_pages` did: the pages read, those skipped and why, and the time
    Tesseract itself took (summed over pages, for the benchmark's ratio)."""

    pages: dict[int, OcrPage] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    tesseract_seconds: float = 0.0
    seconds: float = 0.0
    threads: int = 1


# --------------------------------------------------------------------------- reading


def _render(document, number: int, dpi: float):
    """``(grayscale PIL image, dpi used)`` of page ``number``, or ``(None, why)`` when too large."""
    page = document[number - 1]
    try:
        width_pt, height_pt = page.get_size()
        pixels = (width_pt * dpi / 72.0) * (height_pt * dpi / 72.0)
        if pixels > OCR_MAX_PIXELS:
            dpi = dpi * (OCR_MAX_PIXELS / pixels) ** 0.5
        if dpi < OCR_MIN_DPI:
            return None, (f"too large to read by OCR ({width_pt / 72:,.0f} × {height_pt / 72:,.0f} inches; "
                          f"under {OCR_MIN_DPI} dpi in {OCR_MAX_PIXELS / 1e6:.0f} megapixels)")
        bitmap = page.render(scale=dpi / 72.0, grayscale=True, draw_annots=False)
        try:
            image = bitmap.to_pil().convert("L")
        finally:
            bitmap.close()
        return image, dpi
    finally:
        page.close()


def _looks_empty(document, number: int) -> bool:
    """A quick look at 36 dpi (a few milliseconds): every pixel the same level (within 2), so no
    mark at all, whatever the paper's colour."""
    page = document[number - 1]
    try:
        width, height = page.get_size()
        if width * height * (36 / 72) ** 2 > OCR_MAX_PIXELS:
            return False  # too large even for a look: the full render says so
        bitmap = page.render(scale=36 / 72, grayscale=True, draw_annots=False)
        try:
            darkest, lightest = bitmap.to_pil().convert("L").getextrema()
        finally:
            bitmap.close()
        return lightest - darkest <= 2
    finally:
        page.close()


def _undecodable_images(document, number: int) -> list[str]:
    """The filters of the page's images that cannot be decoded (a broken JPEG or JBIG2 stream is
    drawn as nothing, a broken Flate stream as black): looked at only for a page without marks."""
    import zlib

    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    page = document[number - 1]
    broken: list[str] = []
    try:
        for obj in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3):
            try:
                filters = [str(f) for f in obj.get_filters()]
            except pdfium.PdfiumError:
                filters = []
            named = "/".join(filters) or "image"
            if filters == ["DCTDecode"]:  # a JPEG: decoded at an eighth of its size (~1 ms), not whole
                if not _jpeg_decodes(bytes(obj.get_data(decode_simple=False))):
                    broken.append(named)
                continue
            try:
                obj.get_bitmap(render=False)  # pdfium owns it: not closed here
            except pdfium.PdfiumError:
                broken.append(named)
                continue
            if filters and filters[0] == "FlateDecode":
                try:
                    zlib.decompressobj().decompress(bytes(obj.get_data(decode_simple=False)), 1)
                except zlib.error:
                    broken.append(named)
    finally:
        page.close()
    return broken


def _jpeg_decodes(data: bytes) -> bool:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.draft("L", (max(1, image.width // 8), max(1, image.height // 8)))
            image.load()
    except (OSError, ValueError, SyntaxError):  # PIL's words for a broken or truncated JPEG
        return False
    return True


def _no_marks_reason(document, number: int, reason: str) -> str:
    """``reason`` ("blank", or marks too small), unless an image of the page could not be decoded:
    then that is what the page is."""
    broken = _undecodable_images(document, number)
    if broken:
        streams = " and ".join(dict.fromkeys(broken))
        return f"could not decode the page image: its {streams} stream is broken"
    return reason


def _levels(image) -> tuple[float, float, float, int]:
    """``(ink level, paper level, paper noise, ink pixels)`` of a grayscale page: Otsu's split of
    its histogram into two classes, the larger one the paper (its mean and standard deviation),
    the smaller the ink (its mean and size). Relative to the page, whatever its paper's colour."""
    hist = image.histogram()
    total = sum(hist)
    weighted = sum(level * count for level, count in enumerate(hist))
    best, split = -1.0, 0
    below = below_sum = 0
    for level in range(255):
        below += hist[level]
        below_sum += level * hist[level]
        above = total - below
        if not below or not above:
            continue
        between = below * above * (below_sum / below - (weighted - below_sum) / above) ** 2
        if between > best:
            best, split = between, level

    def stats(levels: range) -> tuple[int, float, float]:
        n = sum(hist[v] for v in levels)
        if not n:
            return 0, 0.0, 0.0
        mean = sum(v * hist[v] for v in levels) / n
        return n, mean, (sum(hist[v] * (v - mean) ** 2 for v in levels) / n) ** 0.5

    dark, light = stats(range(split + 1)), stats(range(split + 1, 256))
    ink, paper = (dark, light) if dark[0] <= light[0] else (light, dark)
    return ink[1], paper[1], paper[2], ink[0]


def _unreadable(image, dpi: float) -> str | None:
    """Why Tesseract would read nothing on the page image, or None when it holds marks to read:
    ``"blank"`` when nothing stands out of the paper's own noise (by :data:`OCR_MIN_CONTRAST`
    levels and :data:`OCR_CONTRAST_NOISE_RATIO` times the paper's noise), marks too small when
    fewer pixels stand out than a small letter has. Judged on the page's own levels, not a fixed
    threshold: light-grey text on white, or dark text on grey paper, is read."""
    darkest, lightest = image.getextrema()
    if lightest - darkest <= 2:
        return "blank"
    ink, paper, noise, pixels = _levels(image)
    contrast = abs(paper - ink)
    if contrast < OCR_MIN_CONTRAST or contrast < OCR_CONTRAST_NOISE_RATIO * noise:
        return "blank"
    if pixels < OCR_BLANK_DARK_PIXELS * (dpi / 300.0) ** 2:
        return "marks too small to read"
    return None


def _normalised(image):
    """The page image with its ink made black and its paper white when its contrast is low
    (faint text, grey paper: Tesseract's own thresholding reads neither); a page of ordinary
    contrast (every shared scan) is handed over as it is."""
    ink, paper, _noise, _pixels = _levels(image)
    if abs(paper - ink) >= OCR_STRETCH_BELOW:
        return image
    scale = 255.0 / (paper - ink)
    return image.point([max(0, min(255, round((v - ink) * scale))) for v in range(256)])


def _pgm(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PPM")  # a grayscale image is written as PGM: no compression to spend time on
    return buffer.getvalue()


def _tesseract(command: str, image: bytes, lang: str, dpi: float, *options: str) -> tuple[str, float]:
    """Tesseract's TSV for one page image, and the seconds it took. Sauvola's local threshold
    (``thresholding_method=2``) read the shared scans better than the global one: the book page's
    illustration gave no junk words, the brochure 0.98% character error instead of 1.07%."""
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    started = time.perf_counter()
    done = subprocess.run([command, "stdin", "stdout", "--dpi", str(max(1, round(dpi))), "-l", lang,
                           "-c", "thresholding_method=2", *options, "tsv"],
                          input=image, capture_output=True, env=env, timeout=OCR_PAGE_TIMEOUT_S, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OcrError(f"Tesseract failed (exit {done.returncode}{': ' + message[-1][:160] if message else ''})")
    return done.stdout.decode("utf-8", "replace"), seconds


def _read_page(command: str, image, lang: str, dpi: float, number: int) -> tuple[OcrPage, float]:
    """One page image read by Tesseract: its words and text, and the seconds Tesseract took. A
    large initial opening a line (a drop cap: "W" + "E went" read as "Wer went") is read again
    alone, as one line."""
    tsv, seconds = _tesseract(command, _pgm(image), lang, dpi)
    page = parse_tsv(number, tsv, image.width, image.height, dpi)
    changed = False
    for i in _tall_initials(page):
        _, box, conf, line = page.words[i]
        pad = max(2, round(10 * dpi / 300))
        crop = image.crop((max(0, box[0] - pad), max(0, box[1] - pad), min(image.width, box[2] + pad),
                           min(image.height, box[3] + pad)))
        framed = _framed(crop, pad * 2)
        again, more = _tesseract(command, _pgm(framed), lang, dpi, "--psm", "7")
        seconds += more
        read = [cells[11].strip() for cells in (r.split("\t") for r in again.splitlines()[1:])
                if len(cells) >= 12 and cells[0] == "5" and cells[11].strip()]
        if len(read) == 1 and read[0].isalpha():
            page.words[i] = (read[0], box, conf, line)
            changed = True
    if changed:
        _set_text(page)
    return page, seconds


def _framed(image, border: int):
    from PIL import ImageOps

    return ImageOps.expand(image, border=border, fill=255)


def _tall_initials(page: OcrPage) -> list[int]:
    """Words that open a line of three or more and stand at least 1.6 times as tall as the median of the others."""
    by_line: dict[int, list[int]] = {}
    for i, word in enumerate(page.words):
        by_line.setdefault(word[3], []).append(i)
    tall = []
    for members in by_line.values():
        if len(members) < 3:
            continue
        first, rest = members[0], members[1:]
        heights = sorted(page.words[i][1][3] - page.words[i][1][1] for i in rest)
        median = heights[len(heights) // 2]
        box = page.words[first][1]
        if median > 0 and box[3] - box[1] >= 1.6 * median and len(page.words[first][0]) <= 4:
            tall.append(first)
    return tall


def parse_tsv(number: int, tsv: str, width: int, height: int, dpi: float) -> OcrPage:
    """The words of Tesseract's TSV output (level 5 rows with text), and the page's text
    (:func:`page_text`)."""
    page = OcrPage(number, width, height, dpi)
    line_keys: dict[tuple[int, int, int], int] = {}
    paragraph_of: list[tuple[int, int]] = []
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5":
            continue
        word = cells[11].strip()
        if not word:
            continue
        try:
            block, par, line = int(cells[2]), int(cells[3]), int(cells[4])
            left, top, w, h = (int(c) for c in cells[6:10])
            conf = float(cells[10])
        except ValueError:
            continue
        key = (block, par, line)
        if key not in line_keys:
            line_keys[key] = len(line_keys)
            paragraph_of.append((block, par))
        page.words.append((word, (left, top, left + w, top + h), conf, line_keys[key]))
    page.paragraphs = paragraph_of
    _set_text(page)
    return page


# Marks a reader sets against the word before them (Tesseract reads a typesetter's thin space
# before ";" as a word break: "door ;"), and glyphs an opening double quote is misread as
# ("‘Who dah?”", "** Who dah?”" for "“Who dah?”").
_CLOSING = frozenset(".,;:!?)]}\u00bb\u201d\u2019")
_OPENING_LOOKALIKES = "\u2018`*\u201a,\u201e\"\u201c"


def _closing_only(word: str) -> bool:
    return all(c in _CLOSING for c in word)


def _fix_opening_quote(words: list[str], i: int) -> str:
    """Word ``i``, with a misread opening quote made a double one when the next closing quote is double."""
    word = words[i]
    stripped = word.lstrip(_OPENING_LOOKALIKES)
    lead = word[:len(word) - len(stripped)]
    if not lead or not stripped or lead == "\u201c":
        return word
    for k in range(i, min(len(words), i + 80)):  # the next closing quote decides
        body = (stripped if k == i else words[k]).rstrip(".,;:!?)]")
        if body.endswith(("\u201d", '"')):
            return "\u201c" + stripped
        if body.endswith("\u2019") and k > i:
            return word
    return word


def page_text(words: Sequence[str], lines: Sequence[int], paragraph_of: Sequence[tuple[int, int]]
              ) -> tuple[str, list[str]]:
    """A page's text from its words in reading order, and the words as corrected.

    Words are joined by spaces, lines by line breaks, paragraphs and blocks that follow the end
    of a sentence by a blank line (see :func:`_new_paragraph`); a mark that
    closes (``;`` ``,`` ``.`` ``”``) joins the word before it and a lone opening quote the word
    after it, and an opening double quote misread as a single one or as asterisks is put right
    when its closing quote is a double one (in the text and in the word that carries it)."""
    corrected = list(words)
    merged: list[str] = []
    merged_lines: list[int] = []
    first_word: list[int] = []  # the first word of each merged token
    pending_open, pending_at = "", -1
    for i, (word, line) in enumerate(zip(words, lines, strict=True)):
        if merged and merged_lines[-1] == line and _closing_only(word) and not pending_open:
            merged[-1] += word
            continue
        if len(word) <= 3 and all(c in _OPENING_LOOKALIKES for c in word):
            pending_open, pending_at = pending_open + word, (pending_at if pending_open else i)
            continue
        merged.append(pending_open + word)
        merged_lines.append(line)
        first_word.append(pending_at if pending_open else i)
        pending_open = ""
    if pending_open:
        merged.append(pending_open)
        merged_lines.append(lines[-1] if lines else 0)
        first_word.append(pending_at)
    fixed = [_fix_opening_quote(merged, i) for i in range(len(merged))]
    for token, was, at in zip(fixed, merged, first_word, strict=True):
        if token != was:  # the word that carried the misread quote carries the right one now
            word = corrected[at]
            lone = len(word) <= 3 and all(c in _OPENING_LOOKALIKES for c in word)
            corrected[at] = "\u201c" if lone else "\u201c" + word.lstrip(_OPENING_LOOKALIKES)
    parts: list[str] = []
    for i, word in enumerate(fixed):
        if i:
            if merged_lines[i] == merged_lines[i - 1]:
                parts.append(" ")
            else:
                parts.append("\n\n" if _new_paragraph(paragraph_of[merged_lines[i - 1]], paragraph_of[merged_lines[i]],
                                                     fixed[i - 1]) else "\n")
        parts.append(word)
    return "".join(parts), corrected


def _new_paragraph(before: tuple[int, int], after: tuple[int, int], last_word: str) -> bool:
    """Whether a blank line goes between two lines: another paragraph or block of the page after
    a line that ends a sentence. Tesseract often starts a new paragraph or block at a short line,
    a drop cap or a column's end in the middle of a sentence ("It is" / "extremely powerful"),
    which stays one sentence here."""
    return before != after and last_word.rstrip(_TRAILING_CLOSERS).endswith(_SENTENCE_ENDS)


_SENTENCE_ENDS = (".", "!", "?", ":")
_TRAILING_CLOSERS = "\"'\u201d\u2019)]"


def _set_text(page: OcrPage) -> None:
    """The page's text from its words, and the words as :func:`page_text` corrected them."""
    page.text, corrected = page_text([w[0] for w in page.words], [w[3] for w in page.words], page.paragraphs)
    page.words = [(text, *rest) for text, (_, *rest) in zip(corrected, page.words, strict=True)]


def ocr_pages(
    data: bytes,
    pages: Sequence[int],
    *,
    lang: str = "eng",
    dpi: float = OCR_DPI,
    threads: int | None = None,
    info: TesseractInfo | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> OcrRun:
    """Read ``pages`` (1-based) of the PDF ``data`` with Tesseract, ``threads`` pages at a time.

    ``on_page(done, total)`` is called once at the start and after each page. A page Tesseract
    fails on is reported in ``failed``; raises :class:`OcrError` only when Tesseract is missing.
    """
    import pypdfium2 as pdfium

    info = info or find_tesseract()
    if info is None:
        raise OcrError(f"OCR is not available: Tesseract is not installed; {INSTALL_HINT}")
    started = time.perf_counter()
    threads = max(1, int(threads or ocr_threads()))
    run = OcrRun(threads=min(threads, max(len(pages), 1)))
    total = len(pages)
    done = 0
    if on_page is not None:
        on_page(0, total)

    def tick() -> None:
        nonlocal done
        done += 1
        if on_page is not None:
            on_page(done, total)

    def collect(item: tuple[int, Future]) -> None:
        number, future = item
        try:
            page, seconds = future.result()
        except (OcrError, OSError, subprocess.SubprocessError) as exc:
            run.failed[number] = str(exc) if isinstance(exc, OcrError) else f"Tesseract failed ({type(exc).__name__})"
        else:
            run.tesseract_seconds += seconds
            run.pages[number] = page
        tick()

    document = pdfium.PdfDocument(data)
    try:
        with ThreadPoolExecutor(max_workers=run.threads, thread_name_prefix="rag-core-ocr") as pool:
            waiting: deque = deque()
            for number in pages:
                if _looks_empty(document, number):
                    run.skipped[number] = _no_marks_reason(document, number, "blank")
                    tick()
                    continue
                image, used = _render(document, number, dpi)
                if image is None:
                    run.skipped[number] = used
                    tick()
                    continue
                why = _unreadable(image, used)
                if why is not None:
                    run.skipped[number] = _no_marks_reason(document, number, why)
                    tick()
                    continue
                future = pool.submit(_read_page, info.command, _normalised(image), lang, used, number)
                del image
                waiting.append((number, future))
                # at most one rendered page waits for a free Tesseract: memory stays a few page images
                while len(waiting) > run.threads or (waiting and waiting[0][1].done()):
                    collect(waiting.popleft())
            while waiting:
                collect(waiting.popleft())
        for number in [n for n, page in run.pages.items() if not page.words]:
            broken = _no_marks_reason(document, number, "")  # nothing read: a half-decoded image, say
            if broken:
                del run.pages[number]
                run.skipped[number] = broken
    finally:
        document.close()
    run.seconds = time.perf_counter() - started
    return run


def summary(run: OcrRun, info: TesseractInfo, lang: str, mode: str) -> dict:
    """What a document's record says of its OCR: pages read, mean confidence, pages under the floor."""
    confidences = [w[2] for p in run.pages.values() for w in p.words if w[2] >= 0]
    low = sorted(n for n, p in run.pages.items()
                 if p.mean_confidence is not None and p.mean_confidence < OCR_LOW_CONFIDENCE)
    return {
        "pages": sorted(run.pages), "mean_confidence": round(sum(confidences) / len(confidences), 1)
        if confidences else None, "low_confidence_pages": low, "engine": info.engine, "lang": lang, "mode": mode,
        "dpi": OCR_DPI, "skipped": {str(n): why for n, why in sorted(run.skipped.items())},
        "failed": {str(n): why for n, why in sorted(run.failed.items())},
        "seconds": round(run.seconds, 3), "tesseract_seconds": round(run.tesseract_seconds, 3),
        "threads": run.threads,
    }


def layer(run: OcrRun, info: TesseractInfo, lang: str) -> dict:
    """The OCR layer of a document: each page's words with their boxes and confidences."""
    return {"format": LAYER_FORMAT, "version": LAYER_VERSION, "engine": info.engine, "lang": lang,
            "pages": {str(n): p.layer() for n, p in sorted(run.pages.items())}}
