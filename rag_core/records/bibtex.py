"""BibTeX and BibLaTeX: entries read into records (``bibtexparser`` splits the file), and records
written as entries.

Reading: only the fields a record keeps are decoded from LaTeX (:mod:`rag_core.records.latex_text`:
``{\\"u}`` is "ü", a ``%`` a percent sign, ``\\href{url}{text}`` its text), so an abstract is never
parsed; names are split on the raw field (``{Barnes and Noble}`` stays one name) into "Given
Family" (so ``Lewis, Patrick`` and ``Patrick Lewis`` are one name), ``others`` is left out, and
the identifiers are looked for where reference managers put them (``doi``; ``eprint`` with
``archivePrefix = {arXiv}``, ``arxiv``, an arxiv.org ``url``). A file with more entries than
:data:`~rag_core.settings.MAX_RECORDS` is refused before it is parsed. A block that cannot be
read and an entry whose key was used before are passed over and named in a note (its line, the
key, which entry was kept), never fatal.

Writing (:func:`records_to_bibtex`): one writer for every field -- control characters removed,
LaTeX's specials escaped (:func:`~rag_core.records.latex_text.bibtex_escape`: ``\\ { } & % $ # _
~ ^``), the entry type from BibTeX's fixed list (:mod:`rag_core.records.entry_types`), the venue in
the field its type reads it from; what is written reads back as the same record.
"""

from __future__ import annotations

import functools
import logging
import re

from rag_core.output.render import printable_text
from rag_core.records.entry_types import bibtex_type, venue_field
from rag_core.records.latex_text import bibtex_escape, latex_to_text
from rag_core.records.record import clean_record, split_name
from rag_core.settings import MAX_RECORDS

__all__ = ["parse_bibtex", "read_bibtex", "records_to_bibtex"]

_VENUE_FIELDS = ("journal", "journaltitle", "booktitle", "publisher", "institution", "school", "organization",
                 "howpublished")
_IDENTIFIER_FIELDS = ("doi", "eprint", "archiveprefix", "eprinttype", "arxiv", "arxivid", "url")
# The start of an entry (not @string, @preamble or @comment), counted before the file is parsed.
_ENTRY_START = re.compile(r"^[ \t]*@[ \t]*(?!(?:string|preamble|comment)\b)[A-Za-z]+[ \t]*[{(]",
                          re.MULTILINE | re.IGNORECASE)
_NOTES_LISTED = 5
_AND = re.compile(r"\band\b", re.IGNORECASE)


class TooManyRecordsError(ValueError):
    """A .bib file with more entries than this reads."""


_IDENTIFIER_ESCAPE = re.compile(r"\\([_%&#$~])")


def _identifier(value: str) -> str:
    """An identifier field (DOI, eprint, URL) as written: braces and LaTeX's escapes removed, not decoded."""
    if "\\" in value:
        value = _IDENTIFIER_ESCAPE.sub(lambda m: m.group(1), value)
    return value.replace("{", "").replace("}", "")


def _names(raw: str, undecoded: list[int]) -> tuple[list[str], bool]:
    """The names of an ``author`` field ("Given von Family, Jr"), and whether "and others" ends it."""
    from bibtexparser.middlewares.names import split_multiple_persons_names

    names, truncated = [], False
    for person in split_multiple_persons_names(raw):
        if person.strip().lower() == "others":
            truncated = True
            continue
        text, read = _person(person)
        if not read:
            undecoded[0] += 1
        if text:
            names.append(text)
    return names, truncated


@functools.lru_cache(maxsize=65_536)  # a library names the same people again and again
def _person(person: str) -> tuple[str, bool]:
    """One name of an ``author`` field as "Given von Family, Jr", and whether its LaTeX was read."""
    from bibtexparser.middlewares.names import InvalidNameError, parse_single_name_into_parts

    try:
        parts = parse_single_name_into_parts(person, strict=False)
        words, jr = [*parts.first, *parts.von, *parts.last], list(parts.jr)
    except (InvalidNameError, ValueError, IndexError):
        words, jr = [person], []
    text, read = latex_to_text(" ".join(words))
    if jr:
        suffix, read_jr = latex_to_text(" ".join(jr))
        text, read = f"{text}, {suffix}", read and read_jr
    return " ".join(text.split()), read


def _decoded(value: str, undecoded: list[int]) -> str:
    text, read = latex_to_text(value)
    if not read:
        undecoded[0] += 1
    return text


def read_bibtex(text: str, *, name: str = "the file") -> tuple[list[dict], list[str]]:
    """The records of a ``.bib`` text (in its order) and notes on what was passed over.
    :class:`TooManyRecordsError` when it has more than MAX_RECORDS entries (counted first)."""
    records, notes, _passed = _read(text, name)
    return records, notes


def _read(text: str, name: str) -> tuple[list[dict], list[str], int]:
    import bibtexparser
    from bibtexparser.model import DuplicateBlockKeyBlock

    entries = sum(1 for _ in _ENTRY_START.finditer(text))
    if entries > MAX_RECORDS:
        raise TooManyRecordsError(f"{name}: has {entries:,} entries, more than the {MAX_RECORDS:,} records this "
                                  "reads; import it in parts.")
    splitter_log = logging.getLogger("bibtexparser")
    level = splitter_log.level
    splitter_log.setLevel(logging.CRITICAL)  # its own words on a bad block go to stderr; ours go in the notes
    try:
        library = bibtexparser.parse_string(text)
    finally:
        splitter_log.setLevel(level)
    records: list[dict] = []
    undecoded = [0]
    for entry in library.entries:
        fields = {}
        for field in entry.fields:
            key = field.key.lower()
            if key not in fields and isinstance(field.value, str):
                fields[key] = field.value
        names, truncated = _names(fields.get("author") or fields.get("editor") or "", undecoded)
        ids = {k: _identifier(fields[k]) for k in _IDENTIFIER_FIELDS if fields.get(k)}
        arxiv = None
        if (ids.get("archiveprefix") or ids.get("eprinttype") or "").lower() == "arxiv" or \
                re.match(r"^\d{4}\.\d{4,5}", ids.get("eprint") or ""):
            arxiv = ids.get("eprint")
        arxiv = arxiv or ids.get("arxiv") or ids.get("arxivid") or ids.get("url")
        venue = next((fields[f] for f in _VENUE_FIELDS if fields.get(f)), None)
        year = fields.get("year") or fields.get("date")
        record = clean_record({
            "key": entry.key, "type": entry.entry_type,
            "title": _decoded(fields["title"], undecoded) if fields.get("title") else None,
            "authors": names, "year": _identifier(year) if year else None, "doi": ids.get("doi"),
            "arxiv_id": arxiv, "venue": _decoded(venue, undecoded) if venue else None})
        if truncated:
            record["more_authors"] = True  # "and others": the list is not every author
        records.append(record)
    failed = library.failed_blocks
    return records, _notes(failed, name, undecoded[0], DuplicateBlockKeyBlock), len(failed)


def _line(block) -> str:
    start = getattr(block, "start_line", None)
    return f"line {start + 1}" if isinstance(start, int) else "a line"


def _notes(failed, name: str, undecoded: int, duplicate_type) -> list[str]:
    notes = []
    duplicates = [b for b in failed if isinstance(b, duplicate_type)]
    broken = [b for b in failed if not isinstance(b, duplicate_type)]
    for block in duplicates[:_NOTES_LISTED]:
        previous = getattr(block, "previous_block", None)
        key = printable_text(block.key)[:80]
        notes.append(f"{name}: the key {key!r} is used twice: the entry at {_line(previous)} was kept, the one at "
                     f"{_line(block)} passed over.")
    if len(duplicates) > _NOTES_LISTED:
        notes.append(f"{name}: {len(duplicates) - _NOTES_LISTED} more entries reuse a key and were passed over.")
    if broken:
        where = ", ".join(_line(b) for b in broken[:_NOTES_LISTED]) + (", ..." if len(broken) > _NOTES_LISTED else "")
        notes.append(f"{len(broken)} block(s) of {name} could not be read as BibTeX entries and were passed over "
                     f"({where}).")
    if undecoded:
        notes.append(f"{undecoded} field(s) of {name} could not be read as LaTeX; their braces and commands were "
                     "removed.")
    return notes


def parse_bibtex(text: str) -> tuple[list[dict], int]:
    """The records of a ``.bib`` text (in its order) and how many blocks were passed over (unreadable,
    or an entry whose key was used before)."""
    records, _notes, passed = _read(text, "the file")
    return records, passed


def _field(value) -> str:
    """A field's value as written: control characters removed, LaTeX's specials escaped."""
    return bibtex_escape(" ".join(printable_text(value).split()))


def _bib_name(name: str) -> str:
    """BibTeX's "von Last, Jr, First" of a name as printed (:func:`~rag_core.records.record.split_name`)."""
    name = " ".join(printable_text(name).split())
    if _AND.search(name) or name.lower() == "others":
        return "{" + _field(name) + "}"  # "Barnes and Noble": one name, not two (nor BibTeX's "others")
    given, particle, family, suffix = split_name(name)
    last = " ".join(p for p in (particle, family) if p)
    parts = [_field(p) for p in (last, suffix, given) if p]
    return ", ".join(parts) if given or suffix else parts[0] if parts else ""


def records_to_bibtex(records: list[dict]) -> str:
    """Records as BibTeX entries (keys made up from the first surname and year when absent,
    kept unique; see the module's text for how each field is written)."""
    out, taken = [], set()
    for n, record in enumerate(records, 1):
        base = printable_text(record.get("key") or "") or _made_key(record) or f"document{n}"
        base = re.sub(r"[^A-Za-z0-9_:\-]", "", base) or f"document{n}"
        key, suffix = base, 1
        while key in taken:
            suffix += 1
            key = f"{base}{chr(ord('a') + suffix - 2) if suffix <= 27 else suffix}"
        taken.add(key)
        entry_type = bibtex_type(record.get("type"))
        lines = [f"@{entry_type}{{{key},"]
        if record.get("title"):
            lines.append(f"  title = {{{_field(record['title'])}}},")
        authors = [a for a in (_bib_name(a) for a in record.get("authors") or []) if a]
        if authors:
            lines.append(f"  author = {{{' and '.join(authors)}}},")
        if record.get("year"):
            lines.append(f"  year = {{{_field(record['year'])}}},")
        if record.get("doi"):
            lines.append(f"  doi = {{{_field(record['doi'])}}},")
        if record.get("arxiv_id"):
            lines.append(f"  eprint = {{{_field(record['arxiv_id'])}}},")
            lines.append("  archiveprefix = {arXiv},")
        if record.get("venue"):
            lines.append(f"  {venue_field(entry_type)} = {{{_field(record['venue'])}}},")
        if record.get("file"):
            lines.append(f"  note = {{file: {_field(record['file'])}}},")
        lines.append("}")
        out.append("\n".join(lines))
    return "\n\n".join(out) + ("\n" if out else "")


def _made_key(record: dict) -> str | None:
    from rag_core.records.record import first_surname, name_key

    if not record.get("authors"):
        return None
    return f"{name_key(first_surname(record['authors'][0]))}{record.get('year') or ''}"
