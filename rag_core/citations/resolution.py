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
from dataclasses import dataclass, field, replace

from rag_core.records.record import name_key, split_name, surname_matches, title_key
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


def _first_author_fits(surname: str, doc: dict, initial: str | None = None) -> tuple[float, str] | None:
    """How well the document's first author fits the cited one: by surname (and, when the citation
    gives the first author's initial and the record a first name, that initial: "M. Lewis" is
    not Patrick Lewis)."""
    authors = [a for a in (doc.get("authors") or []) if isinstance(a, str) and a.split()]
    if authors:
        first = authors[0]
        if surname_matches(first, surname):
            fit = 2.0, "first author"
        else:
            last = name_key(first.split()[-1])
            wanted = name_key(surname)
            if not (last.startswith(wanted) and len(last) - len(wanted) == 1):
                return None
            fit = 1.5, "first author (a mark glued to the name)"
        if initial and not _initial_fits(first, initial):
            return None
        return fit
    opening = doc.get("first_page") or ""
    words = {name_key(w) for w in re.findall(r"[^\W\d_][\w'\u2019\-]*", opening[:_OPENING_CHARS])}
    if name_key(surname) in words:
        return 1.0, "name in its opening lines (no authors on record)"
    return None


def _initial_fits(name: str, initial: str) -> bool:
    """Whether a name's first name starts with ``initial`` (true when the name has no first name)."""
    given = split_name(name)[0]
    letters = name_key(given)
    return not letters or letters[0] == name_key(initial)[:1]


def _title_fit(title: str, doc: dict) -> float | None:
    """How well a title read from the citation's entry agrees with the document, or None when it
    disagrees: its words (small words aside; "pre-training" = "pretraining"; a spelling a letter
    or two apart counts) are nearly all words of the document's recorded title, so a shortened
    title agrees and "Sparse passage expansion for open-domain QA" is not "Dense passage retrieval
    for open-domain QA". A document whose recorded title disagrees (or that has none) still
    agrees when the cited title stands, nearly letter for letter, in its opening lines."""
    from rapidfuzz import fuzz

    wanted = _title_words(title)
    if not wanted:
        return 1.0
    if doc.get("title"):
        share = _share_found(wanted, _title_words(doc["title"]))
        if share >= _TITLE_WORDS_FOUND:
            return share
    cited = title_key(title)
    opening = title_key((doc.get("first_page") or "")[:_TITLE_OPENING_CHARS])
    if len(cited) >= _TITLE_MIN_CHARS and len(cited) <= len(opening):
        aligned = fuzz.partial_ratio(cited, opening) / 100
        if aligned >= _TITLE_IN_OPENING:
            return aligned
    return None


def _title_words(title: str) -> list[str]:
    """A title's words as compared: folded, hyphens joined ("pre-training" is "pretraining"),
    small words left out."""
    folded = title_key(str(title).replace("-", "").replace("\u2010", ""))
    return [w for w in folded.split() if w not in _SMALL_WORDS]


def _share_found(wanted: list[str], words: list[str]) -> float:
    """The share of ``wanted`` found among ``words`` (a plural's s, or one letter in six, apart)."""
    from rapidfuzz import fuzz

    have = set(words)
    found = 0
    for word in wanted:
        if word in have or word.rstrip("s") in {w.rstrip("s") for w in have} \
                or (len(word) >= 6 and any(fuzz.ratio(word, w) >= 84 for w in have)):
            found += 1
    return found / len(wanted)


_SMALL_WORDS = frozenset({"a", "an", "the", "of", "for", "and", "in", "on", "to", "with", "by", "from", "via", "at",
                          "is", "are", "as", "or", "its", "into"})
_TITLE_WORDS_FOUND = 0.8  # the share of a cited title's words that the document's title must have
_TITLE_IN_OPENING = 0.9  # the cited title aligned inside the document's opening lines
_TITLE_MIN_CHARS = 20
_TITLE_OPENING_CHARS = 600


def _citation_of(citation, reference) -> object:
    """A copy of ``citation`` resolved through one of its alternative entries."""
    from rag_core.citations.markers import with_reference

    return with_reference(replace(citation, alternatives=[], reference=None, title=None, doi=None, arxiv_id=None,
                                  via=None, first_initial=None), reference)


def _among_alternatives(citation, infos: Sequence[dict]) -> Resolution:
    """A marker that may mean any of several entries (two Lewis 2020 entries): ambiguous between
    the documents any of them is, or not in collection when none is."""
    alternatives = citation.alternatives
    found = [resolve_citation(_citation_of(citation, ref), infos) for ref in alternatives]
    sources = _sources_of(found)
    surname = citation.surnames[0] if citation.surnames else "?"
    files = {str(ref.via).rsplit(" entry ", 1)[0] for ref in alternatives if ref.via and " entry " in str(ref.via)}
    where = next(iter(files)) if len(files) == 1 else "the reference list"
    which = f"{len(alternatives)} entries of {where} are {surname} {citation.year or ''}".rstrip()
    titles = "; ".join(_short(ref.title or ref.text) for ref in alternatives[:4])
    if not sources:
        return Resolution(citation.marker, "not_in_collection",
                          why=f"{which} ({titles}) and none is in the collection")
    return Resolution(citation.marker, "ambiguous", None, sources,
                      why=f"{which} ({titles}); the marker does not say which")


def _short(text: str, chars: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= chars else text[:chars - 1].rstrip() + "\u2026"


def _sources_of(resolutions: Sequence[Resolution]) -> list[str]:
    sources: list[str] = []
    for resolution in resolutions:
        if resolution.status in ("matched", "ambiguous"):
            sources.extend(s for s in resolution.candidates if s not in sources)
    return sources


def resolve_citation(citation, infos: Sequence[dict]) -> Resolution:
    """The document ``citation`` (a :class:`rag_core.citations.markers.Citation`) means among
    ``infos`` (per document: ``source``, ``title``, ``authors``, ``year``, ``doi``, ``arxiv_id``,
    ``first_page``)."""
    if getattr(citation, "alternatives", None):
        return _among_alternatives(citation, infos)
    found = _by_identifier(citation, infos) or _by_title(citation, infos)
    if found:
        return found
    if not citation.surnames:
        if citation.key and citation.key.isdigit():
            return Resolution(citation.marker, "unresolved", why=f"no entry [{citation.key}] in the reference list")
        return Resolution(citation.marker, "unresolved", why="no author or year to look for")
    surname = citation.surnames[0]
    year = citation.year
    initial = getattr(citation, "first_initial", None)
    scored: list[tuple[float, str, str, str]] = []
    blocked: list[str] = []  # documents whose first author and year fit, but not the initial or the title
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
        if initial and _first_author_fits(surname, doc, initial) is None:
            blocked.append(f"{doc['source']} is by {_first_author(doc)}, not {initial}. {surname}")
            continue
        if initial and doc.get("authors"):
            why = why.replace(f" {surname}", f" {initial}. {surname}", 1)
        if citation.title:
            agreement = _title_fit(citation.title, doc)
            if agreement is None:
                blocked.append(f"{doc['source']} has another title than \u201c{_short(citation.title)}\u201d")
                continue
            score += agreement
            why += " + title"
        scored.append((score, doc["source"], why, note))
    if not scored:
        wanted = f"{initial}. {surname}" if initial else surname
        why = f"no document's first author is {wanted}{f' with a year within one of {year}' if year else ''}"
        if blocked:
            why += f" ({'; '.join(blocked[:3])})"
        return Resolution(citation.marker, "not_in_collection", why=why)
    scored.sort(key=lambda t: -t[0])
    best = [t for t in scored if t[0] == scored[0][0]]
    if len(best) > 1:
        return Resolution(citation.marker, "ambiguous", None, [t[1] for t in best], best[0][2])
    _, source, why, note = scored[0]
    return Resolution(citation.marker, "matched", source, [source], why, note)


def _first_author(doc: dict) -> str:
    authors = [a for a in (doc.get("authors") or []) if isinstance(a, str) and a.split()]
    return " ".join(authors[0].split()) if authors else "?"
