"""One bibliographic record: its fields checked and normalised, and names and titles folded.

A record is a dict with ``key`` (a citation key, or None), ``type``, ``title``, ``authors`` (names
as printed, "Patrick Lewis", "George van den Driessche"), ``year`` (int), ``doi`` (lower case,
without ``https://doi.org/``), ``arxiv_id`` (without its version) and ``venue``; any may be None.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rag_core.output.render import printable_text
from rag_core.pdf.metadata import arxiv_year, find_arxiv_id

__all__ = ["FIELDS", "RecordsFile", "clean_doi", "clean_record", "first_surname", "name_key", "split_name",
           "surname_matches", "title_key"]

FIELDS = ("key", "type", "title", "authors", "year", "doi", "arxiv_id", "venue")
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_DOI = re.compile(r"^10\.\d{4,9}/\S+$")
_ARXIV_BARE = re.compile(r"^(?:arxiv:\s*)?(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?$", re.IGNORECASE)
_YEAR = re.compile(r"(?<!\d)((?:1[5-9]|20)\d{2})(?!\d)")
# The longest a field may be: a title, a venue or a name past this is not one.
_MAX_FIELD = 2000
_MAX_AUTHORS = 2000


@dataclass
class RecordsFile:
    """What a records file held: its ``records``, its ``kind`` and ``notes`` (blocks passed over);
    for a Zotero folder, ``pdfs`` maps a record's position to its stored PDF's path."""

    name: str
    kind: str
    records: list[dict]
    notes: list[str] = field(default_factory=list)
    pdfs: dict[int, Path] = field(default_factory=dict)


def name_key(name: str) -> str:
    """A surname or name folded for comparison: accents removed, letters only, lower case
    ("Rücklé" is "ruckle")."""
    folded = unicodedata.normalize("NFKD", str(name))
    return "".join(c for c in folded if c.isalpha() and not unicodedata.combining(c)).casefold()


def title_key(title: str | None) -> str:
    """A title folded for comparison: accents, case, punctuation and braces left out, words kept."""
    folded = unicodedata.normalize("NFKD", str(title or ""))
    kept = "".join(c if c.isalnum() else " " for c in folded if not unicodedata.combining(c))
    return " ".join(kept.casefold().split())


def first_surname(name: str) -> str:
    """The surname of a name as printed: before the comma of "Lewis, Patrick", else the last word."""
    _given, particle, family, suffix = split_name(name)
    if "," in (name := " ".join(str(name).split())).removesuffix(f", {suffix}" if suffix else ""):
        return " ".join(p for p in (particle, family) if p)  # the words before the comma
    return family


_SUFFIX = re.compile(r"^(?:jr|sr|ii|iii|iv|v)\.?$", re.IGNORECASE)


def split_name(name: str) -> tuple[str, str, str, str]:
    """``(given, particle, family, suffix)`` of a name as printed, for BibTeX's and CSL's fields:
    "Lewis, Patrick" by its comma; otherwise the family name is the last word, with the
    lower-case particles before it ("Jan van der Berg": "van der", "Berg"), and a ", Jr" or
    ", III" at the end is the suffix. A family name of two words without a particle ("Ivan
    Rodriguez Montoya") cannot be told from a flat name: the last word is taken."""
    text = " ".join(str(name).split())
    suffix = ""
    head, _, tail = text.rpartition(",")
    if head and _SUFFIX.match(tail.strip()):
        text, suffix = head.strip(), tail.strip()
    if "," in text:
        family, given = (part.strip() for part in text.split(",", 1))
        words = family.split()
        cut = next((i for i, w in enumerate(words) if not w[:1].islower()), len(words) - 1)
        return given, " ".join(words[:cut]), " ".join(words[cut:]), suffix
    words = text.split()
    if not suffix and len(words) >= 3 and _SUFFIX.match(words[-1]) and words[-1].lower().rstrip(".") != "v":
        suffix, words = words[-1], words[:-1]  # "Martin Luther King Jr." ("V" is more often an initial)
    if len(words) < 2:
        return "", "", " ".join(words), suffix
    start = next((i for i in range(1, len(words) - 1) if words[i][:1].islower()), len(words) - 1)
    return " ".join(words[:start]), " ".join(words[start:-1]), words[-1], suffix


def surname_matches(name: str, surname: str) -> bool:
    """Whether ``surname`` is the surname of ``name``: the word before a comma, or a run of the
    name's words after the first ("Rodriguez-Montoya" of "Ivan Rodriguez Montoya", "van den
    Driessche" of "George van den Driessche"), folded."""
    wanted = name_key(surname)
    if not wanted:
        return False
    name = " ".join(str(name).split())
    if "," in name:
        return name_key(name.split(",", 1)[0]) == wanted
    words = name.split()
    if len(words) == 1:
        return name_key(words[0]) == wanted
    if name_key(words[-1]) == wanted:
        return True
    return any(name_key("".join(words[i:j])) == wanted
               for i in range(1, len(words)) for j in range(i + 1, len(words) + 1))


def clean_doi(value) -> str | None:
    """A DOI without its resolver prefix, in lower case, or None when ``value`` is not one (a
    control character or an escape sequence in it: not a DOI)."""
    raw = str(value or "")
    if printable_text(raw) != raw.replace("\t", " ").replace("\n", " ").replace("\r", " "):
        return None
    text = _DOI_PREFIX.sub("", " ".join(raw.split())).rstrip(".,;").lower()
    return text if _DOI.match(text) else None


def clean_arxiv(value) -> str | None:
    text = " ".join(str(value or "").split())
    m = _ARXIV_BARE.match(text)
    found = m.group(1) if m else find_arxiv_id(text)
    if not found:
        m = re.search(r"arxiv\.org/(?:abs|pdf)/(\d{4}\.\d{4,5})", text)
        found = m.group(1) if m else None
    return found if found and arxiv_year(found) else None


def _text(value) -> str | None:
    """A field as kept: control characters and escape sequences removed, white space folded,
    braces dropped, capped."""
    if value is None:
        return None
    text = " ".join(printable_text(value).split())
    text = text.replace("{", "").replace("}", "")
    return text[:_MAX_FIELD] or None


def _year(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 1500 <= value <= 2100 else None
    m = _YEAR.search(str(value or ""))
    return int(m.group(1)) if m else None


def clean_record(raw: Mapping) -> dict:
    """``raw`` with every field of :data:`FIELDS` checked: text tidied and capped, authors a list
    of names, the year an int, the DOI and arXiv id normalised (None when they are not one)."""
    authors = raw.get("authors")
    if isinstance(authors, str):
        authors = [a for a in re.split(r"\s+and\s+|;", authors) if a.strip()]
    names = [n for n in (_text(a) for a in (authors or [])[:_MAX_AUTHORS] if isinstance(a, str)) if n]
    return {
        "key": _text(raw.get("key")), "type": _text(raw.get("type")), "title": _text(raw.get("title")),
        "authors": names or None, "year": _year(raw.get("year")), "doi": clean_doi(raw.get("doi")),
        "arxiv_id": clean_arxiv(raw.get("arxiv_id")), "venue": _text(raw.get("venue")),
    }
