"""Passages as a list shows them: a short title chip, text from a word or sentence boundary,
the query's words marked in plain text, overlapping neighbours, and what orders a list.

All of this is display: the stored chunks and index files are never changed. A list cell is
plain text (a table cell reads no markdown), so the query's words are marked with brackets
(:data:`MARK_OPEN`, :data:`MARK_CLOSE`) rather than with HTML; :func:`term_spans` gives the
same places to :func:`rag_core.output.render.highlight_html` for the passage shown whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rag_core.output.render import _authors, _surname, page_label, query_terms
from rag_core.settings import (
    CHIP_NAME_CHARS,
    DISPLAY_SENTENCE_LOOKAHEAD,
    DISPLAY_WORD_LOOKAHEAD,
    LIST_PASSAGE_CHARS,
    VERIFY_LINK_CHARS,
)

__all__ = [
    "MARK_CLOSE",
    "MARK_OPEN",
    "PageTurn",
    "from_boundary",
    "list_passage",
    "marked_text",
    "ordered_by",
    "overlap_marks",
    "overlap_text",
    "page_turn",
    "passage_spans",
    "query_sentence",
    "term_spans",
    "title_chip",
    "verify_statement",
]

MARK_OPEN, MARK_CLOSE = "⟦", "⟧"  # white square brackets: rare in papers, in every common font

_SENTENCE_START = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_SPACE = re.compile(r"\s+")


# ----------------------------------------------------------------------------- the title chip


def title_chip(doc: Mapping | None, row: Mapping | None = None, *, fallback: str = "") -> str:
    """ "Devlin 2019 · p. 4": the first author's surname, the year and the page; the start of the
    file name when no author is known ("qem_mitiq_manual_v0.5… 2021 · p. 36": a year alone names
    no document). Short enough to leave a list's cell to the passage."""
    doc = doc or {}
    authors = _authors(doc.get("authors"))
    year = str(doc.get("year") or "").strip()
    surname = _surname(authors[0]) if authors else ""
    if surname:
        who = " ".join(part for part in (surname, year) if part)
    else:
        name = str(doc.get("source") or (row or {}).get("source") or fallback or "")
        stem = re.sub(r"\.pdf$", "", name, flags=re.IGNORECASE)
        stem = stem if len(stem) <= CHIP_NAME_CHARS else stem[: CHIP_NAME_CHARS - 1] + "…"
        who = " ".join(part for part in (stem, year) if part)
    return f"{who} · {page_label(row)}" if row is not None else who


# ----------------------------------------------------------------------------- boundaries


def from_boundary(text: str, *, mid_document: bool = True) -> tuple[str, int]:
    """``text`` from its first sentence start (within :data:`DISPLAY_SENTENCE_LOOKAHEAD`), else its
    first word start, when it was cut out of a document mid-way (a chunk that starts mid-word,
    "ting. The model…"); returns the text and how many characters were left out."""
    if not text or not mid_document:
        return text or "", 0
    head = text[:DISPLAY_SENTENCE_LOOKAHEAD]
    sentence = _SENTENCE_START.search(head)
    if sentence is not None:
        return text[sentence.end():], sentence.end()
    if text[0].isspace():
        stripped = text.lstrip()
        return stripped, len(text) - len(stripped)
    space = _SPACE.search(text[:DISPLAY_WORD_LOOKAHEAD])
    if space is None:
        return text, 0
    return text[space.end():], space.end()


# ----------------------------------------------------------------------------- the query's words


def term_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Where the query's content words (and words that start with one: "mask" → "masked") occur in
    ``text``, in order, not overlapping."""
    terms = query_terms(query)
    if not terms or not text:
        return []
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\w*", re.IGNORECASE)
    return [(m.start(), m.end()) for m in pattern.finditer(text)]


def marked_text(text: str, spans: Iterable[tuple[int, int]], *, open_mark: str = MARK_OPEN,
                close_mark: str = MARK_CLOSE) -> str:
    """``text`` with each span put between the marks (plain text: nothing in it is interpreted)."""
    out, pos = [], 0
    for start, end in sorted(spans):
        if start < pos or not 0 <= start < end <= len(text):
            continue
        out += [text[pos:start], open_mark, text[start:end], close_mark]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def list_passage(text: str, query: str = "", *, chars: int = LIST_PASSAGE_CHARS, mid_document: bool = True,
                 match: tuple[int, int] | None = None, marks: bool = True) -> str:
    """A list cell's passage on one line: from a word or sentence boundary, around the first query
    word (or around ``match``, a span of ``text``, kept whole), the query's words (or the match)
    marked unless ``marks`` is false, "…" where it was cut."""
    text = text or ""
    if match is not None and 0 <= match[0] < match[1] <= len(text):
        before = _SPACE.sub(" ", text[: match[0]]).lstrip()
        hit = _SPACE.sub(" ", text[match[0]: match[1]])
        after = _SPACE.sub(" ", text[match[1]:]).rstrip()
        room = max(chars - len(hit), 40)
        lead = before[-(room // 3):] if len(before) > room // 3 else before
        if len(lead) < len(before):
            lead = "…" + lead[lead.find(" ") + 1:] if " " in lead else "…" + lead
        tail = after[: room - len(lead)]
        if len(tail) < len(after):
            tail = (tail.rsplit(" ", 1)[0] if " " in tail else tail) + "…"
        return f"{lead}{MARK_OPEN}{hit}{MARK_CLOSE}{tail}"
    trimmed, cut = from_boundary(text, mid_document=mid_document)
    flat = _SPACE.sub(" ", trimmed).strip()
    spans = term_spans(flat, query)
    start = 0
    if len(flat) > chars and spans:
        first = spans[0][0]
        if first > chars // 3:
            start = flat.find(" ", first - chars // 4) + 1 if " " in flat[first - chars // 4: first] else first
    end = min(len(flat), start + chars)
    if end < len(flat):
        space = flat.rfind(" ", start + chars // 2, end)
        end = space if space > 0 else end
    shown = flat[start:end]
    spans = [(s - start, e - start) for s, e in spans if s >= start and e <= end] if marks else []
    lead = "…" if start or cut else ""
    return lead + marked_text(shown, spans) + ("…" if end < len(flat) else "")


def verify_statement(text: str, *, mid_document: bool = True, chars: int = VERIFY_LINK_CHARS) -> str:
    """A passage's opening as a statement for the Verify page: from a sentence (or word) boundary, up to
    the end of a sentence within ``chars`` characters, else the last whole word; "" for no text."""
    trimmed, _ = from_boundary(text or "", mid_document=mid_document)
    flat = _SPACE.sub(" ", trimmed).strip()
    if len(flat) <= chars:
        return flat
    head = flat[:chars]
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)", head)]
    if ends and ends[-1] >= chars // 3:
        return head[: ends[-1]]
    return head.rsplit(" ", 1)[0] if " " in head else head


def query_sentence(text: str, query: str, spans: Sequence[tuple[int, int]] | None = (), *,
                   mid_document: bool = True) -> str:
    """The sentence of a passage that answers the query, as a statement for the Verify page (the
    whole passage would be trivially verbatim): the one holding the first of ``spans`` (an exact
    match), else the one with the most of the query's content words (the earliest of equals); the
    passage's opening (:func:`verify_statement`, from a boundary when ``mid_document``) when no
    sentence has any."""
    from rag_core.text.sentences import split_sentences

    text = text or ""
    sentences = split_sentences(text)
    if not sentences:
        return ""
    chosen = None
    if spans:
        start = spans[0][0]
        chosen = next(((a, b) for a, b in sentences if a <= start < b), None)
    if chosen is None:
        terms = query_terms(query)
        best = 0
        for a, b in sentences:
            sentence = text[a:b].lower()
            found = sum(1 for t in terms if re.search(r"\b" + re.escape(t), sentence))
            if found > best:
                chosen, best = (a, b), found
    if chosen is None:
        return verify_statement(text, mid_document=mid_document)
    return verify_statement(text[chosen[0]:chosen[1]], mid_document=False)


# ----------------------------------------------------------------------------- neighbours


def overlap_marks(rows: Sequence[Mapping], spans: Mapping[int, tuple[str, int, int]]) -> dict[int, list[int]]:
    """For each row's rank, the ranks of the rows above it in the same list whose passage overlaps
    it in the document (two neighbouring chunks share their overlap). ``spans``: chunk index ->
    (document, start, end) in the document's text."""
    marks: dict[int, list[int]] = {}
    seen: list[tuple[int, tuple[str, int, int]]] = []
    for row in rows:
        span = spans.get(row.get("chunk_index"))
        if span is None:
            continue
        doc, start, end = span
        hits = [rank for rank, (d, s, e) in seen if d == doc and s < end and start < e]
        if hits:
            marks[row["rank"]] = hits
        seen.append((row["rank"], span))
    return marks


def passage_spans(chunks: Sequence[Mapping], rows: Iterable[Mapping]) -> dict[int, tuple[str, int, int]]:
    """Chunk index -> (document, start, end) of the rows' passages in their documents' text, from the
    index's ``chunks`` (for :func:`overlap_marks`)."""
    spans: dict[int, tuple[str, int, int]] = {}
    for row in rows:
        i = row.get("chunk_index")
        if i is None or i in spans or not 0 <= i < len(chunks):
            continue
        chunk = chunks[i]
        if chunk.get("start") is not None and chunk.get("end") is not None:
            spans[i] = (chunk.get("doc_id") or chunk["source"], int(chunk["start"]), int(chunk["end"]))
    return spans


def overlap_text(ranks: Sequence[int]) -> str:
    """ "overlaps #1" / "overlaps #1, #3" ("" when none)."""
    return "overlaps " + ", ".join(f"#{r}" for r in ranks) if ranks else ""



# ----------------------------------------------------------------------------- reading on


@dataclass(frozen=True)
class PageTurn:
    """Which page(s) of a document a passage view shows, and where previous/next lead.

    ``shown``: the pages drawn now, in order; ``marked``: those of them that hold the passage (its
    mark is drawn on them); ``previous`` / ``next``: the page a step back / forward shows (None at
    the document's ends); ``at_passage``: the view is the passage's own page(s)."""

    shown: tuple[int, ...]
    marked: tuple[int, ...]
    previous: int | None
    next: int | None
    at_passage: bool


def page_turn(passage_pages: Sequence[int], *, total: int | None = None, page: int | None = None) -> PageTurn:
    """The view of a passage on ``passage_pages`` (1-based) in a document of ``total`` pages (None:
    not known, so no end after the passage): its own pages when ``page`` is None, else page ``page``
    alone (clamped to the document), marked when the passage is on it."""
    own = tuple(sorted({int(n) for n in passage_pages if n and int(n) >= 1}))
    last = total if total and total >= 1 else None
    if page is None or not own:
        shown = own if page is None else (page,)
    else:
        page = max(1, int(page))
        shown = (min(page, last) if last else page,)
    if not shown:
        return PageTurn((), (), None, None, True)
    previous = shown[0] - 1 if shown[0] > 1 else None
    nxt = shown[-1] + 1 if last is None or shown[-1] < last else None
    if last is None and not own:
        nxt = None
    marked = tuple(n for n in shown if n in own)
    return PageTurn(shown, marked, previous, nxt, shown == own)

# ----------------------------------------------------------------------------- ordering


def ordered_by(rows: Sequence[Mapping], reranker_kind: str | None) -> str:
    """What orders a hybrid list, said when the score column is not what orders it."""
    if not rows:
        return ""
    score_type = rows[0].get("score_type")
    if reranker_kind == "mmr" or any(r.get("pre_mmr_rank") for r in rows):
        return ("Ordered by MMR (relevance traded against variety), not by the score column: the score is the "
                "fused score before MMR, so it is not in order.")
    if reranker_kind == "cross_encoder" or score_type == "rerank":
        return "Ordered by the cross-encoder's score (the score column)."
    if score_type == "rrf":
        return "Ordered by reciprocal rank fusion (the score column)."
    return "Ordered by the fused score (the score column)."
