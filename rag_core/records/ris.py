"""RIS (EndNote, Zotero, Mendeley and most publishers' "export citation"): records read line by line."""

from __future__ import annotations

import re

from rag_core.records.record import clean_record
from rag_core.settings import MAX_RECORDS

__all__ = ["parse_ris", "read_ris"]

_LINE = re.compile(r"^([A-Z][A-Z0-9])  - ?(.*)$")
_AUTHOR_TAGS = ("AU", "A1", "A2", "A3", "A4")
_TYPE_LINE = re.compile(r"^\ufeff?TY  -", re.MULTILINE)


def _name(value: str) -> str:
    value = value.strip()
    if "," in value:
        family, given = value.split(",", 1)
        return f"{given.strip()} {family.strip()}".strip()
    return value


def parse_ris(text: str) -> tuple[list[dict], int]:
    """The records of a RIS text, and how many lines could not be read (outside a record, or not
    ``TAG  - value``)."""
    records, skipped, _open = _read(text)
    return records, skipped


def read_ris(text: str, *, name: str = "the file") -> tuple[list[dict], list[str]]:
    """The records of a RIS text and notes on what was passed over or guessed: a record that a
    new ``TY`` or the end of the file closes, without its ``ER`` line, is kept and counted."""
    entries = sum(1 for _ in _TYPE_LINE.finditer(text))
    if entries > MAX_RECORDS:
        raise ValueError(f"{name}: has {entries:,} records, more than the {MAX_RECORDS:,} this reads; import it in "
                         "parts.")
    records, skipped, unclosed = _read(text)
    notes = []
    if unclosed:
        notes.append(f"{unclosed} record(s) of {name} have no ER line (end of record): each was taken to end where the "
                     "next TY line or the file begins or ends.")
    if skipped:
        notes.append(f"{skipped} line(s) of {name} are not RIS tags and were passed over.")
    return records, notes


def _read(text: str) -> tuple[list[dict], int, int]:
    records: list[dict] = []
    current: dict[str, list[str]] | None = None
    skipped = unclosed = 0
    for raw in text.splitlines():
        line = raw.strip("\ufeff").rstrip()
        if not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            skipped += 1
            continue
        tag, value = m.group(1), m.group(2).strip()
        if tag == "TY":
            if current is not None:  # the record before had no ER: it ends here
                records.append(_record(current))
                unclosed += 1
            current = {"TY": [value]}
            continue
        if current is None:
            skipped += 1
            continue
        if tag == "ER":
            records.append(_record(current))
            current = None
            continue
        current.setdefault(tag, []).append(value)
    if current is not None:
        records.append(_record(current))
        unclosed += 1
    return records, skipped, unclosed


def _first(fields: dict[str, list[str]], *tags: str) -> str | None:
    for tag in tags:
        if fields.get(tag):
            return fields[tag][0]
    return None


def _record(fields: dict[str, list[str]]) -> dict:
    authors = [_name(v) for tag in _AUTHOR_TAGS[:1] + _AUTHOR_TAGS[1:2] for v in fields.get(tag, [])]
    urls = " ".join(fields.get("UR", []) + fields.get("L1", []) + fields.get("N1", []))
    return clean_record({
        "key": _first(fields, "ID", "LB", "CN"), "type": _first(fields, "TY"),
        "title": _first(fields, "TI", "T1", "CT"), "authors": authors,
        "year": _first(fields, "PY", "Y1", "DA", "Y2"), "doi": _first(fields, "DO"),
        "arxiv_id": urls if "arxiv" in urls.lower() else None,
        "venue": _first(fields, "T2", "JO", "JF", "JA", "BT", "PB"),
    })
