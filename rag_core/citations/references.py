"""A manuscript's reference list: where it starts, its entries, and each entry's authors, year and title.

:func:`split_references` cuts a text at its last "References" heading and reads the entries
below it (numbered ``[12]`` / ``12.`` lists, or author-year entries that start with a name);
:func:`parse_reference` reads one entry. Linear in the length of the text: each line is read
once, an entry's lines are joined once at the end (not copied for every line), and the title
in quotes is found in one pass over the entry's quote marks.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from rag_core.settings import MAX_REFERENCE_NUMBER_DIGITS

__all__ = ["REFERENCE_HEADING", "Reference", "entry_number", "last_heading", "parse_reference", "split_references",
           "surnames"]


@dataclass
class Reference:
    """One entry of the manuscript's reference list: ``key`` ("12", a BibTeX key or None),
    the entry's ``text``, the authors' ``surnames`` (first author first), ``year``, ``title``."""

    key: str | None
    text: str
    surnames: list[str] = field(default_factory=list)
    year: int | None = None
    title: str | None = None
    doi: str | None = None  # from a .bib entry or a field code's CSL-JSON
    arxiv_id: str | None = None
    via: str | None = None  # where the entry came from when it is a record: "refs.bib entry lewis2020"


REFERENCE_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*|\d+\.?[ \t]+)?(?:references|bibliography|works cited|literature cited|"
    r"reference list)[ \t]*:?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_YEAR = re.compile(r"\b((?:19|20)\d{2})[a-z]?\b")
_NUMBERED_ENTRY = re.compile(r"^\s*(?:\[(\d+)\]|(\d+)\.)\s+(.*)$")
_NOT_A_NAME = re.compile(r"^(?:In|Proceedings|Association|Conference|Journal|Transactions|Advances|pages)\b")
_NAME = r"[A-Z][\w'\u2019\-\u02b0-\u02ff\u0300-\u036f]*"
_SURNAME_FIRST = re.compile(rf"^{_NAME},\s+[A-Z]")
_INITIAL_FIRST = re.compile(r"^[A-Z]\.\s")
_NAMES_FIRST = re.compile(rf"^{_NAME}(?:\s+{_NAME}\.?){{1,3}}(?:,|\s+and\s)")
_TITLE_END = re.compile(r"(.{8,}?)(?<!\b[A-Z])\.(?:\s|$)")
_INITIALS = re.compile(r"(?:[A-Z]\.?-?)+")
_AUTHOR_SEPARATORS = re.compile(r",|;|\band\b|&")
_ET_AL = re.compile(r"\bet al\.?")
_OPENING_QUOTE = re.compile("[\u201c\"]")
_CLOSING_QUOTE = re.compile("[\u201d\"]")


def entry_number(digits: str) -> int | None:
    """The number of a numbered entry or marker, or None when it has too many digits to be one."""
    return int(digits) if len(digits) <= MAX_REFERENCE_NUMBER_DIGITS else None


def last_heading(text: str) -> re.Match | None:
    """The last "References" (or "Bibliography", ...) heading of ``text``: its list starts after it."""
    last = deque(REFERENCE_HEADING.finditer(text), maxlen=1)
    return last[0] if last else None


def split_references(text: str) -> tuple[str, list[Reference]]:
    """The text before the reference list, and the parsed entries (empty when there is none)."""
    heading = last_heading(text)
    if heading is None:
        return text, []
    body, tail = text[:heading.start()], text[heading.end():]
    entries: list[tuple[str | None, list[str]]] = []  # (key, the entry's lines, joined at the end)
    expected: int | None = None  # numbered entries count up ("228. Springer." ends a page range)
    after_blank = False
    for line in tail.splitlines():
        stripped = line.strip()
        if not stripped:
            after_blank = True
            continue
        m = _NUMBERED_ENTRY.match(stripped)
        number = entry_number(m.group(1) or m.group(2)) if m else None
        if m and number is not None and ((expected is None and not entries) or number == expected):
            entries.append((str(number), [m.group(3)]))  # a numbered list from its start
            expected = number + 1
        elif entries and entries[-1][0] is not None:
            entries[-1][1].append(stripped)  # a numbered entry runs on until the next number
        elif entries and not (entries[-1][1][-1].endswith(".")
                              and (_starts_entry(stripped) or (after_blank and stripped[0].isupper()))):
            entries[-1][1].append(stripped)
        else:
            entries.append((None, [stripped]))
        after_blank = False
    references = []
    for key, lines in entries:
        entry = " ".join(lines)
        if entry.strip():
            references.append(parse_reference(entry, key=key))
    return body, references


def _starts_entry(line: str) -> bool:
    """An unnumbered reference entry starts with a name: "Devlin, J.", "J. Devlin,", "Jacob Devlin,"."""
    if _NOT_A_NAME.match(line):
        return False
    return bool(_SURNAME_FIRST.match(line) or _INITIAL_FIRST.match(line) or _NAMES_FIRST.match(line))


def parse_reference(entry: str, *, key: str | None = None) -> Reference:
    """One entry's authors (surnames), year and title (in quotes, or the sentence after the year)."""
    entry = " ".join(entry.split())
    year_match = _YEAR.search(entry)
    year = int(year_match.group(1)) if year_match else None
    authors_part = entry[:year_match.start()] if year_match else entry[:120]
    quoted = _quoted_title(entry)
    if quoted:
        authors_part = entry[:quoted[0]]
    title = quoted[1].strip() if quoted else None
    if title is None and year_match:
        after = entry[year_match.end():].lstrip(").,:; ")
        m = _TITLE_END.match(after)
        if m:
            title = m.group(1).strip()
    return Reference(key=key, text=entry, surnames=surnames(authors_part), year=year, title=title)


def _quoted_title(entry: str) -> tuple[int, str] | None:
    """Where the first title in quotes starts and what it says: an opening mark (\u201c or "), at
    least eight characters with no closing mark, a closing mark (\u201d or "), a comma or full
    stop before it left out. One pass: the closing mark after each opening one is looked up from
    where the last look-up ended (the pattern that did this took the square of the length for an
    entry of many opening marks)."""
    closing = -1
    for opening in _OPENING_QUOTE.finditer(entry):
        start = opening.start()
        if closing <= start:
            found = _CLOSING_QUOTE.search(entry, start + 1)
            if found is None:
                return None  # no closing mark after this one, so none after any later one either
            closing = found.start()
        inner = entry[start + 1:closing]
        if inner[-1:] in (",", ".") and len(inner) - 1 >= 8:
            return start, inner[:-1]
        if len(inner) >= 8:
            return start, inner
    return None


def surnames(authors: str) -> list[str]:
    """Surnames from the author part of an entry: "J. Devlin, M.-W. Chang and K. Lee",
    "Devlin, J., Chang, M.-W.", "Jacob Devlin, Ming-Wei Chang"."""
    authors = authors.strip(" .,(")
    authors = _ET_AL.sub("", authors)
    parts = [p.strip() for p in _AUTHOR_SEPARATORS.split(authors) if p.strip()]
    names: list[str] = []
    i = 0
    while i < len(parts):
        words = [w for w in parts[i].split() if w]
        if not words:
            i += 1
            continue
        if len(words) == 1 and not _is_initials(words[0]):
            # "Devlin, J." : a surname followed by its initials
            names.append(words[0])
            if i + 1 < len(parts) and all(_is_initials(w) for w in parts[i + 1].split()):
                i += 1
        elif not all(_is_initials(w) for w in words):
            surname = [w for w in words if not _is_initials(w)][-1]
            names.append(surname)
        i += 1
    return [n.strip(".") for n in names if n[:1].isupper()]


def _is_initials(word: str) -> bool:
    return bool(_INITIALS.fullmatch(word))
