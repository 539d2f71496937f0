"""Citation markers and quoted passages in a manuscript's sentences, in linear time.

:func:`find_citations` finds the markers of a sentence (``[12]``, ``[3, 7]``, ``[5-7]``,
``(Devlin et al., 2019)``, ``(A, 2019; B, 2020)``, ``Devlin et al. (2019)``, ``\\cite{...}``)
and resolves each against the reference list (a :class:`ReferenceIndex`, built once per
manuscript); :func:`quoted_passages` finds the passages in quote marks.

A manuscript is a user's file, so nothing here may take more than linear time, whatever the
text: the marker patterns run on RE2 (:func:`linear`: one pass, no backtracking; Python's
``re`` took the square of the length, or worse, on a token of hyphenated capitals before a
year, or ``\\cite[`` repeated), with Python's Unicode classes spelled out (RE2's ``\\w``,
``\\s`` and ``\\d`` are ASCII); the reference list is looked up in dictionaries, not scanned
for each marker; quoted passages are found in one pass over the quote marks. RE2's ``\\b`` is
an ASCII word boundary: a capital or a year right after a non-ASCII letter counts as a word's
start, where Python's ``re`` would not.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import re2

from rag_core.citations.references import Reference, entry_number

__all__ = ["Citation", "ReferenceIndex", "find_citations", "linear", "parse_citations", "quoted_passages",
           "with_reference", "without_markers"]

# Python's \w, \s and \d (str patterns), for RE2, whose own are ASCII.
WORD = r"\p{L}\p{N}_"
SPACE = r"[\t\n\x0b\f\r\x1c-\x1f\x{85}\p{Z}]"
DIGIT = r"\p{Nd}"


def linear(pattern: str):
    """``pattern`` compiled by RE2: matched in time linear in the text, whatever the text."""
    return re2.compile(pattern)


@dataclass
class Citation:
    """A citation marker in a statement, with what it resolves to."""

    marker: str
    key: str | None = None
    surnames: list[str] = field(default_factory=list)
    year: int | None = None
    title: str | None = None
    reference: str | None = None  # the reference-list entry it points to, when found
    doi: str | None = None  # the cited work's identifiers, when its record gives them
    arxiv_id: str | None = None
    via: str | None = None  # the record it was resolved through ("refs.bib entry lewis2020", "Zotero field code")
    first_initial: str | None = None  # the first author's initial, when its entry gives it ("M." Lewis)
    year_suffix: str | None = None  # "a" of "(Lewis et al., 2020a)"
    # the entries it may mean when the list has several with its first author and year and the
    # marker does not say which (two Lewis 2020 entries, "\cite{lewis2020}" in neither's key)
    alternatives: list[Reference] = field(default_factory=list)

    def label(self) -> str:
        if self.reference:
            return self.reference
        return self.marker


TEX_CITE_COMMANDS = "cite|citep|citet|citealp|citeauthor|citeyear|parencite|textcite|autocite|footcite"
TEX_CITE = linear(rf"\\(?:{TEX_CITE_COMMANDS})\*?(?:\[[^\]]*\]){{0,2}}\{{([^}}]*)\}}")
# pandoc's citations: [@key], [@key; @key2, p. 3], [see @key]; a key starts with a letter, digit or _.
PANDOC = linear(rf"\[([^\[\]@]{{0,80}}@[{WORD}][^\[\]]{{0,1000}})\]")
PANDOC_KEY = linear(rf"-?@([{WORD}][{WORD}:.#$%&\-+?<>~/]*[{WORD}]|[{WORD}])")
# A locator may follow the numbers: "[4, pp. 4-5]", "[3, p. 7]", "[2, chap. 3]", "[5, Sec. 2]".
_LOCATOR = r"(?:pp?|pages?|chap|ch|chapter|sec|sect|section|\x{a7}|fig|figs|eq|tab|table|vol|para|art|n)\.?"
NUMERIC = linear(rf"\[({DIGIT}+(?:{SPACE}*[-\x{{2013}},]{SPACE}*{DIGIT}+)*)"
                 rf"(?:,{SPACE}*(?i:{_LOCATOR}){SPACE}*[^\[\]]{{0,40}})?\]")
_NAME = rf"[A-Z][{WORD}'\x{{2019}}\-]+"
_NAMES = rf"{_NAME}(?:{SPACE}+(?:and|&){SPACE}+{_NAME})?(?:{SPACE}+et{SPACE}+al\.?)?"
_YEAR = rf"(?:19|20){DIGIT}{{2}}"
# A year's end is a word's end (Python's \b): RE2's \b is ASCII and misses it after a non-ASCII
# digit ("19\u0663\u0663 "), so the character after the year is spelled out: none but ")", or one
# that is not a word's.
_PAREN = linear(rf"\(([^()]*?\b{_YEAR}[a-z]?(?:[^{WORD}()][^()]*)?)\)")
_AUTHOR_YEAR = linear(rf"(?P<names>{_NAMES}),?{SPACE}+(?P<year>{_YEAR})[a-z]?")
_NARRATIVE = linear(rf"(?P<names>\b{_NAMES}){SPACE}*\((?P<year>{_YEAR})[a-z]?\)")
# Groups by number: the RE2 module looks a name up at some cost on every call.
_NARRATIVE_NAMES, _NARRATIVE_YEAR = _NARRATIVE.groupindex["names"], _NARRATIVE.groupindex["year"]
_AUTHOR_YEAR_NAMES, _AUTHOR_YEAR_YEAR = _AUTHOR_YEAR.groupindex["names"], _AUTHOR_YEAR.groupindex["year"]
_ET_AL = re.compile(r"\s+et\s+al\.?")
_AND = re.compile(r"\s+(?:and|&)\s+")
_ET_AL_OR_OTHERS = re.compile(r"\bet\s+al\b|\band\s+others\b")
_RANGE = re.compile(r"(\d+)\s*[-\u2013]\s*(\d+)")
_KEY_GUESS = re.compile(r"([A-Za-z]+?)[_:\-]?((?:19|20)\d{2})")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?])")
_QUOTE_MARK = re.compile("[\u201c\"]")
_CURLY = re.compile("[\u201c\u201d]")
# Ranges of reference numbers longer than this are not expanded ([1-9999] is not 9,999 citations).
_MAX_RANGE = 50


class ReferenceIndex:
    """A reference list looked up by key, and by first author's surname and year (each marker
    resolved in constant time, not by reading the whole list again)."""

    def __init__(self, references: Sequence[Reference] = ()):
        self.references = list(references)
        self.by_key = {r.key: r for r in self.references if r.key}
        self.by_surname: dict[str, list[Reference]] = {}
        self.by_surname_year: dict[tuple[str, int | None], list[Reference]] = {}
        for reference in self.references:
            if reference.surnames:
                surname = reference.surnames[0].lower()
                self.by_surname.setdefault(surname, []).append(reference)
                self.by_surname_year.setdefault((surname, reference.year), []).append(reference)

    def resolve(self, citation: Citation) -> Citation:
        """``citation`` with the entry it points to (by key, else by first surname and year). When
        several entries have its first author and year and the marker does not tell them apart
        (by its year's letter, "2020a"), none is chosen: they are its ``alternatives``."""
        ref = self.by_key.get(citation.key) if citation.key else None
        if ref is None and citation.surnames and self.references:
            wanted = citation.surnames[0].lower()
            found = (self.by_surname.get(wanted, []) if citation.year is None
                     else self.by_surname_year.get((wanted, citation.year), []))
            if len(found) > 1 and citation.year_suffix:
                found = [r for r in found if r.year_suffix == citation.year_suffix] or found
            if len(found) > 1 and citation.first_initial:  # APA's "(M. Lewis et al., 2020)"
                found = [r for r in found if r.first_initial == citation.first_initial] or found
            if len(found) > 1 and citation.key is None:  # "Devlin et al." is not "Devlin and Marsh"
                found = [r for r in found if _authors_fit(r, citation)] or found
            if len(found) > 1:
                citation.alternatives = list({id(r): r for r in found}.values())
                return citation
            ref = found[0] if found else None
        return with_reference(citation, ref) if ref is not None else citation


def _authors_fit(reference: Reference, citation: Citation) -> bool:
    """Whether an entry has the authors an author-year marker names: "Devlin et al." three or
    more, "Devlin and Marsh" two with Marsh second, "Devlin" one."""
    if _ET_AL.search(citation.marker):
        return len(reference.surnames) >= 3 or bool(_ET_AL_OR_OTHERS.search(reference.text))
    if len(citation.surnames) == 2:
        return len(reference.surnames) == 2 and reference.surnames[1].lower() == citation.surnames[1].lower()
    return len(reference.surnames) == 1


def with_reference(citation: Citation, ref: Reference) -> Citation:
    """``citation`` completed from the entry it points to: a record's (a .bib entry's, a field
    code's) authors and year are the work's; a typed list's fill in what the marker lacks."""
    citation.reference = ref.text
    if ref.via:
        citation.surnames = list(ref.surnames) or citation.surnames
        citation.year = ref.year or citation.year
        citation.first_initial = ref.first_initial or citation.first_initial
    else:
        citation.surnames = citation.surnames or list(ref.surnames)
        citation.year = citation.year or ref.year
        if not citation.first_initial and ref.surnames[:1] == citation.surnames[:1]:
            citation.first_initial = ref.first_initial
    citation.title = ref.title
    citation.doi, citation.arxiv_id, citation.via = ref.doi, ref.arxiv_id, ref.via
    return citation


_NO_REFERENCES = ReferenceIndex()


class _Covered:
    """Whether a position lies inside one of some spans: the spans merged and sorted once, each
    question a binary search (a check against every span was quadratic in the markers)."""

    def __init__(self, spans: list[tuple[int, int]]):
        self.starts: list[int] = []
        self.ends: list[int] = []
        for a, b in sorted(spans):
            if self.ends and a <= self.ends[-1]:
                self.ends[-1] = max(self.ends[-1], b)
            else:
                self.starts.append(a)
                self.ends.append(b)

    def __contains__(self, position: int) -> bool:
        i = bisect.bisect_right(self.starts, position) - 1
        return i >= 0 and position < self.ends[i]


def _numbers(spec: str) -> list[str]:
    out: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        m = _RANGE.fullmatch(part)
        first, last = (entry_number(m.group(1)), entry_number(m.group(2))) if m else (None, None)
        if first is not None and last is not None and first <= last < first + _MAX_RANGE:
            out.extend(str(n) for n in range(first, last + 1))
        elif part.isdigit() and entry_number(part) is not None:
            out.append(part)
    return out


def _name_list(names: str) -> list[str]:
    names = _ET_AL.sub("", names)
    return [n.strip() for n in _AND.split(names) if n.strip()]


def find_citations(sentence: str, references: ReferenceIndex = _NO_REFERENCES
                   ) -> tuple[list[Citation], list[tuple[int, int]]]:
    """The citation markers of a sentence (resolved against the reference list) and their spans."""
    found: list[Citation] = []
    spans: list[tuple[int, int]] = []
    # Each kind of marker is looked for only when the sentence holds the character it starts with.
    for m in TEX_CITE.finditer(sentence) if "\\" in sentence else ():
        spans.append(m.span())
        for key in (k.strip() for k in m.group(1).split(",")):
            if not key:
                continue
            guess = _KEY_GUESS.match(key)
            citation = Citation(marker=f"\\cite{{{key}}}", key=key)
            if guess and key not in references.by_key:
                citation.surnames = [guess.group(1).capitalize()]
                citation.year = int(guess.group(2))
            found.append(references.resolve(citation))
    for m in PANDOC.finditer(sentence) if "@" in sentence else ():
        keys = [k.group(1) for k in PANDOC_KEY.finditer(m.group(1))]
        if not keys:
            continue
        spans.append(m.span())
        for key in keys:
            guess = _KEY_GUESS.match(key)
            citation = Citation(marker=f"[@{key}]", key=key)
            if guess and key not in references.by_key:
                citation.surnames = [guess.group(1).capitalize()]
                citation.year = int(guess.group(2))
            found.append(references.resolve(citation))
    covered_pandoc = _Covered(spans) if "@" in sentence else None
    for m in NUMERIC.finditer(sentence) if "[" in sentence else ():
        if covered_pandoc is not None and m.start() in covered_pandoc:
            continue
        numbers = _numbers(m.group(1))
        if not numbers:
            continue
        spans.append(m.span())
        for number in numbers:
            found.append(references.resolve(Citation(marker=f"[{number}]", key=number)))
    if "(" not in sentence:
        return found, spans
    # A later kind of marker is not read inside an earlier one; markers of one kind never overlap.
    covered = _Covered(spans)
    for m in _NARRATIVE.finditer(sentence):
        if m.start() in covered:
            continue
        names, year = m.group(_NARRATIVE_NAMES), m.group(_NARRATIVE_YEAR)
        spans.append((m.start(_NARRATIVE_YEAR) - 1, m.end()))
        letter = _year_letter(sentence, m.end(_NARRATIVE_YEAR))
        found.append(references.resolve(Citation(marker=f"{names} ({year}{letter or ''})", surnames=_name_list(names),
                                                 year=int(year), year_suffix=letter)))
    covered = _Covered(spans)
    for m in _PAREN.finditer(sentence):
        if m.start() in covered:
            continue
        items = [(item, inner) for item, inner in ((item, _AUTHOR_YEAR.search(item)) for item in m.group(1).split(";"))
                 if inner]
        if not items:
            continue
        spans.append(m.span())
        for item, inner in items:
            names, year = inner.group(_AUTHOR_YEAR_NAMES), inner.group(_AUTHOR_YEAR_YEAR)
            initial = _initial_before(item, inner.start(_AUTHOR_YEAR_NAMES))
            letter = _year_letter(item, inner.end(_AUTHOR_YEAR_YEAR))
            found.append(references.resolve(Citation(
                marker=f"({initial + '. ' if initial else ''}{names}, {year}{letter or ''})",
                surnames=_name_list(names), year=int(year), year_suffix=letter, first_initial=initial)))
    return found, spans


_INITIAL_BEFORE = re.compile(r"(?:^|[\s(])([A-Z])\.\s*$")


def _initial_before(text: str, start: int) -> str | None:
    """The initial written before a cited surname ("M." of APA's "(M. Lewis et al., 2020)"), or None."""
    m = _INITIAL_BEFORE.search(text[max(0, start - 4):start])
    return m.group(1) if m else None


def _year_letter(text: str, end: int) -> str | None:
    """The letter right after a year ("a" of "2020a"), or None."""
    letter = text[end:end + 1]
    return letter if "a" <= letter <= "z" else None


def parse_citations(text: str, *, references: Sequence[Reference] | ReferenceIndex = ()) -> list[Citation]:
    """The citation markers in ``text`` (``[3]``, ``[3, 7]``, ``(Devlin et al., 2019)``,
    ``Devlin et al. (2019)``, ``\\cite{key}``), resolved against the reference list, in the
    order :func:`rag_core.citations.manuscript.extract_statements` finds them (for a marker
    typed or edited by hand)."""
    index = references if isinstance(references, ReferenceIndex) else ReferenceIndex(references)
    return find_citations(text, index)[0]


def without_markers(sentence: str, spans: list[tuple[int, int]]) -> str:
    """The sentence with the markers' spans left out, its spacing tidied."""
    out, pos = [], 0
    for a, b in sorted(spans):
        if a < pos:
            continue
        out.append(sentence[pos:a])
        pos = b
    out.append(sentence[pos:])
    text = " ".join("".join(out).split())
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)


def quoted_passages(sentence: str) -> list[str]:
    """The passages of ``sentence`` in quote marks: between \u201c and \u201d (no other curly
    mark inside), or between two straight marks on one line, the first not after a letter or a
    mark and the second not before one. One pass over the quote marks: the mark that could close
    each one is looked up from where the last look-up ended."""
    out: list[str] = []
    resume = 0  # a passage found ends here: the next one starts after it
    curly_after = -1  # the next curly mark after the last opening looked at
    straight_after = -1  # the next straight mark, likewise
    newline_after = -1
    n = len(sentence)
    for mark in _QUOTE_MARK.finditer(sentence):
        start = mark.start()
        if start < resume:
            continue
        if sentence[start] == "\u201c":
            if curly_after <= start:
                found = _CURLY.search(sentence, start + 1)
                curly_after = found.start() if found else n
            end = curly_after
            if end < n and sentence[end] == "\u201d" and end > start + 1:
                out.append(sentence[start + 1:end])
                resume = end + 1
            continue
        if start > 0 and (_is_word(sentence[start - 1]) or sentence[start - 1] == '"'):
            continue
        if straight_after <= start:
            found = sentence.find('"', start + 1)
            straight_after = found if found >= 0 else n
        end = straight_after
        if end == n or end == start + 1:
            continue
        if newline_after <= start:
            found = sentence.find("\n", start + 1)
            newline_after = found if found >= 0 else n
        if newline_after < end:
            continue
        if end + 1 < n and (_is_word(sentence[end + 1]) or sentence[end + 1] == '"'):
            continue
        out.append(sentence[start + 1:end])
        resume = end + 1
    return out


def _is_word(char: str) -> bool:
    """Python's ``\\w`` for one character."""
    return char.isalnum() or char == "_"
