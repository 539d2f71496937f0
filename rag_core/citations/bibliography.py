"""Citations matched to the documents of a collection: first author's surname, year, title.

:func:`match_documents` reads the records :mod:`rag_core.pdf.metadata` guessed from each PDF
(first author's surname and year, a title when the reference list gives one).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

__all__ = ["match_documents", "name_key"]


def name_key(name: str) -> str:
    """A surname or name folded for comparison: accents removed, letters only, lower case."""
    folded = unicodedata.normalize("NFKD", name)
    return "".join(c for c in folded if c.isalpha() and not unicodedata.combining(c)).casefold()


def match_documents(
    surnames: Sequence[str],
    year: int | None,
    documents: Iterable[dict],
    *,
    title: str | None = None,
) -> list[str]:
    """The sources of the documents a citation points to, best first ([] when none fits).

    ``documents`` are dicts with ``source`` and, when known, ``authors``, ``year``, ``title``
    and ``first_page`` (the opening text of the document, for PDFs whose metadata is unknown).
    A document fits when the first cited surname is one of its authors (or stands in its
    opening text) and the years differ by at most one (arXiv versions and proceedings differ);
    a title from the reference list, when given, must match the document's title or opening.
    """
    from rapidfuzz import fuzz

    wanted = [name_key(s) for s in surnames if name_key(s)]
    if not wanted:
        return []
    first = wanted[0]
    scored: list[tuple[float, str]] = []
    for doc in documents:
        authors = [name_key(a.split()[-1]) for a in (doc.get("authors") or []) if a.split()]
        opening = doc.get("first_page") or ""
        opening_words = {name_key(w) for w in re.findall(r"[^\W\d_][\w'\u2019\-]*", opening[:1500])}
        if first in authors:
            score = 2.0
        elif any(a.startswith(first) and len(a) - len(first) == 1 for a in authors):
            score = 1.5  # a footnote mark glued to the name at extraction ("Borgeaudy")
        elif first in opening_words:
            score = 1.0
        else:
            continue
        doc_year = doc.get("year")
        if year is not None:
            if isinstance(doc_year, int):
                if abs(doc_year - year) > 1:
                    continue
                score += 1.0 if doc_year == year else 0.5
            elif str(year) not in opening and str(year - 1) not in opening and str(year + 1) not in opening:
                score -= 0.5
        if title:
            against = doc.get("title") or opening[:400]
            similarity = fuzz.token_set_ratio(title.lower(), against.lower())
            if similarity < 60:
                continue
            score += similarity / 100
        scored.append((score, doc["source"]))
    scored.sort(key=lambda t: -t[0])
    return [source for _, source in scored]
