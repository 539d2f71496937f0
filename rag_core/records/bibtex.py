"""BibTeX and BibLaTeX: entries read into records (``bibtexparser``), and records written as entries.

LaTeX in the fields is decoded (``{\\"u}`` is "ü"), names are read into "Given Family" (so
``Lewis, Patrick`` and ``Patrick Lewis`` are one name), ``others`` is left out, and the
identifiers are looked for where reference managers put them (``doi``; ``eprint`` with
``archivePrefix = {arXiv}``, ``arxiv``, an arxiv.org ``url``). A block that cannot be parsed is
counted, never fatal: the caller says how many were passed over.
"""

from __future__ import annotations

import re

from rag_core.records.record import clean_record, split_name

__all__ = ["parse_bibtex", "records_to_bibtex"]

_VENUE_FIELDS = ("journal", "journaltitle", "booktitle", "publisher", "institution", "school")


def _name(parts) -> str | None:
    """ "Given von Family, Jr" of a bibtexparser ``NameParts`` (or a plain string)."""
    if isinstance(parts, str):
        text = parts.strip()
        if "," in text:
            family, given = text.split(",", 1)
            text = f"{given.strip()} {family.strip()}"
        return " ".join(text.split()) or None
    words = [*parts.first, *parts.von, *parts.last]
    text = " ".join(" ".join(words).split())
    if parts.jr:
        text += ", " + " ".join(parts.jr)
    return text or None


def parse_bibtex(text: str) -> tuple[list[dict], int]:
    """The records of a ``.bib`` text (in its order) and how many blocks could not be read."""
    import bibtexparser
    from bibtexparser import middlewares

    library = bibtexparser.parse_string(text, append_middleware=[
        middlewares.LatexDecodingMiddleware(), middlewares.SeparateCoAuthors(), middlewares.SplitNameParts()])
    records = []
    for entry in library.entries:
        fields = {f.key.lower(): f.value for f in entry.fields}
        authors = fields.get("author") or fields.get("editor") or []
        names = [_name(p) for p in (authors if isinstance(authors, list) else [authors])]
        truncated = any(n and n.lower() == "others" for n in names)
        names = [n for n in names if n and n.lower() != "others"]
        arxiv = None
        if str(fields.get("archiveprefix") or fields.get("eprinttype") or "").lower() == "arxiv" or \
                re.match(r"^\d{4}\.\d{4,5}", str(fields.get("eprint") or "")):
            arxiv = fields.get("eprint")
        arxiv = arxiv or fields.get("arxiv") or fields.get("arxivid") or fields.get("url")
        venue = next((fields[f] for f in _VENUE_FIELDS if fields.get(f)), None)
        year = fields.get("year") or fields.get("date")
        records.append(clean_record({"key": entry.key, "type": entry.entry_type, "title": fields.get("title"),
                                     "authors": names, "year": year, "doi": fields.get("doi"),
                                     "arxiv_id": arxiv, "venue": venue}))
        if truncated:
            records[-1]["more_authors"] = True  # "and others": the list is not every author
    return records, len(library.failed_blocks)


def _braced(value: str) -> str:
    """A field value for a .bib: braces balanced away, LaTeX's specials escaped."""
    value = value.replace("\\", "").replace("{", "").replace("}", "")
    return re.sub(r"([&%$#_])", r"\\\1", value)


def _bib_name(name: str) -> str:
    """BibTeX's "von Last, Jr, First" of a name as printed (:func:`~rag_core.records.record.split_name`)."""
    given, particle, family, suffix = split_name(name)
    last = " ".join(p for p in (particle, family) if p)
    return ", ".join(p for p in (last, suffix, given) if p) if given or suffix else last


def records_to_bibtex(records: list[dict]) -> str:
    """Records as BibTeX entries (keys made up from the first surname and year when absent,
    kept unique)."""
    out, taken = [], set()
    for n, record in enumerate(records, 1):
        base = record.get("key") or _made_key(record) or f"document{n}"
        base = re.sub(r"[^A-Za-z0-9_:\-]", "", base) or f"document{n}"
        key, suffix = base, 1
        while key in taken:
            suffix += 1
            key = f"{base}{chr(ord('a') + suffix - 2) if suffix <= 27 else suffix}"
        taken.add(key)
        lines = [f"@{record.get('type') or 'article'}{{{key},"]
        if record.get("title"):
            lines.append(f"  title = {{{_braced(record['title'])}}},")
        if record.get("authors"):
            lines.append(f"  author = {{{' and '.join(_braced(_bib_name(a)) for a in record['authors'])}}},")
        if record.get("year"):
            lines.append(f"  year = {{{record['year']}}},")
        if record.get("doi"):
            lines.append(f"  doi = {{{_braced(record['doi'])}}},")
        if record.get("arxiv_id"):
            lines.append(f"  eprint = {{{record['arxiv_id']}}},")
            lines.append("  archiveprefix = {arXiv},")
        if record.get("venue"):
            lines.append(f"  howpublished = {{{_braced(record['venue'])}}},")
        if record.get("file"):
            lines.append(f"  note = {{file: {_braced(record['file'])}}},")
        lines.append("}")
        out.append("\n".join(lines))
    return "\n\n".join(out) + ("\n" if out else "")


def _made_key(record: dict) -> str | None:
    from rag_core.records.record import first_surname, name_key

    if not record.get("authors"):
        return None
    return f"{name_key(first_surname(record['authors'][0]))}{record.get('year') or ''}"
