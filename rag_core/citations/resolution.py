"""Which document of the collection a citation means, the way a reader works it out.

:func:`resolve_citation` gives one :class:`Resolution` per citation marker:

* a DOI or arXiv id the citation carries (from the ``.bib`` entry its ``\\cite`` key names, or the
  CSL-JSON of a Word field code) finds the document with that identifier;
* else its record's title, when the citation has one, finds the document with that title;
* else the FIRST author's surname (diacritics folded: Rücklé = Ruckle) and the year: a document
  fits when its first author has that surname and its year is the cited one or one off (an
  arXiv year against the venue year: the resolution says so). A document with no authors on
  record fits when the surname stands in its opening lines.

``matched`` names one document and why; ``ambiguous`` names the documents that fit equally; ``not
in collection`` says that no document is the cited work (a check then never calls the statement
misattributed); ``unresolved`` is a numeric marker whose entry is not in the reference list.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_core.records.record import name_key, surname_matches, title_key
from rag_core.settings import RECORD_TITLE_MATCH

__all__ = ["RESOLUTION_STATUSES", "Resolution", "resolutions_text", "resolve_citation"]

RESOLUTION_STATUSES = ("matched", "ambiguous", "not_in_collection", "unresolved")
_OPENING_CHARS = 600  # a document without authors on record: its first lines hold its authors


@dataclass
class Resolution:
    """What one citation marker was resolved to."""

    marker: str
    status: str
    source: str | None = None
    candidates: list[str] = field(default_factory=list)
    why: str = ""
    year_note: str = ""

    def text(self) -> str:
        """ "(Lewis et al., 2020) → matched to rag.pdf (first author Lewis + year 2020)"."""
        if self.status == "matched":
            note = f"; {self.year_note}" if self.year_note else ""
            return f"{self.marker} \u2192 matched to {self.source} ({self.why}{note})"
        if self.status == "ambiguous":
            return f"{self.marker} \u2192 ambiguous: {', '.join(self.candidates)} ({self.why})"
        if self.status == "not_in_collection":
            return f"{self.marker} \u2192 not in collection ({self.why})"
        return f"{self.marker} \u2192 unresolved ({self.why})"

    def to_dict(self) -> dict:
        return {"marker": self.marker, "status": self.status, "source": self.source,
                "candidates": list(self.candidates), "why": self.why, "year_note": self.year_note,
                "text": self.text()}


def resolutions_text(resolutions: Sequence[Resolution | dict]) -> str:
    """Every resolution of a statement on one line, separated by " · "."""
    return " \u00b7 ".join(r.text() if isinstance(r, Resolution) else str(r.get("text", "")) for r in resolutions)


def _by_identifier(citation, infos: Sequence[dict]) -> Resolution | None:
    for attr, label in (("doi", "DOI"), ("arxiv_id", "arXiv id")):
        value = getattr(citation, attr, None)
        if not value:
            continue
        fits = [d["source"] for d in infos if str(d.get(attr) or "").lower() == str(value).lower()]
        if fits:
            via = f" of {citation.via}" if getattr(citation, "via", None) else ""
            return _decided(citation.marker, fits, f"{label} {value}{via}")
    return None


def _by_title(citation, infos: Sequence[dict]) -> Resolution | None:
    from rapidfuzz import fuzz

    if not citation.title or not getattr(citation, "via", None):
        return None  # a reference list's title guess is only a hint (used below), a record's is a match
    wanted = title_key(citation.title)
    scored = [(fuzz.ratio(wanted, title_key(d.get("title"))), d["source"]) for d in infos if d.get("title")]
    best = max((s for s, _ in scored), default=0)
    if best < RECORD_TITLE_MATCH:
        return None
    return _decided(citation.marker, [s for score, s in scored if score == best], f"title of {citation.via}")


def _decided(marker: str, fits: list[str], why: str) -> Resolution:
    fits = list(dict.fromkeys(fits))
    if len(fits) == 1:
        return Resolution(marker, "matched", fits[0], fits, why)
    return Resolution(marker, "ambiguous", None, fits, why)


def _first_author_fits(surname: str, doc: dict) -> tuple[float, str] | None:
    authors = [a for a in (doc.get("authors") or []) if isinstance(a, str) and a.split()]
    if authors:
        first = authors[0]
        if surname_matches(first, surname):
            return 2.0, "first author"
        last = name_key(first.split()[-1])
        wanted = name_key(surname)
        if last.startswith(wanted) and len(last) - len(wanted) == 1:
            return 1.5, "first author (a mark glued to the name)"
        return None
    opening = doc.get("first_page") or ""
    words = {name_key(w) for w in re.findall(r"[^\W\d_][\w'\u2019\-]*", opening[:_OPENING_CHARS])}
    if name_key(surname) in words:
        return 1.0, "name in its opening lines (no authors on record)"
    return None


def resolve_citation(citation, infos: Sequence[dict]) -> Resolution:
    """The document ``citation`` (a :class:`rag_core.citations.markers.Citation`) means among
    ``infos`` (per document: ``source``, ``title``, ``authors``, ``year``, ``doi``, ``arxiv_id``,
    ``first_page``)."""
    from rapidfuzz import fuzz

    found = _by_identifier(citation, infos) or _by_title(citation, infos)
    if found:
        return found
    if not citation.surnames:
        if citation.key and citation.key.isdigit():
            return Resolution(citation.marker, "unresolved", why=f"no entry [{citation.key}] in the reference list")
        return Resolution(citation.marker, "unresolved", why="no author or year to look for")
    surname = citation.surnames[0]
    year = citation.year
    scored: list[tuple[float, str, str, str]] = []
    for doc in infos:
        fit = _first_author_fits(surname, doc)
        if fit is None:
            continue
        score, how = fit
        why, note = f"{how} {surname}", ""
        doc_year = doc.get("year")
        if year is not None and isinstance(doc_year, int):
            if abs(doc_year - year) > 1:
                continue
            if doc_year == year:
                score += 1.0
                why += f" + year {year}"
            else:
                score += 0.5
                why += f" + year {year}"
                note = f"the document's year is {doc_year}: one off, tolerated (arXiv and venue years differ)"
        elif year is not None:
            why += " (the document's year is unknown)"
        if citation.title:
            against = doc.get("title") or (doc.get("first_page") or "")[:400]
            similarity = fuzz.token_set_ratio(citation.title.lower(), against.lower())
            if similarity < 60:
                continue
            score += similarity / 100
        scored.append((score, doc["source"], why, note))
    if not scored:
        return Resolution(citation.marker, "not_in_collection",
                          why=f"no document's first author is {surname}"
                              f"{f' with a year within one of {year}' if year else ''}")
    scored.sort(key=lambda t: -t[0])
    best = [t for t in scored if t[0] == scored[0][0]]
    if len(best) > 1:
        return Resolution(citation.marker, "ambiguous", None, [t[1] for t in best], best[0][2])
    _, source, why, note = scored[0]
    return Resolution(citation.marker, "matched", source, [source], why, note)
