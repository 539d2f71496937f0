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
    first_initial: str | None = None  # the first author's first initial, when the entry gives it ("M." Lewis)
    year_suffix: str | None = None  # "a" of "2020a"


REFERENCE_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*|\d+\.?[ \t]+)?(?:references|bibliography|works cited|literature cited|"
    r"reference list)[ \t]*:?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_YEAR = re.compile(r"\b((?:19|20)\d{2})([a-z])?\b")
_NUMBERED_ENTRY = re.compile(r"^\s*(?:\[(\d+)\]|(\d+)\.|\((\d+)\)|(\d+)(?=\s+[A-Z]))\s+(.*)$")
_NUMBER_STYLES = ("bracket", "dot", "paren", "bare")
_MAX_NUMBER_GAP = 10
_NOT_A_NAME = re.compile(r"^(?:In|Proceedings|Association|Conference|Journal|Transactions|Advances|pages)\b")
_NAME = r"[A-Z][\w'\u2019\-\u02b0-\u02ff\u0300-\u036f]*"
_SURNAME_FIRST = re.compile(rf"^{_NAME},\s+[A-Z]")
_INITIAL_FIRST = re.compile(r"^[A-Z]\.\s")
_NAMES_FIRST = re.compile(rf"^{_NAME}(?:\s+{_NAME}\.?){{1,3}}(?:,|\s+and\s)")
_TITLE_END = re.compile(r"(.{8,}?)(?<!\b[A-Z])[.?!](?:\s|$)")
_INITIALS = re.compile(r"(?:[A-Z]\.?-?)*[A-Z]\.?(?:-[a-z]\.?)?")  # "J." "M.-W." "JK" "W.-t."
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
    style: str | None = None  # how the list numbers its entries: "[1]", "1.", "(1)" or "1 "
    last = 0
    after_blank = False
    for line in tail.splitlines():
        stripped = line.strip()
        if not stripped:
            after_blank = True
            continue
        numbered = _numbered(stripped)
        if numbered is not None and _continues_numbering(numbered, style, last, first=not entries):
            number, kind, text = numbered
            entries.append((str(number), [text]))
            style, last = kind, number
        elif entries and entries[-1][0] is not None:
            entries[-1][1].append(stripped)  # a numbered entry runs on until the next number
        elif entries and not (_ends_entry(entries[-1][1][-1])
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


def _numbered(line: str) -> tuple[int, str, str] | None:
    """``(number, style, text)`` of a line that starts like a numbered entry: "[12] ...", "12. ...",
    "(12) ..." or "12 Devlin, J. ..."."""
    m = _NUMBERED_ENTRY.match(line)
    if m is None:
        return None
    style = next(kind for kind, group in zip(_NUMBER_STYLES, m.groups()[:-1], strict=True) if group is not None)
    digits = next(group for group in m.groups()[:-1] if group is not None)
    number = entry_number(digits)
    return (number, style, m.group(m.lastindex)) if number is not None else None


def _continues_numbering(numbered: tuple[int, str, str], style: str | None, last: int, *, first: bool) -> bool:
    """Whether a numbered line starts the next entry: the list's first line starts a numbered list;
    later, a number of the list's own style above the last one (a gap in the numbering, "[5]"
    then "[8]", is still an entry). Unbracketed numbers may skip at most a few (a line "228.
    Springer." that ends a page range is not entry 228 of a list at 12); "12 Devlin" needs the
    list to start at 1."""
    number, kind, _ = numbered
    if first:
        return kind != "bare" or number == 1
    if kind != style or number <= last:
        return False
    return kind == "bracket" or number - last <= _MAX_NUMBER_GAP


def _ends_entry(line: str) -> bool:
    """Whether a line can end an entry: a full stop, or a DOI or address (APA ends with one, no full stop)."""
    return line.endswith(".") or bool(_ENDS_WITH_LINK.search(line))


_ENDS_WITH_LINK = re.compile(r"(?:https?://|doi:\s*|\b10\.\d{4,9}/)\S+$", re.IGNORECASE)


def _starts_entry(line: str) -> bool:
    """An unnumbered reference entry starts with a name: "Devlin, J.", "J. Devlin,", "Jacob Devlin,"."""
    if _NOT_A_NAME.match(line):
        return False
    return bool(_SURNAME_FIRST.match(line) or _INITIAL_FIRST.match(line) or _NAMES_FIRST.match(line))


def parse_reference(entry: str, *, key: str | None = None) -> Reference:
    """One entry's authors (surnames and the first author's initial), year and title, read the way
    a reader reads it: the author list first (names up to the full stop, year, quote mark or
    "et al." that ends it), then the year when it follows the names (APA's "(2019).", ACL's
    "2019."), then the title (in quotes, or the sentence after the names and year); a year
    that does not follow the names is the entry's last one (IEEE, Nature, Vancouver, "In ACL,
    2020."), never a page range's or an arXiv id's digits."""
    entry = " ".join(entry.split())
    block = _author_block(entry)
    if block is None:
        return _parse_loosely(entry, key)
    end, names = block
    rest = entry[end:].lstrip(" .,;:")
    year = suffix = None
    m = _LEADING_YEAR.match(rest)
    if m:
        year, suffix = int(m.group(1)), m.group(2) or None
        rest = rest[m.end():].lstrip(" .,;:)")
    quoted = _quoted_title(rest)
    if quoted and not rest[:quoted[0]].strip(" .,;:("):
        title: str | None = quoted[1].strip()
    else:
        m = _FIRST_SENTENCE.match(rest)
        title = m.group(1).strip() if m else (rest.rstrip(" .") or None if _LOOSE_YEAR.search(rest) is None else None)
    if year is None:
        year, suffix = _last_year(entry[end:])
    return Reference(key=key, text=entry, surnames=[n for n, _ in names], year=year, title=title,
                     first_initial=names[0][1] if names else None, year_suffix=suffix)


def _parse_loosely(entry: str, key: str | None) -> Reference:
    """An entry whose author list cannot be read: the words before the first year (or quoted
    title) are its authors, the sentence after the year its title."""
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
    return Reference(key=key, text=entry, surnames=surnames(authors_part), year=year, title=title,
                     year_suffix=(year_match.group(2) or None) if year_match else None)


_MAX_AUTHOR_WORDS = 200  # an author list longer than this is not read as one
_PARTICLES = frozenset({"van", "von", "de", "der", "den", "da", "di", "du", "la", "le", "dos", "das", "del", "della",
                        "y", "bin", "ten", "ter", "zu", "al", "el"})
_NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv"})
_YEAR_WORD = re.compile(r"^\(?((?:19|20)\d{2})([a-z])?\)?[.,;:]*$|^\(?n\.\s?d\.\)?[.,;:]*$")
_LEADING_YEAR = re.compile(r"^\(?((?:19|20)\d{2})([a-z])?\b\)?")
_FIRST_SENTENCE = re.compile(r"(.{3,}?)(?<!\b[A-Z])[.?!](?:\s|$)")
_LOOSE_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_WORD_INITIALS = re.compile(r"(?:[A-Z]\.?-?){1,4}(?:-[a-z]\.?)?|(?:[A-Z][a-z]?\.-?){1,3}")  # "J." "M.-W." "JK" "Ch."
_DOTTED_INITIALS = re.compile(r"(?:[A-Z]\.-?)+[,;]?")  # "S." of "Lewis, P. S." (not the title's "BERT:")
_BARE_INITIALS = re.compile(r"[A-Z]{1,3}")  # Vancouver's "Devlin J", "Chang MW"
_QUOTES = "\"\u201c\u201e\u00ab'\u2018"
_STRIP = ".,;:"


def _author_block(entry: str) -> tuple[int, list[tuple[str, str | None]]] | None:
    """Where an entry's author list ends, and its names as (surname, first initial), first
    author first; None when no author list can be read."""
    words = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", entry[:4000])]
    pieces: list[list[str]] = [[]]
    end = None
    i = 0
    while i < len(words) and i < _MAX_AUTHOR_WORDS:
        start, stop, word = words[i]
        core = word.strip(_STRIP + "()")
        nxt = words[i + 1][2] if i + 1 < len(words) else ""
        if _YEAR_WORD.match(word) or word[0] in _QUOTES:
            end = start
            break
        if word in ("and", "&", "and,", "\u2026", "...", "\u2026,"):  # APA's "…" before the last of many authors
            pieces.append([])
            i += 1
            continue
        if word == "et" and nxt.startswith("al"):
            end = words[i + 1][1]
            break
        if word.startswith("et al") or word.rstrip(_STRIP) == "others":  # "..., and others. 2022."
            end = stop
            break
        if not core or not (core[0].isupper() or core.lower() in _PARTICLES):
            end = start  # a word no name has: the title has begun (its author list had no full stop)
            break
        pieces[-1].append(core)
        trailing = word[len(word.rstrip(_STRIP)):]
        if "," in trailing or ";" in trailing:
            pieces.append([])
        elif "." in trailing and core.lower() not in _NAME_SUFFIXES:
            if _WORD_INITIALS.fullmatch(core) and not _completes_name(pieces, nxt):
                pass  # a leading or middle initial: "M. Lewis", "Aidan N. Gomez"
            elif nxt in ("and", "&", "et", "et.") or nxt.startswith("et al") or _YEAR_WORD.match(nxt) \
                    or (_DOTTED_INITIALS.fullmatch(nxt) and _WORD_INITIALS.fullmatch(core)):
                pieces.append([])  # "Lewis, P. and ...", "Thakur, N. (2021).", "Lewis, P. et al."
            else:
                end = stop  # the full stop after the last name
                break
        i += 1
    if end is None:
        return None
    names = _names([p for p in pieces if p])
    return (end, names) if names else None


def _completes_name(pieces: list[list[str]], nxt: str) -> bool:
    """Whether the initial just read ends a name: it follows a surname in its piece (Vancouver's
    "Toutanova K."), or its piece is initials after a lone surname ("Lewis, P."). Not a middle
    initial ("Aidan N. Gomez"): in a list of given names first, or before a name and a comma."""
    current = pieces[-1]
    previous = pieces[-2] if len(pieces) > 1 else []
    if len(previous) == 1 and not _is_initials(previous[0]) and all(_is_initials(w) for w in current):
        return True
    if not any(not _is_initials(w) for w in current[:-1]):
        return False  # initials only so far: they lead a name
    done = [p for p in pieces[:-1] if len(p) >= 2]
    if any(_BARE_INITIALS.fullmatch(p[-1]) for p in done):
        return True  # Vancouver: "Devlin J, Chang MW, Lee K, Toutanova K."
    if any(not _is_initials(p[0]) and not _is_initials(p[-1]) for p in done):
        return False  # given names first: "Ashish Vaswani, ..., Aidan N. Gomez"
    name = nxt.rstrip(_STRIP)
    return not (name[:1].isupper() and not _is_initials(name) and nxt[len(name):][:1] in (",", "."))


def _names(pieces: list[list[str]]) -> list[tuple[str, str | None]]:
    """(surname, first initial) of each name: "J. Devlin", "Jacob Devlin", "Devlin J" (Vancouver),
    and "Devlin" followed by a piece "J." or "Jacob" ("Devlin, J.", Chicago's "Devlin, Jacob")."""
    names: list[tuple[str, str | None]] = []
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        if len(piece) == 1 and not _is_initials(piece[0]):
            given = None
            following = pieces[i + 1] if i + 1 < len(pieces) else []
            if following and (all(_is_initials(w) for w in following)
                              or (len(following) == 1 and not names)):  # "Devlin, J." / "Devlin, Jacob, ..."
                given = following[0]
                i += 1
            names.append((piece[0], _initial(given)))
        elif all(_is_initials(w) for w in piece):
            pass  # initials alone: part of a name already read
        elif len(piece) >= 2 and _BARE_INITIALS.fullmatch(piece[-1]) and not _is_initials(piece[0]):
            names.append((" ".join(w for w in piece[:-1] if not _is_initials(w)).split()[-1], piece[-1][0]))
        else:
            surname = [w for w in piece if not _is_initials(w) and w.lower() not in _NAME_SUFFIXES][-1]
            names.append((surname, _initial(piece[0]) if piece[0] != surname else None))
        i += 1
    return [(n.strip("."), g) for n, g in names if n[:1].isupper()]


def _initial(given: str | None) -> str | None:
    return given[0].upper() if given and given[0].isalpha() else None


_PAGES_BEFORE = re.compile(r"(?:\bpp?\.|\bpages?)\s*$")
_RANGE_OR_ID_AFTER = re.compile(r"[./]\d|\s*[\-\u2013]\s*\d")


def _last_year(text: str) -> tuple[int | None, str | None]:
    """The entry's last year and its letter ("2020a"), leaving out page ranges ("pp. 2001-2010"),
    arXiv ids ("2005.11401") and DOIs."""
    found = (None, None)
    for m in _YEAR.finditer(text):
        before, after = text[max(0, m.start() - 7):m.start()], text[m.end():m.end() + 4]
        if before[-1:] in (":", "/", ".", "-", "\u2013") or _PAGES_BEFORE.search(before) \
                or _RANGE_OR_ID_AFTER.match(after):
            continue
        found = (int(m.group(1)), m.group(2) or None)
    return found


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
