"""The OCR layer a collection keeps with each scanned document: its words and their boxes.

A document read by OCR (:mod:`rag_core.pdf.ocr`) has no text layer in its PDF to mark a
passage on, so the words Tesseract read, each with its box and confidence, are kept with the
collection as side data under ``ocr/<sha256>`` (committed and checksummed like the relevance
lab's data, copied by ``rag-core copy``, removed with the document). The document's record says
which pages were read (``record["ocr"]``), and each chunk cut from such a page carries
``"ocr": True``, so search rows and verdicts from OCR text can say so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_core.pdf.ocr import LAYER_FORMAT

PREFIX = "ocr/"
# What a document's record keeps of its OCR summary (the layer holds the words).
RECORD_KEYS = ("pages", "mean_confidence", "low_confidence_pages", "engine", "lang", "mode", "dpi")


def layer_key(sha256: str) -> str:
    """The side-data key of a document's OCR layer."""
    return PREFIX + sha256.lower()


def record_summary(summary: Mapping | None) -> dict | None:
    """The part of an OCR summary a document's record keeps (None when no page was read)."""
    if not summary or not summary.get("pages"):
        return None
    return {key: summary.get(key) for key in RECORD_KEYS}


def flag_chunks(chunks: Sequence[dict], ocr_pages: Sequence[int]) -> None:
    """Mark the chunks that hold text read by OCR (``chunk["ocr"] = True``)."""
    pages = set(ocr_pages)
    if not pages:
        return
    for chunk in chunks:
        start, end = chunk.get("page_start"), chunk.get("page_end")
        if isinstance(start, int) and any(p in pages for p in range(start, (end or start) + 1)):
            chunk["ocr"] = True


def valid_layer(value) -> dict | None:
    """``value`` when it is an OCR layer this version reads (pages of words, boxes, confidences), else None."""
    if not isinstance(value, dict) or value.get("format") != LAYER_FORMAT or not isinstance(value.get("pages"), dict):
        return None
    for page in value["pages"].values():
        if not isinstance(page, dict):
            return None
        words, boxes, conf = page.get("words"), page.get("boxes"), page.get("conf")
        size = page.get("size")
        if not (isinstance(words, list) and isinstance(boxes, list) and isinstance(conf, list)
                and isinstance(size, list) and len(size) == 2 and len(boxes) == 4 * len(words)
                and len(conf) == len(words)):
            return None
    return value


def read_layer(store, name: str, sha256: str) -> dict | None:
    """A document's OCR layer from ``store``, or None (not a scan, or an unreadable layer)."""
    return valid_layer(store.read_data(name, layer_key(sha256)))
