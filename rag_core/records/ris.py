"""RIS (EndNote, Zotero, Mendeley and most publishers' "export citation"): records read line by line."""

from __future__ import annotations

import re

from rag_core.records.record import clean_record

__all__ = ["parse_ris"]

_LINE = re.compile(r"^([A-Z][A-Z0-9])  - ?(.*)$")
_AUTHOR_TAGS = ("AU", "A1", "A2", "A3", "A4")


def _name(value: str) -> str:
    value = value.strip()
    if "," in value:
        family, given = value.split(",", 1)
        return f"{given.strip()} {family.strip()}".strip()
    return value


def parse_ris(text: str) -> tuple[list[dict], int]:
    """The records of a RIS text, and how many lines could not be read (outside a record, or not
    ``TAG  - value``)."""
    records: list[dict] = []
    current: dict[str, list[str]] | None = None
    skipped = 0
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
    return records, skipped


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
