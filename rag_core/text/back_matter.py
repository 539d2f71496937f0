"""Back matter: the parts of a document a reader rarely wants as an answer.

Reference lists and bibliographies, acknowledgements (with funding, author contributions and
competing interests), a venue's checklist, a declaration, a colophon, a book's index. They are
found once, at ingest, on the document's joined text: a heading starts a span ("References",
"B I B L I O G R A P H Y", "4 Acknowledgements") that runs to the next heading that ends it (an
appendix, another section); a passage that reads like a reference list (years, initials,
venues, numbered entries, few function words) is one without a heading, and one inside a
reference-list span that reads like prose is not. Each chunk then carries ``back_matter``: the
kind covering at least half of it, or None. Chunks stored before this existed have no key and
count as not back matter. Measured against hand labels in docs/benchmarks.md.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

__all__ = ["KINDS", "back_matter_mask", "back_matter_spans", "is_back_matter", "mark_back_matter",
           "reference_score"]

KINDS = ("references", "acknowledgements", "checklist", "declaration", "colophon", "index")
"""The kinds of back matter a chunk's ``back_matter`` can name."""

_NAMES = {
    "references": r"references?|bibliography|literature cited|works cited|reference list|cited literature",
    "acknowledgements": r"acknowledge?ments?|funding|author contributions?|competing interests?|"
                        r"conflicts? of interests?|declaration of competing interests?|financial disclosures?",
    "checklist": r"checklist",
    "declaration": r"declarations?",
    "colophon": r"colophon",
    "index": r"index|python module index|subject index|author index",
}
_NUMBER = r"(?:(?:\d{1,3}|[IVX]{1,5}|[A-H])(?:\.\d{1,2})*\.?\s+|chapter\s+\d+\s+)?"
_HEADING = {kind: re.compile(rf"^{_NUMBER}(?:{names})\s*[.:]?$", re.IGNORECASE) for kind, names in _NAMES.items()}
# "Acknowledgements We are grateful to ..." (a heading run into its paragraph)
_RUN_IN = re.compile(r"^(?:acknowledge?ments?|funding)[.:]?\s+(?=[A-Z])")
_SPACED = re.compile(r"(?:[A-Za-z]{1,2} )+[A-Za-z]{1,2}")
# what ends a reference list: an appendix, a lettered or numbered section heading
_APPENDIX = re.compile(r"^(?:appendix|appendices|supplementary|supplemental)\b", re.IGNORECASE)
_LETTERED = re.compile(r"^(?:[A-H](?:\.\d{1,2})*\.?|\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.)\s+[A-Z][a-z]+"
                       r"(?:\s+(?:[A-Za-z&][A-Za-z-]*|\d+))*$")
_INITIAL = re.compile(r"\b[A-Z]\.")
# a section named without a number ("Ethical Considerations", "Limitations") ends a short span
_NAMED = re.compile(r"^(?:abstract|introduction|related work|background|methods?|experiments?|results|discussion|"
                    r"conclusions?|limitations|ethical considerations|ethics statement|broader impact|summary)\.?$",
                    re.IGNORECASE)
MAX_SPAN = {"acknowledgements": 1500, "checklist": 8000, "declaration": 2000, "colophon": 2000}

_YEAR = re.compile(r"\b(?:19|20)\d\d[a-z]?\b")
_INITIALS = re.compile(r"(?<![A-Za-z])[A-Z]\.(?:\s?-?[A-Z]\.)*\s?[A-Z][a-z]|[A-Z][a-z]+,\s(?:[A-Z]\.\s?)+")
_VENUE = re.compile(r"\b(?:Proceedings|Proc\.|Conference|Conf\.|Journal|J\.|arXiv|preprint|Phys\.|Rev\.|Lett\.|"
                    r"vol\.|Vol\.|pp\.|pages|Press|URL|doi|Workshop|Transactions|Trans\.|Association for|"
                    r"Advances in|ISBN|eprint|CoRR|abs/|Springer|Univ\.)")
_ENTRY = re.compile(r"(?m)^\s*\[\d{1,3}\]|^\d{1,3}[A-Z]\.")
_WORD = re.compile(r"[A-Za-z]+")
_FUNCTION_WORDS = ("the of and to in is that we for this with as are be by on it an which our can from at or not "
                   "these when where was were has have")
_FUNCTION = frozenset(_FUNCTION_WORDS.split())
REFERENCE_SCORE = 9.0  # a passage scoring this much reads as a reference list wherever it is
PROSE_SCORE = 3.0  # a passage in a reference-list span scoring less, with prose's function words, is not one
PROSE_FUNCTION_SHARE = 0.24
MIN_YEARS = 3.0  # ... and has at least this many years per 1,000 characters (a change log has few)


def reference_score(text: str) -> tuple[float, float, float]:
    """How much ``text`` reads like a reference list: ``(score, years, share of function words)``.

    The score adds, per 1,000 characters, years (at most 8), venue words, initials and, twice,
    numbered entries ("[12]" or "12A." at a line start); ``years`` is the years' part."""
    n = max(len(text), 1)
    per = 1000 / n
    years = min(len(_YEAR.findall(text)) * per, 8.0)
    score = years + len(_VENUE.findall(text)) * per + 0.5 * len(_INITIALS.findall(text)) * per \
        + 2 * len(_ENTRY.findall(text)) * per
    words = _WORD.findall(text)
    share = sum(w.lower() in _FUNCTION for w in words) / max(len(words), 1)
    return score, years, share


def _heading_kind(line: str) -> tuple[str, bool] | None:
    """``(kind, run_in)`` when ``line`` is a back-matter heading."""
    line = " ".join(line.split())
    if not line or len(line) > 200:
        return None
    if _SPACED.fullmatch(line):
        line = line.replace(" ", "")
    if len(line) <= 60:
        for kind, pattern in _HEADING.items():
            if pattern.match(line):
                return kind, False
    if _RUN_IN.match(line):
        return "acknowledgements", True
    return None


def _ends_references(line: str) -> bool:
    line = " ".join(line.split())
    if _SPACED.fullmatch(line):
        line = line.replace(" ", "")
    if not line or len(line) > 80:
        return False
    if _APPENDIX.match(line):
        return True
    return bool(_LETTERED.match(line)) and "," not in line and len(_INITIAL.findall(line)) <= 1


def back_matter_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of the back-matter spans a heading starts in ``text``."""
    lines: list[tuple[int, str]] = []
    offset = 0
    for line in text.split("\n"):
        lines.append((offset, line))
        offset += len(line) + 1
    starts = []
    for at, line in lines:
        found = _heading_kind(line)
        if found:
            starts.append((at + len(line) - len(line.lstrip()), found[0]))
    if not starts:
        return []
    reference_ends = sorted({at for at, line in lines if _ends_references(line)} | {at for at, _ in starts})
    headings_and_ends = sorted(set(reference_ends) | {at for at, line in lines if _NAMED.match(line.strip())})
    spans = []
    for k, (start, kind) in enumerate(starts):
        following = starts[k + 1][0] if k + 1 < len(starts) else len(text)
        ends = reference_ends if kind == "references" else headings_and_ends
        j = bisect_right(ends, start)
        end = min(ends[j] if j < len(ends) else len(text), following)
        if kind in MAX_SPAN:
            end = min(end, start + MAX_SPAN[kind])
        if kind == "index" and len(re.findall(r",\s*\d+\b", text[start:start + 1500])) < 5:
            continue  # a line "Index" that does not start an index
        spans.append((start, end, kind))
    return spans


def mark_back_matter(chunks: Sequence[dict], text: str) -> None:
    """Set each chunk's ``back_matter`` (a kind of :data:`KINDS`, or None) from the spans of the
    document ``text`` its ``start``/``end`` offsets point into and from how its text reads."""
    spans = back_matter_spans(text)
    for chunk in chunks:
        body = chunk.get("text") or ""
        start, end = chunk.get("start"), chunk.get("end")
        kind = None
        if isinstance(start, int) and isinstance(end, int) and end > start:
            cover: dict[str, int] = {}
            for s, e, k in spans:
                overlap = min(e, end) - max(s, start)
                if overlap > 0:
                    cover[k] = cover.get(k, 0) + overlap
            if cover:
                best = max(cover, key=cover.get)
                if cover[best] * 2 >= end - start:
                    kind = best
        score, years, share = reference_score(body)
        if kind == "references" and score < PROSE_SCORE and share >= PROSE_FUNCTION_SHARE:
            kind = None  # an appendix the span ran into
        elif kind is None and score >= REFERENCE_SCORE and years >= MIN_YEARS and share < PROSE_FUNCTION_SHARE:
            kind = "references"  # a reference list without a heading
        chunk["back_matter"] = kind


def is_back_matter(chunk: dict) -> bool:
    """Whether a chunk was marked as back matter (a chunk without the key was not looked at: no)."""
    return bool(chunk.get("back_matter"))


def back_matter_mask(chunks: Sequence[dict]):
    """Which chunks are back matter (a NumPy bool array), or None when none is (read by column
    where the chunks are stored so)."""
    import numpy as np

    parts = getattr(chunks, "parts", None)
    if parts is not None:
        masks = [back_matter_mask(part) for part in parts]
        if all(m is None for m in masks):
            return None
        return np.concatenate([np.zeros(len(p), dtype=bool) if m is None else m
                               for p, m in zip(parts, masks, strict=True)])
    column = getattr(chunks, "back_matter_column", None)
    if column is not None:
        mask = column()
    else:
        mask = np.fromiter((is_back_matter(c) for c in chunks), dtype=bool, count=len(chunks))
    return mask if mask.any() else None
