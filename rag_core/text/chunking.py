"""Fixed-stride character chunking, with page spans for PDF text.

Pure Python on purpose: importable with no optional dependency installed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rag_core.settings import CHUNK_OVERLAP_CHARS, CHUNK_SIZE_CHARS, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE

PAGE_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class PageText:
    """The cleaned text of one physical page (``number`` is 1-based)."""

    number: int
    text: str
    label: str | None = None


def validate_chunk_settings(chunk_size, overlap, *, collection: bool = False) -> tuple[int, int]:
    """``(chunk_size, overlap)`` as ints, or ``ValueError`` saying what is allowed.

    Any positive size with ``0 <= overlap < chunk_size`` can be chunked; a collection
    (``collection=True``) also keeps the size between ``MIN_CHUNK_SIZE`` and
    ``MAX_CHUNK_SIZE`` characters and the overlap at most half of it.
    """
    if isinstance(chunk_size, bool) or isinstance(overlap, bool):
        raise ValueError(f"Chunk size and overlap must be whole numbers (got {chunk_size!r}, {overlap!r}).")
    try:
        size, lap = int(chunk_size), int(overlap)
    except (TypeError, ValueError):
        raise ValueError(f"Chunk size and overlap must be whole numbers (got {chunk_size!r}, {overlap!r}).") from None
    if size != chunk_size or lap != overlap:
        raise ValueError(f"Chunk size and overlap must be whole numbers (got {chunk_size!r}, {overlap!r}).")
    if size <= 0:
        raise ValueError(f"chunk_size must be a positive number of characters, got {chunk_size!r}")
    if lap < 0 or lap >= size:
        raise ValueError(f"overlap must be at least 0 and smaller than chunk_size ({size}), got {overlap!r}")
    if collection:
        if not MIN_CHUNK_SIZE <= size <= MAX_CHUNK_SIZE:
            raise ValueError(
                f"Chunk size must be between {MIN_CHUNK_SIZE:,} and {MAX_CHUNK_SIZE:,} characters (got {size:,})."
            )
        if lap > size // 2:
            raise ValueError(f"Overlap must be between 0 and half the chunk size ({size // 2:,}), got {lap:,}.")
    return size, lap


def _check_sizes(chunk_size: int, overlap: int) -> int:
    size, lap = validate_chunk_settings(chunk_size, overlap)
    return size - lap


def chunk_spans(length: int, chunk_size: int, overlap: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each chunk of a text of ``length`` characters."""
    step = _check_sizes(chunk_size, overlap)
    start = 0
    while start < length:
        end = min(start + chunk_size, length)
        yield start, end
        if end >= length:
            return
        start += step


def word_spans(text: str, chunk_size: int, overlap: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of chunks of at most ``chunk_size`` characters that neither start nor
    end inside a word: an end that would cut a word moves back to the white space before it,
    a start moves back to the word's first letter (each by at most a tenth of ``chunk_size``;
    a longer "word", a URL say, is cut as :func:`chunk_spans` would). Consecutive chunks still
    overlap by about ``overlap`` characters and cover the whole text."""
    step = _check_sizes(chunk_size, overlap)
    length = len(text)
    slack = max(chunk_size // 10, 1)
    start = 0
    while start < length:
        end = min(start + chunk_size, length)
        if end < length and not text[end].isspace() and not text[end - 1].isspace():
            floor = max(start + 1, end - slack)
            cut = max(text.rfind(" ", floor, end), text.rfind("\n", floor, end))
            if cut > start:
                end = cut
        yield start, end
        if end >= length:
            return
        following = start + step
        if 0 < following < length and not text[following - 1].isspace() and not text[following].isspace():
            floor = max(start + 1, following - slack)
            space = max(text.rfind(" ", floor, following), text.rfind("\n", floor, following))
            if space >= floor:
                following = space + 1
        start = max(min(following, end), start + 1)


def chunk_text(
    text: str,
    source: str,
    chunk_size: int = CHUNK_SIZE_CHARS,
    overlap: int = CHUNK_OVERLAP_CHARS,
) -> list[dict]:
    """Split ``text`` into chunks of at most ``chunk_size`` characters.

    Each chunk starts ``chunk_size - overlap`` characters after the previous one.
    Blank text gives no chunks; chunks that hold only white space are skipped.
    """
    _check_sizes(chunk_size, overlap)
    if not text or not text.strip():
        return []
    chunks = []
    for start, end in chunk_spans(len(text), chunk_size, overlap):
        piece = text[start:end]
        if not piece.strip():
            continue
        chunks.append(
            {
                "text": piece,
                "source": source,
                "doc_chunk": len(chunks),
                "start": start,
                "end": end,
                "page_start": None,
                "page_end": None,
                "page_label": None,
                "page_breaks": [],
            }
        )
    return chunks


def _chunks_at(text: str, source: str, spans) -> list[dict]:
    chunks = []
    for start, end in spans:
        piece = text[start:end]
        if not piece.strip():
            continue
        chunks.append({"text": piece, "source": source, "doc_chunk": len(chunks), "start": start, "end": end,
                       "page_start": None, "page_end": None, "page_label": None, "page_breaks": []})
    return chunks


def join_pages(pages: Sequence[PageText]) -> tuple[str, list[tuple[int, int, str | None]]]:
    """Join page texts; return the text and ``(offset, page number, label)`` of each page."""
    parts: list[str] = []
    starts: list[tuple[int, int, str | None]] = []
    offset = 0
    for page in pages:
        if not page.text.strip():
            continue
        if parts:
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        starts.append((offset, page.number, page.label))
        parts.append(page.text)
        offset += len(page.text)
    return "".join(parts), starts


def chunk_pages(
    pages: Sequence[PageText],
    source: str,
    chunk_size: int = CHUNK_SIZE_CHARS,
    overlap: int = CHUNK_OVERLAP_CHARS,
    *,
    word_boundaries: bool = False,
) -> list[dict]:
    """Chunk a document given page by page; every chunk knows its pages.

    ``page_start``/``page_end`` are 1-based physical pages, ``page_label`` the printed
    label of the first page when the PDF defines labels, and ``page_breaks`` lists
    ``[offset in chunk, page number]`` for each page that starts inside the chunk.
    ``word_boundaries``: chunks start and end between words (:func:`word_spans`) instead of
    at fixed strides (:func:`chunk_text`).
    """
    text, starts = join_pages(pages)
    if word_boundaries:
        chunks = _chunks_at(text, source, word_spans(text, chunk_size, overlap))
    else:
        chunks = chunk_text(text, source, chunk_size, overlap)
    if not starts:
        return chunks
    offsets = [s[0] for s in starts]
    for chunk in chunks:
        first = max(bisect_right(offsets, chunk["start"]) - 1, 0)
        last = max(bisect_right(offsets, chunk["end"] - 1) - 1, 0)
        chunk["page_start"] = starts[first][1]
        chunk["page_end"] = starts[last][1]
        chunk["page_label"] = starts[first][2]
        chunk["page_breaks"] = [[0, starts[first][1]]] + [
            [starts[i][0] - chunk["start"], starts[i][1]] for i in range(first + 1, last + 1)
        ]
    return chunks


def chunk_segments(chunk: dict) -> list[dict]:
    """A chunk's text cut at its page starts: ``{"page", "page_label", "text"}`` per page it
    touches (the label is known for its first page only), for marking it on its page images."""
    text = chunk.get("text") or ""
    breaks = chunk.get("page_breaks") or ([[0, chunk["page_start"]]] if chunk.get("page_start") else [])
    out = []
    for k, (start, number) in enumerate(breaks):
        end = breaks[k + 1][0] if k + 1 < len(breaks) else len(text)
        piece = text[max(0, start):max(0, end)].strip()
        if piece:
            out.append({"page": number, "page_label": chunk.get("page_label") if k == 0 else None, "text": piece})
    return out


def page_at(chunk: dict, offset: int) -> int | None:
    """The physical page of the character at ``offset`` inside ``chunk``."""
    breaks = chunk.get("page_breaks") or []
    if not breaks:
        return chunk.get("page_start")
    page = breaks[0][1]
    for start, number in breaks:
        if start <= offset:
            page = number
        else:
            break
    return page
