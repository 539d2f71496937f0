"""A document's whole text put back together from its overlapping chunks, with its pages.

:class:`DocumentText` maps offsets in the document to pages (physical numbers and printed
labels) and to the chunk that holds them; :func:`assemble_documents` builds one per document
of a chunk list. Citation checks and exact search look for quotes across chunk boundaries in it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_core.text.folding import normalize_for_matching

__all__ = ["DocumentText", "assemble_documents"]


# A line that holds only a page number (arabic or roman): the footer or header at a page break.
_PAGE_NUMBER_LINE = re.compile(r"(?im)^[ \t]*(?:\d{1,4}|[ivxlcdm]{1,7})[ \t]*$")


@dataclass(eq=False)
class DocumentText:
    """One document's whole text, put back together from its (overlapping) chunks.

    ``key`` is the chunk's ``doc_id`` (or its ``source`` when it has none). Offsets into
    ``text`` are the chunks' document offsets (``chunk["start"] + offset in chunk``), so a
    quote that crosses a chunk boundary is still one span. ``page_offsets`` are the offsets
    where pages start, with their physical ``page_numbers`` and printed ``page_labels``.
    """

    key: str
    source: str | None
    doc_id: str | None
    text: str
    chunk_indices: list[int]
    chunk_starts: list[int]
    chunk_ends: list[int]
    page_offsets: list[int] = field(default_factory=list)
    page_numbers: list[int] = field(default_factory=list)
    page_labels: list[str | None] = field(default_factory=list)
    _mapped: tuple[str, list[int]] | None = field(default=None, repr=False)
    _match_text: str | None = field(default=None, repr=False)

    def folded_with_map(self) -> tuple[str, list[int]]:
        """:func:`normalize_for_matching` of :attr:`match_text` (computed once)."""
        if self._mapped is None:
            self._mapped = normalize_for_matching(self.match_text)
        return self._mapped

    @property
    def match_text(self) -> str:
        """The text with bare page numbers at page breaks blanked out (same length, same
        offsets), so that a sentence running on to the next page still reads as one."""
        if self._match_text is None:
            text = self.text
            if len(self.page_offsets) > 1:
                chars = list(text)
                for offset in self.page_offsets[1:]:
                    for m in _PAGE_NUMBER_LINE.finditer(text, max(0, offset - 40), min(len(text), offset + 40)):
                        before, after = text[m.end():offset], text[offset:m.start()]
                        if (m.end() <= offset and not before.strip()) or (m.start() >= offset and not after.strip()):
                            chars[m.start():m.end()] = " " * (m.end() - m.start())
                text = "".join(chars)
            self._match_text = text
        return self._match_text

    def page_index_at(self, offset: int) -> int | None:
        if not self.page_offsets:
            return None
        return max(bisect_right(self.page_offsets, offset) - 1, 0)

    def page_at(self, offset: int) -> tuple[int | None, str | None]:
        """``(physical page, printed label)`` of the character at ``offset``."""
        k = self.page_index_at(offset)
        if k is None:
            return None, None
        return self.page_numbers[k], self.page_labels[k]

    def page_bounds(self, number: int) -> tuple[int, int] | None:
        """``(start, end)`` of a page's text in the document (None for an unknown page)."""
        if number not in self.page_numbers:
            return None
        k = self.page_numbers.index(number)
        end = self.page_offsets[k + 1] if k + 1 < len(self.page_offsets) else len(self.text)
        text = self.text
        while end > self.page_offsets[k] and text[end - 1].isspace():  # the page separator
            end -= 1
        return self.page_offsets[k], end

    def segments(self, start: int, end: int) -> list[dict]:
        """The span ``[start, end)`` cut at page starts: one dict per page it touches, with
        ``page``, ``page_label``, the document offsets ``doc_start``/``doc_end`` and the
        offsets in the page's text ``page_offset_start``/``page_offset_end``."""
        if not self.page_offsets:
            return [{"page": None, "page_label": None, "doc_start": start, "doc_end": end,
                     "page_offset_start": start, "page_offset_end": end, "text": self.text[start:end]}]
        out = []
        first, last = self.page_index_at(start), self.page_index_at(max(start, end - 1))
        for k in range(first, last + 1):
            page_start = self.page_offsets[k]
            page_end = self.page_offsets[k + 1] if k + 1 < len(self.page_offsets) else len(self.text)
            a, b = max(start, page_start), min(end, page_end)
            blanked = self.match_text  # page numbers at the break count as space
            while b > a and blanked[b - 1].isspace():
                b -= 1
            while a < b and blanked[a].isspace():
                a += 1
            if a >= b:
                continue
            out.append({"page": self.page_numbers[k], "page_label": self.page_labels[k], "doc_start": a,
                        "doc_end": b, "page_offset_start": a - page_start, "page_offset_end": b - page_start,
                        "text": self.text[a:b]})
        return out

    def chunk_for(self, start: int, end: int) -> tuple[int, int]:
        """``(chunk index, offset in that chunk)`` of the last chunk starting at or before
        ``start``: the one that holds ``[start, end)`` whole when any does."""
        k = max(bisect_right(self.chunk_starts, start) - 1, 0)
        return self.chunk_indices[k], start - self.chunk_starts[k]


def assemble_documents(chunks: Sequence[dict]) -> list[DocumentText]:
    """Each document's text from its chunks, in the order documents first appear.

    Chunks without an integer ``start`` (hand-made chunk lists) are documents of their own.
    """
    groups: dict[object, list[int]] = {}
    read: dict[int, dict] = {}  # each chunk read once (a stored chunk is built from its columns)
    for i, chunk in enumerate(chunks):
        read[i] = chunk
        offset = chunk.get("start")
        if isinstance(offset, int) and not isinstance(offset, bool):
            key = chunk.get("doc_id") or chunk.get("source")
        else:
            key = ("chunk", i)
        groups.setdefault(key, []).append(i)
    chunks = read
    documents = []
    for key, members in groups.items():
        if isinstance(key, tuple):
            i = members[0]
            chunk = chunks[i]
            text = chunk.get("text") or ""
            doc = DocumentText(str(chunk.get("source")), chunk.get("source"), chunk.get("doc_id"), text,
                               [i], [0], [len(text)])
            page = chunk.get("page_start")
            if isinstance(page, int):
                doc.page_offsets, doc.page_numbers, doc.page_labels = [0], [page], [chunk.get("page_label")]
            documents.append(doc)
            continue
        members.sort(key=lambda i: chunks[i]["start"])
        pieces: list[str] = []
        pos = 0
        starts, ends = [], []
        page_start: dict[int, int] = {}
        page_seen: dict[int, int] = {}
        labels: dict[int, str | None] = {}
        for i in members:
            chunk = chunks[i]
            text = chunk.get("text") or ""
            offset = chunk["start"]
            if offset > pos:
                pieces.append(" " * (offset - pos))  # a blank chunk left out at ingest
                pos = offset
            if offset + len(text) > pos:
                pieces.append(text[pos - offset:])
                pos = offset + len(text)
            starts.append(offset)
            ends.append(offset + len(text))
            breaks = chunk.get("page_breaks") or []
            if not breaks and isinstance(chunk.get("page_start"), int):
                breaks = [[0, chunk["page_start"]]]
            for n, (local, number) in enumerate(breaks):
                at = offset + int(local)
                page_seen[number] = min(page_seen.get(number, at), at)
                if local > 0 or offset == 0:
                    page_start[number] = min(page_start.get(number, at), at)
                if n == 0 and chunk.get("page_label") is not None:
                    labels.setdefault(number, chunk.get("page_label"))
        first = chunks[members[0]]
        doc = DocumentText(str(key), first.get("source"), first.get("doc_id"), "".join(pieces),
                           list(members), starts, ends)
        if page_seen:
            ordered = sorted(page_seen, key=lambda n: page_start.get(n, page_seen[n]))
            doc.page_numbers = ordered
            doc.page_offsets = [page_start.get(n, page_seen[n]) for n in ordered]
            doc.page_offsets[0] = 0
            doc.page_labels = [labels.get(n) for n in ordered]
        documents.append(doc)
    return documents
