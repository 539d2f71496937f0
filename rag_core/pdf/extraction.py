"""PDF text extraction with pypdf, and page previews with pypdfium2.

``extract_pdf`` turns a PDF into cleaned per-page text (:class:`~rag_core.text.chunking.PageText`)
and never raises for bad *content*: every problem with the file (not a PDF, encrypted,
damaged, too large, empty, a scan without a text layer, text that is junk) is reported
through :attr:`PdfExtraction.status` and a human sentence in :attr:`PdfExtraction.reason`.
Pages without a usable text layer are read by OCR (:mod:`rag_core.pdf.ocr`) when Tesseract is
installed: a scan then comes back ``ok``, its words with their boxes in ``ocr_layer``.
Only internal failures such as ``MemoryError`` propagate, and ``OSError`` when a path
given by the caller cannot be read.

pypdf is imported lazily so that the rest of the package works without it.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
import threading
import unicodedata
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from rag_core.pdf.ocr import OCR_MODES
from rag_core.safe_files import over_limit_text, size_text
from rag_core.settings import (
    MAX_PDF_BYTES,
    MAX_PDF_PAGES,
    OCR_LANG,
    OCR_LOW_CONFIDENCE,
    PDF_MIN_CHARS_TO_JUDGE_PAGE,
    PDF_MIN_LETTER_SHARE,
    PDF_MIN_WORDLIKE_SHARE,
)
from rag_core.text.chunking import PageText
from rag_core.text.hyphens import resolve_line_hyphens

__all__ = [
    "STATUSES",
    "PdfExtraction",
    "clean_extracted_text",
    "extract_pdf",
    "render_page_png",
]

STATUSES = (
    "ok",
    "encrypted",
    "damaged",
    "not_pdf",
    "no_text",
    "unreadable_text",
    "too_large",
    "empty",
)

# The %PDF- marker must appear near the start (Acrobat accepts it within the first 1024 bytes).
_HEADER_WINDOW = 1024



@dataclass
class PdfExtraction:
    """The outcome of reading one PDF."""

    source: str
    status: str
    reason: str
    pages: list[PageText] = field(default_factory=list)
    n_pages: int = 0
    sha256: str = ""
    warnings: list[str] = field(default_factory=list)
    # Bibliographic metadata guessed by rag_core.pdf.metadata: title, authors (names), year, doi, arxiv_id,
    # venue (None when unsure) and origin (where each field came from).
    metadata: dict = field(default_factory=lambda: {"title": None, "authors": None, "year": None})
    # OCR (rag_core.pdf.ocr): what was read (pages, mean confidence, low-confidence pages, engine,
    # language; None when no page was), each page's words with their boxes ({"pages": {"1": ...}}),
    # and, from a first pass with ocr="defer", the pages a second pass must read.
    ocr: dict | None = None
    ocr_layer: dict | None = None
    ocr_needed: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def text(self) -> str:
        """All page texts joined by blank lines."""
        return "\n\n".join(p.text for p in self.pages)


# --------------------------------------------------------------------------- cleaning

_LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
}
_LIGATURE_TABLE = str.maketrans(_LIGATURES)
_LIGATURE_RE = re.compile("[" + "".join(_LIGATURES) + "]")
# C0/C1 control characters except \t and \n (\r is turned into \n before this runs).
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Spaces and tabs, including no-break and other fixed-width Unicode spaces: every run becomes one
# space. Written as "a run of two or more, or one that is not a plain space" so that the single
# spaces between words (most matches) are not replaced by themselves; the output is the same.
_SPACE_CLASS = r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]"
_SPACES_RE = re.compile(_SPACE_CLASS + r"{2,}|[\t\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_MANY_NEWLINES_RE = re.compile(r"\n{3,}")
# pypdf writes small-caps glyphs it cannot map as their glyph names: "R/e.sc /t.sc /r.sc/o.sc"
# for "RETRO" (seen in the RETRO paper). Turn each into the capital letter; a single space
# between two such glyphs is an artefact of glyph spacing, not a word break.
_SMALL_CAPS_GLYPH_RE = re.compile(r"/([A-Za-z](?:_[A-Za-z])*)\.sc(?: (?=/[A-Za-z](?:_[A-Za-z])*\.sc))?")
# Likewise the bracket glyphs of the custom-encoded MathematicalPi fonts in AIP papers come out
# as glyph names ("Cr/MgO/H20849001/H20850" for "Cr/MgO(001)"; poppler shows them as CJK
# characters). Only these four are mapped: they are certain from context.
_MATH_PI_BRACKETS = {"20849": "(", "20850": ")", "20851": "[", "20852": "]"}
_MATH_PI_BRACKET_RE = re.compile(r"/H(20849|20850|20851|20852)")
# A letter, a soft hyphen, a line break, and the rest of the word on the next line.
_SOFT_HYPHEN_BREAK_RE = re.compile(r"([^\W\d_])\u00ad[ \t]*\n[ \t]*([^\W\d_]\S*)[ \t]*(\n?)")
# A word ending in a letter and a hyphen at the end of a line, and a word on the next line.
# The word is matched from its start only ("(?<!\S)"): the hyphen must end its run of
# non-spaces, so a match can only begin where the run begins, and the scan no longer retries
# from every character of every word (it was the slowest pass). Same matches, same output.
_HYPHEN_BREAK_RE = re.compile(r"(?<!\S)(\S*)([^\W\d_])[-\u2010][ \t]*\n[ \t]*([^\W\d_]\S*)[ \t]*(\n?)")


def _join_broken_word(match: re.Match) -> str:
    head, tail, newline = match.group(1), match.group(2), match.group(3)
    # Move the end of the word up to the first line and keep the line break after it,
    # so the number of lines stays the same.
    at_end = match.end() == len(match.string)
    return head + tail + ("" if at_end and not newline else "\n")


def _join_hyphen_break(match: re.Match) -> str:
    prefix, letter, tail, newline = match.groups()
    if not tail[0].islower():
        return match.group(0)
    # A compound already hyphenated before the break ("left-to-" + "right") keeps its hyphen.
    hyphen = "-" if ("-" in prefix or "\u2010" in prefix) else ""
    at_end = match.end() == len(match.string)
    return prefix + letter + hyphen + tail + ("" if at_end and not newline else "\n")


def clean_extracted_text(text: str, *, line_hyphens: str = "join") -> str:
    """Tidy text extracted from a PDF page.

    NFC-normalises (not NFKC, so math symbols survive), drops control characters other
    than newline and tab, expands the Latin ligatures (ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ), joins words hyphenated
    across a line break when a lowercase letter follows (``"retrie-\\nval"`` becomes
    ``"retrieval"``; ``"1990-\\n2000"`` and ``"state-of-the-\\nArt"`` stay as they are), removes
    soft hyphens, collapses runs of spaces and tabs, strips trailing spaces on lines and
    collapses three or more line breaks to two. Single line breaks are kept. Also turns two
    kinds of unmapped glyph names pypdf leaves in the text back into characters: small caps
    (``"R/e.sc /t.sc /r.sc/o.sc"`` becomes ``"RETRO"``) and the MathematicalPi brackets of AIP
    papers (``"/H20849001/H20850"`` becomes ``"(001)"``). ``line_hyphens="keep"`` leaves the
    line-end hyphens before a lowercase letter for a document-wide pass
    (:func:`rag_core.text.hyphens.resolve_line_hyphens`: kept where the hyphen is the word's).
    """
    if not text:
        return ""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL_RE.sub("", text)
    # Each pass below runs only when its pattern can occur (measured: the passes took ~1.5 ms
    # a page before, mostly on pages they did not change); the output is identical
    # (tests/pdf/test_pdf_digests.py pins every page of the shared PDFs).
    if _LIGATURE_RE.search(text):
        text = text.translate(_LIGATURE_TABLE)
    if ".sc" in text:
        text = _SMALL_CAPS_GLYPH_RE.sub(lambda m: m.group(1).replace("_", "").upper(), text)
    if "/H208" in text:
        text = _MATH_PI_BRACKET_RE.sub(lambda m: _MATH_PI_BRACKETS[m.group(1)], text)
    text = _SPACES_RE.sub(" ", text)
    # Runs of spaces and tabs are single spaces now: trailing white space is " " before a line break.
    text = text.replace(" \n", "\n")
    text = text.removesuffix(" ")
    if "\u00ad" in text:
        text = _SOFT_HYPHEN_BREAK_RE.sub(_join_broken_word, text)
        text = text.replace("\u00ad", "")
    if line_hyphens == "join" and ("-" in text or "\u2010" in text):
        text = _HYPHEN_BREAK_RE.sub(_join_hyphen_break, text)
    if "\n\n\n" in text:
        text = _MANY_NEWLINES_RE.sub("\n\n", text)
    return text.strip()


# --------------------------------------------------------------------------- junk detection

_TOKEN_RE = re.compile(r"\S+")
_VOWELS = frozenset("aeiouyAEIOUYàáâãäåèéêëìíîïòóôõöùúûüýÿÀÁÂÃÄÅÈÉÊËÌÍÎÏÒÓÔÕÖÙÚÛÜÝæÆøØœŒ")


def _looks_like_word(token: str) -> bool:
    letters = [c for c in token if c.isalpha()]
    if not letters or len(letters) < 0.6 * len(token):
        return False
    # Scripts beyond Latin (Greek, Cyrillic, CJK, ...) have no use for the vowel test.
    return any(c in _VOWELS or ord(c) > 0x24F for c in letters)


# Tokens left out of the quality measure: numbers (tables) and TOC leader dots.
_NEUTRAL_TOKEN_RE = re.compile(r"[(\[]?[-+\u2212\u00b1]?\d+(?:[.,:]\d+)*%?[)\]]?[.,;:]?|[.\u2026\u00b7]+")


_token_stats_cache: dict[str, tuple[int, int, int] | None] = {}
_TOKEN_STATS_CACHE_LIMIT = 200_000


def _token_stats(token: str) -> tuple[int, int, int] | None:
    """``(characters, letters, 1 if word-like else 0)`` of a token; None for a neutral token.

    Memoised: the words of a document repeat, and this ran twice per page before.
    """
    stats = _token_stats_cache.get(token)
    if stats is None and token not in _token_stats_cache:
        if _NEUTRAL_TOKEN_RE.fullmatch(token):
            stats = None
        else:
            stats = (len(token), sum(c.isalpha() for c in token), int(_looks_like_word(token)))
        if len(_token_stats_cache) >= _TOKEN_STATS_CACHE_LIMIT:
            _token_stats_cache.clear()
        _token_stats_cache[token] = stats
    return stats


def _quality_counts(text: str) -> tuple[int, int, int, int]:
    """``(non-space chars, letters, word-like tokens, tokens)`` over the non-neutral tokens.

    The counts add up over pages (a page break is white space), so a document's shares are
    its pages' sums.
    """
    n_chars = letters = wordlike = n_tokens = 0
    for token in text.split():  # the same tokens as re.findall(r"\S+")
        stats = _token_stats(token)
        if stats is not None:
            n_chars += stats[0]
            letters += stats[1]
            wordlike += stats[2]
            n_tokens += 1
    return n_chars, letters, wordlike, n_tokens


def _shares(counts: tuple[int, int, int, int]) -> tuple[int, float, float]:
    n_chars, letters, wordlike, n_tokens = counts
    if not n_tokens:
        return 0, 0.0, 0.0
    return n_chars, letters / n_chars, wordlike / n_tokens


def _text_quality(text: str) -> tuple[int, float, float]:
    """``(non-space chars, share of letters among them, share of word-like tokens)``.

    Numbers and runs of leader dots are left out, so tables and tables of contents are
    judged on their words.
    """
    return _shares(_quality_counts(text))


def _is_junk(text: str) -> bool:
    return _is_junk_shares(_text_quality(text))


def _is_junk_shares(quality: tuple[int, float, float]) -> bool:
    _, letter_share, wordlike_share = quality
    return letter_share < PDF_MIN_LETTER_SHARE or wordlike_share < PDF_MIN_WORDLIKE_SHARE


def _has_real_text(text: str) -> bool:
    """Anything beyond white space and digits (a stray page number is not a text layer)."""
    return any(not (c.isspace() or c.isdigit()) for c in text)


# --------------------------------------------------------------------------- pypdf quieting

_quiet_lock = threading.Lock()
_quiet_depth = 0
_saved_level = logging.NOTSET


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """Keep pypdf's log records and ``warnings`` away from the user while it runs.

    The "pypdf" logger is raised to CRITICAL (pypdf logs recoverable problems of a file at
    WARNING and sometimes ERROR level; those become statuses and warnings of the result
    here). Reference counted so that overlapping calls in threads restore the level once.
    """
    global _quiet_depth, _saved_level
    logger = logging.getLogger("pypdf")
    with _quiet_lock:
        if _quiet_depth == 0:
            _saved_level = logger.level
            logger.setLevel(logging.CRITICAL)
        _quiet_depth += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0:
                logger.setLevel(_saved_level)


# --------------------------------------------------------------------------- extraction


def _short_error(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(message) > 160:
        message = message[:157] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _read_source(
    source: str | Path | bytes | BinaryIO, max_bytes: int
) -> tuple[bytes | None, int | None, str]:
    """``(data, size, default name)``; ``data`` is None when the input is over ``max_bytes``."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        return (data if len(data) <= max_bytes else None), len(data), "document.pdf"
    if isinstance(source, (str, Path)):
        path = Path(source)
        size = path.stat().st_size
        if size > max_bytes:
            return None, size, path.name
        return path.read_bytes(), size, path.name
    # A binary file object: read at most one byte past the limit.
    data = source.read(max_bytes + 1)
    if isinstance(data, str):
        raise TypeError("extract_pdf needs a binary file object (opened with 'rb')")
    stream_name = getattr(source, "name", None)
    name = Path(stream_name).name if isinstance(stream_name, str) and stream_name else "document.pdf"
    if len(data) > max_bytes:
        return None, None, name  # its size is not known: it was read to one byte past the limit
    return data, len(data), name


def _too_large_text(size: int | None, max_bytes: int) -> str:
    """Why a file over ``max_bytes`` was refused, the two sizes never printed alike ("50.0 MiB, over
    the limit of 50.0 MiB"); ``size`` None: a stream read only to one byte past the limit."""
    if size is None:
        return f"The file is larger than the limit of {size_text(max_bytes)} ({max_bytes:,} bytes)."
    return f"The file is {over_limit_text(size, max_bytes)}."


def extract_pdf(
    source: str | Path | bytes | BinaryIO,
    *,
    name: str | None = None,
    max_bytes: int = MAX_PDF_BYTES,
    max_pages: int = MAX_PDF_PAGES,
    on_page: Callable[[int, int], None] | None = None,
    ocr: str = "auto",
    ocr_lang: str = OCR_LANG,
    ocr_threads: int | None = None,
    on_ocr_page: Callable[[int, int], None] | None = None,
) -> PdfExtraction:
    """Extract cleaned per-page text from a PDF.

    ``source`` is a path, the file's bytes or a binary file object; ``name`` is the display
    name (default: the file name). Problems with the file are reported in ``status`` and
    ``reason``, never raised. ``sha256`` is empty only when the file was refused for its size
    without being read. ``on_page(done, total)`` is called once the page count is known
    and after each page.

    ``ocr``: "auto" reads the pages without a usable text layer with Tesseract (a scan, a font
    without a Unicode mapping), "force" reads every page, "off" none; "defer" reads none but
    lists the pages "auto" would read in ``ocr_needed`` (an ingest's first pass, so the files
    with a text layer are searchable before the scans are read). ``ocr_lang``: Tesseract's
    languages (``eng+deu``); ``ocr_threads``: pages read at once (default: one per core);
    ``on_ocr_page(done, total)`` follows the pages read by OCR. Without Tesseract a scan stays
    ``no_text``, with the line that installs it.
    """
    if ocr not in (*OCR_MODES, "defer"):
        raise ValueError(f"ocr must be one of {', '.join(OCR_MODES)}, got {ocr!r}")
    data, size, default_name = _read_source(source, max_bytes)
    display = name or default_name

    def result(status: str, reason: str, **kwargs) -> PdfExtraction:
        return PdfExtraction(source=display, status=status, reason=reason, **kwargs)

    if data is None:
        return result("too_large", _too_large_text(size, max_bytes))
    sha256 = hashlib.sha256(data).hexdigest()
    if not data.strip():
        what = "0 bytes" if not data else f"{_plural(len(data), 'byte')} of white space only"
        return result("empty", f"The file is empty ({what}): there is no PDF to read.", sha256=sha256)
    if b"%PDF-" not in data[:_HEADER_WINDOW]:
        return result(
            "not_pdf", "This is not a PDF file (it does not start with the %PDF header).", sha256=sha256
        )
    options = _OcrOptions(ocr, ocr_lang or OCR_LANG, ocr_threads, on_ocr_page)
    with _quiet_pypdf():
        return _extract(data, display, sha256, max_pages, on_page, options)


@dataclass
class _OcrOptions:
    mode: str = "off"
    lang: str = OCR_LANG
    threads: int | None = None
    on_page: Callable[[int, int], None] | None = None


def _extract(data: bytes, display: str, sha256: str, max_pages: int,
             on_page: Callable[[int, int], None] | None = None,
             options: _OcrOptions | None = None) -> PdfExtraction:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    def result(status: str, reason: str, **kwargs) -> PdfExtraction:
        return PdfExtraction(source=display, status=status, reason=reason, sha256=sha256, **kwargs)

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
    except MemoryError:
        raise
    except Exception as exc:
        return result("damaged", "The PDF is damaged or incomplete (a truncated download?) and cannot be opened "
                                 f"({_short_error(exc)}).")

    if reader.is_encrypted:
        try:
            decrypted = bool(reader.decrypt(""))
        except MemoryError:
            raise
        except DependencyError:
            return result(
                "encrypted",
                "The PDF is encrypted with AES, which needs the 'cryptography' package to open; "
                "install it or remove the protection first.",
            )
        except Exception as exc:
            return result("encrypted", f"The PDF is encrypted and could not be opened ({_short_error(exc)}).")
        if not decrypted:
            return result(
                "encrypted",
                "The PDF is password-protected; remove the password (e.g. save an unprotected copy) "
                "and add it again.",
            )

    try:
        n_pages = len(reader.pages)
    except MemoryError:
        raise
    except Exception as exc:
        return result("damaged", f"The PDF is damaged: its page list cannot be read ({_short_error(exc)}).")
    if n_pages == 0:
        return result("empty", "The PDF has no pages.")
    if n_pages > max_pages:
        return result(
            "too_large", f"The PDF has {n_pages} pages, over the limit of {max_pages}.", n_pages=n_pages
        )

    notes: list[str] = []
    labels = _page_labels(reader, n_pages, notes)

    texts: list[str] = []
    failed: list[int] = []
    first_error = ""
    if on_page is not None:
        on_page(0, n_pages)
    for index in range(n_pages):
        try:
            raw = reader.pages[index].extract_text() or ""
        except MemoryError:
            raise
        except Exception as exc:
            failed.append(index + 1)
            first_error = first_error or _short_error(exc)
            raw = ""
        texts.append(clean_extracted_text(raw, line_hyphens="keep"))
        if on_page is not None:
            on_page(index + 1, n_pages)
    # Line-end hyphens joined or kept by the document's own words (issue 28: "knowledgeintensive").
    texts = resolve_line_hyphens(texts)

    if len(failed) == n_pages:
        return result("damaged", f"The PDF is damaged: no page could be read ({first_error}).",
                      pages=[PageText(i + 1, t, labels[i] if labels else None) for i, t in enumerate(texts)],
                      n_pages=n_pages, warnings=notes)
    if failed:
        shown = ", ".join(map(str, failed[:10])) + (", ..." if len(failed) > 10 else "")
        notes.append(
            f"{_plural(len(failed), 'page')} could not be read and {'were' if len(failed) > 1 else 'was'} "
            f"left empty (page {shown}; {first_error})"
        )

    # Quality counts once per page; the document's are the sums over its readable pages
    # (the same tokens as the readable pages joined by line breaks).
    page_counts = [_quality_counts(t) for t in texts]
    ocr = _read_by_ocr(data, texts, page_counts, failed, options or _OcrOptions(), notes)
    if ocr.read:
        page_counts = [_quality_counts(t) for t in texts]
    pages = [PageText(i + 1, t, labels[i] if labels else None) for i, t in enumerate(texts)]

    def done(status: str, reason: str) -> PdfExtraction:
        return result(status, reason, pages=pages, n_pages=n_pages, warnings=notes, ocr=ocr.summary,
                      ocr_layer=ocr.layer, ocr_needed=ocr.needed)

    readable = [t for t in texts if _has_real_text(t)]
    readable_counts = [c for c, t in zip(page_counts, texts, strict=False) if _has_real_text(t)]
    if not readable:
        if ocr.too_large:
            return done("too_large", f"The PDF has no text layer, and {ocr.too_large}.")
        return done("no_text", _no_text_reason(ocr))
    if _is_junk_shares(_shares(tuple(map(sum, zip(*readable_counts, strict=False))))):
        return done(
            "unreadable_text",
            "The PDF's text layer is unreadable (it extracts as symbols, not words; probably a font "
            f"without a Unicode mapping). {_ocr_advice(ocr)}",
        )

    empty = [i + 1 for i, t in enumerate(texts) if not _has_real_text(t) and i + 1 not in failed]
    if empty:
        notes.append(f"{_plural(len(empty), 'page')} {'have' if len(empty) > 1 else 'has'} no text layer")
    junk_pages = [
        i + 1
        for i, counts in enumerate(page_counts)
        if counts[0] >= PDF_MIN_CHARS_TO_JUDGE_PAGE and _is_junk_shares(_shares(counts))
    ]
    if junk_pages:
        notes.append(
            f"{_plural(len(junk_pages), 'page')} {'have' if len(junk_pages) > 1 else 'has'} text that looks "
            f"unreadable (page {', '.join(map(str, junk_pages[:10]))}{', ...' if len(junk_pages) > 10 else ''})"
        )
    extraction = done("ok", f"{_plural(n_pages, 'page')}{ocr_reason(ocr.summary)}")
    extraction.metadata = _bibliographic_metadata(reader, texts, display,
                                                  scanned=1 in ((ocr.summary or {}).get("pages") or []))
    return extraction


# --------------------------------------------------------------------------- OCR


@dataclass
class _OcrOutcome:
    """What OCR did to a document's pages (see :func:`_read_by_ocr`)."""

    read: bool = False
    summary: dict | None = None
    layer: dict | None = None
    needed: list[int] = field(default_factory=list)
    unavailable: str = ""  # why pages that needed OCR were not read: "missing", "off"
    too_large: str = ""
    blank: bool = False


def _read_by_ocr(data: bytes, texts: list[str], page_counts: list, failed: list[int], options: _OcrOptions,
                 notes: list[str]) -> _OcrOutcome:
    """Read the pages without a usable text layer by OCR (their text replaces ``texts`` in place)."""
    from rag_core.pdf import ocr as engine

    outcome = _OcrOutcome()
    readable = [c for c, t in zip(page_counts, texts, strict=False) if _has_real_text(t)]
    all_junk = bool(readable) and _is_junk_shares(_shares(tuple(map(sum, zip(*readable, strict=False)))))
    needs_ocr = not readable or all_junk
    if options.mode == "off":
        outcome.unavailable = "off" if needs_ocr else ""
        return outcome
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        notes.append(f"the pages could not be checked for OCR ({_short_error(exc)})")
        return outcome
    try:
        wanted = engine.pages_to_ocr(
            document, texts, "force" if options.mode == "force" else "auto", has_text=_has_real_text,
            is_junk_page=lambda i: page_counts[i][0] >= PDF_MIN_CHARS_TO_JUDGE_PAGE
            and _is_junk_shares(_shares(page_counts[i])), all_junk=all_junk)
    finally:
        document.close()
    wanted = [n for n in wanted if n not in failed or options.mode == "force"]
    if not wanted:
        outcome.blank = needs_ocr  # nothing drawn on the pages without text
        return outcome
    info = engine.find_tesseract()
    if info is None:
        outcome.unavailable = "missing"
        notes.append(f"{_plural(len(wanted), 'page')} need{'s' if len(wanted) == 1 else ''} OCR, which is not "
                     f"available: {engine.INSTALL_HINT}")
        return outcome
    if options.mode == "defer":
        outcome.needed = wanted
        return outcome
    lang = options.lang
    if any(p not in info.languages for p in lang.split("+")):
        notes.append(f"the OCR language {lang!r} is not installed; read with eng")
        lang = OCR_LANG
    run = engine.ocr_pages(data, wanted, lang=lang, threads=options.threads, info=info, on_page=options.on_page)
    for number, page in list(run.pages.items()):
        text = clean_extracted_text(page.text)
        if _has_real_text(text):
            texts[number - 1] = text
        else:  # nothing read: the page keeps its text layer (if any), and has no OCR words to mark
            del run.pages[number]
            run.skipped[number] = "no text found"
    outcome.read = bool(run.pages)
    outcome.summary = engine.summary(run, info, lang, options.mode)
    outcome.layer = engine.layer(run, info, lang) if run.pages else None
    too_large = {n: why for n, why in run.skipped.items() if why.startswith("too large")}
    if too_large:
        first = min(too_large)
        outcome.too_large = f"page {first} is {too_large[first]}"
        notes.append(f"{_plural(len(too_large), 'page')} could not be read by OCR (page {first}: {too_large[first]})")
    if run.failed:
        first = min(run.failed)
        notes.append(f"OCR failed on {_plural(len(run.failed), 'page')} (page {first}: {run.failed[first]})")
    low = outcome.summary["low_confidence_pages"]
    if low:
        notes.append(f"OCR is unsure of {_plural(len(low), 'page')} (mean word confidence under "
                     f"{OCR_LOW_CONFIDENCE}: page {', '.join(map(str, low[:10]))}{', ...' if len(low) > 10 else ''}); "
                     "check its text against the page image")
    return outcome


def ocr_reason(summary: dict | None) -> str:
    """``"; ocr: 2 pages, mean confidence 93"`` (and the pages under the floor), or ``""``."""
    if not summary or not summary.get("pages"):
        return ""
    text = f"; ocr: {_plural(len(summary['pages']), 'page')}"
    if summary.get("mean_confidence") is not None:
        text += f", mean confidence {summary['mean_confidence']:.0f}"
    low = summary.get("low_confidence_pages") or []
    if low:
        text += f"; low OCR confidence on page {', '.join(map(str, low[:10]))}{', ...' if len(low) > 10 else ''}"
    return text


def ocr_note(summary: dict | None) -> str:
    """``"read by OCR: 2 pages, mean confidence 93"`` (and the pages under the floor), or ``""``:
    what a document's list says of a scan."""
    reason = ocr_reason(summary)
    return "read by OCR: " + reason.removeprefix("; ocr: ") if reason else ""


def _no_text_reason(ocr: _OcrOutcome) -> str:
    if ocr.blank:
        return "The PDF's pages are blank: they have no text layer and nothing is drawn on them."
    if ocr.summary is not None:
        return f"The PDF has no text layer, and OCR found no text on its pages ({_why_no_text(ocr.summary)})."
    return f"The PDF has no text layer; it looks like a scan. {_ocr_advice(ocr)}"


def _why_no_text(summary: dict) -> str:
    """What the pages OCR read nothing on were, as the reader skipped them: blank, an image that
    could not be decoded, marks too small, Tesseract found no words."""
    reasons = list((summary.get("skipped") or {}).items()) + list((summary.get("failed") or {}).items())
    if not reasons:
        return "Tesseract found no words on them"
    kinds = {}
    for page, why in reasons:
        kinds.setdefault(why, []).append(page)
    if set(kinds) == {"blank"}:
        return "they look blank"
    parts = []
    for why, pages in kinds.items():
        shown = ", ".join(pages[:5]) + (", ..." if len(pages) > 5 else "")
        parts.append(f"page{'s' if len(pages) > 1 else ''} {shown}: "
                     f"{'Tesseract found no words' if why == 'no text found' else why}")
    return "; ".join(parts)


def _ocr_advice(ocr: _OcrOutcome) -> str:
    from rag_core.pdf.ocr import INSTALL_HINT

    if ocr.unavailable == "off":
        return "OCR was off for this file: add it again with OCR on (`--ocr auto`)."
    if ocr.unavailable == "missing" or ocr.summary is None:
        return f"OCR is not available here: {INSTALL_HINT}, then add the file again."
    return "OCR could not read it either."


def _bibliographic_metadata(reader, texts: list[str], display: str, *, scanned: bool = False) -> dict:
    """Title, authors, year, DOI, arXiv id and venue (rag_core.pdf.metadata); None when they cannot be
    read. ``scanned``: page 1 was read by OCR, so its text is not a title block."""
    from rag_core.pdf.metadata import EMPTY_RECORD, guess_metadata

    try:
        return guess_metadata(reader, texts[0] if texts else "", display, scanned=scanned)
    except MemoryError:
        raise
    except Exception:
        return dict(EMPTY_RECORD)


def _page_labels(reader, n_pages: int, notes: list[str]) -> list[str] | None:
    """The printed page labels, only when the PDF defines /PageLabels (else None)."""
    try:
        if "/PageLabels" not in reader.trailer["/Root"]:
            return None
        labels = list(reader.page_labels)
    except MemoryError:
        raise
    except Exception as exc:
        notes.append(f"page labels could not be read ({_short_error(exc)})")
        return None
    if len(labels) != n_pages:
        notes.append("page labels do not match the number of pages and were ignored")
        return None
    return [str(label) for label in labels]


# --------------------------------------------------------------------------- preview


def render_page_png(pdf: str | Path | bytes, page_number: int, *, scale: float = 1.5) -> bytes:
    """Render one page (1-based ``page_number``) to PNG bytes with pypdfium2.

    Raises ``ValueError`` for a page number out of range, a bad scale, or a file pdfium
    cannot open.
    """
    import pypdfium2 as pdfium

    if not isinstance(page_number, int) or isinstance(page_number, bool):
        raise ValueError(f"page_number must be an integer, got {page_number!r}")
    if not scale or scale <= 0 or scale > 10:
        raise ValueError(f"scale must be greater than 0 and at most 10, got {scale!r}")
    if isinstance(pdf, (bytes, bytearray, memoryview)):
        pdf_input = bytes(pdf)
    elif isinstance(pdf, (str, Path)):
        path = Path(pdf)
        if not path.is_file():
            raise FileNotFoundError(f"no such PDF file: {path}")
        pdf_input = str(path)
    else:
        raise TypeError(f"pdf must be a path or bytes, got {type(pdf).__name__}")
    try:
        document = pdfium.PdfDocument(pdf_input)
    except pdfium.PdfiumError as exc:
        raise ValueError(f"cannot open the PDF for rendering: {exc}") from exc
    try:
        n_pages = len(document)
        if not 1 <= page_number <= n_pages:
            raise ValueError(f"page_number must be between 1 and {n_pages}, got {page_number}")
        page = document[page_number - 1]
        try:
            bitmap = page.render(scale=scale)
            try:
                image = bitmap.to_pil()
            finally:
                bitmap.close()
        finally:
            page.close()
    finally:
        document.close()
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
