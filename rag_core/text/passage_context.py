"""What a passage is part of: its document's title and the section heading above it.

A passage cut from the middle of a paper rarely names the paper's subject ("we train it with
a batch size of 128..."). Carrying the title (and the section heading, where the text has
one) with each chunk lets BM25 and the bi-encoder see it; the passage text shown to people,
TF-IDF (the contract's) and exact search stay as the PDF has them. The context lives in the
chunk's ``context`` key; :func:`rag_core.index.build.index_text` puts it in front of the text for
the rankers that read it. Measured on the judged PDF questions and SciFact in
docs/benchmarks.md.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from rag_core.settings import PDF_CONTEXT, PDF_WORD_BOUNDARIES

MAX_TITLE_CHARS = 200
MAX_HEADING_CHARS = 80

_NUMBERED = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?|[IVX]{1,5}\.|[A-H]\.(?:\d{1,2})?)\s+([A-Z][^\n]{2,78})$")
_NAMED = re.compile(r"^(abstract|introduction|related work|background|methods?|methodology|experiments?|results|"
                    r"discussion|conclusions?|conclusion and future work|limitations|acknowledge?ments?|references|"
                    r"appendix|summary)\.?$", re.IGNORECASE)
_BAD_TITLE = re.compile(r"(proceedings|journal|conference|vol\.|volume|pages? \d|©|\(c\)|doi|arxiv|issn|"
                        r"received|accepted|published|@|http|www\.|university|department|institute)", re.IGNORECASE)


def _letters(text: str) -> float:
    return sum(ch.isalpha() for ch in text) / max(len(text), 1)


_FUNCTION_WORDS = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to",
                   "via", "with", "without", "is", "are"}
_NAME_MARKS = re.compile(r"[∗†‡*@]|\b(authors?|supervisors?|advisors?)\b", re.IGNORECASE)


def _title_line(line: str) -> bool:
    return (len(line) >= 4 and _letters(line) > 0.7 and not _BAD_TITLE.search(line) and not _NAME_MARKS.search(line)
            and not re.search(r"\d{3,}", line))


def _continues(previous: str, line: str) -> bool:
    """Whether ``line`` carries on the title ``previous`` started (and is not an author line)."""
    last = previous.split()[-1].lower() if previous.split() else ""
    words = line.split()
    return (line[:1].islower() or last in _FUNCTION_WORDS or previous.endswith((":", "-", "–"))
            or any(w.lower() in _FUNCTION_WORDS and w.islower() for w in words))


def guess_title(first_page: str, metadata_title: str | None = None) -> str:
    """The document's title: the PDF's own title when it looks like one, else the first run of
    title-like lines on the first page (no journal header, affiliation, author or e-mail line)."""
    meta = " ".join(str(metadata_title or "").split())
    if " - " in meta and _BAD_TITLE.search(meta):
        meta = meta.split(" - ")[0]
    if 12 <= len(meta) <= MAX_TITLE_CHARS and _letters(meta) > 0.6 and " " in meta and not _BAD_TITLE.search(meta):
        return meta
    lines = [" ".join(line.split()) for line in (first_page or "").splitlines()[:12]]
    picked: list[str] = []
    for line in lines:
        if not picked:
            if _title_line(line) and line[:1].isupper() and len(line.split()) >= 2:
                picked.append(line)
            continue
        if _title_line(line) and _continues(picked[-1], line) and len(" ".join([*picked, line])) <= MAX_TITLE_CHARS:
            picked.append(line)
            continue
        break
    title = " ".join(picked)
    if title:
        return title
    return meta if len(meta) >= 4 and _letters(meta) > 0.6 else ""


def section_headings(text: str) -> list[tuple[int, str]]:
    """``(offset, heading)`` of the lines of ``text`` that look like section headings:
    "3.2 Fine-tuning BERT", "II. METHOD", "Introduction"... (short, mostly letters, no
    full stop at the end)."""
    out = []
    offset = 0
    for line in text.split("\n"):
        stripped = line.strip()
        if 3 <= len(stripped) <= MAX_HEADING_CHARS + 10:
            heading = None
            numbered = _NUMBERED.match(stripped)
            if numbered:
                words = numbered.group(1).split()
                if (len(words) <= 10 and _letters(numbered.group(1)) > 0.75 and not stripped.endswith((".", ",", ";"))
                        and not re.search(r"\d", numbered.group(1))):
                    heading = stripped
            elif _NAMED.match(stripped):
                heading = stripped.rstrip(".")
            if heading:
                out.append((offset + line.index(stripped[0]), heading[:MAX_HEADING_CHARS]))
        offset += len(line) + 1
    return out


def add_context(chunks: Sequence[dict], text: str, title: str = "") -> None:
    """Give each chunk (with ``start``/``end`` offsets into ``text``) a ``context``: the title
    and the heading in force where the chunk starts (or the first one inside its first half)."""
    headings = section_headings(text)
    starts = [offset for offset, _ in headings]
    for chunk in chunks:
        start, end = chunk.get("start"), chunk.get("end")
        heading = ""
        if isinstance(start, int) and isinstance(end, int) and headings:
            at = bisect_right(starts, start) - 1
            inside = bisect_right(starts, start + (end - start) // 2) - 1
            chosen = inside if inside > at else at
            if chosen >= 0:
                heading = headings[chosen][1]
        parts = [p for p in (title, heading) if p]
        if parts:
            chunk["context"] = " — ".join(parts)
        else:
            chunk.pop("context", None)




def chunk_pdf(pages, source: str, chunk_size: int, overlap: int, *, metadata_title: str | None = None,
              word_boundaries: bool | None = None, context: bool | None = None) -> list[dict]:
    """The chunks of an extracted PDF as ingest makes them: :func:`~rag_core.text.chunking.chunk_pages`
    (between words when ``word_boundaries``), each with its title and section as ``context`` and
    its ``back_matter`` (:mod:`rag_core.text.back_matter`)."""
    from rag_core.text.back_matter import mark_back_matter
    from rag_core.text.chunking import chunk_pages, join_pages

    word_boundaries = PDF_WORD_BOUNDARIES if word_boundaries is None else word_boundaries
    context = PDF_CONTEXT if context is None else context
    chunks = chunk_pages(pages, source, chunk_size, overlap, word_boundaries=word_boundaries)
    if chunks:
        text, _ = join_pages(pages)
        mark_back_matter(chunks, text)
        if context:
            first = next((p.text for p in pages if p.text.strip()), "")
            add_context(chunks, text, guess_title(first, metadata_title))
    return chunks
