"""The works a Word manuscript's citations name, from Zotero's and Mendeley's field codes.

Zotero's Word plugin inserts each citation as a field whose code is ``ADDIN ZOTERO_ITEM
CSL_CITATION {...}``, Mendeley's as ``ADDIN CSL_CITATION {...}``: the JSON holds, for every cited
item, its CSL-JSON (``citationItems[].itemData``) and the citation as shown
(``properties.plainCitation``). :func:`paragraph_field_codes` reads the codes of one paragraph
(complex fields: ``w:instrText`` between ``w:fldChar`` begin and separate, in as many runs as
Word split them into; simple fields: ``w:fldSimple/@w:instr``); :func:`field_references` turns
them into reference-list entries, so each marker of the text resolves to the very work it names
(keyed by its number for a numeric style, else found by first author and year).
"""

from __future__ import annotations

import json
import re

from rag_core.citations.references import Reference
from rag_core.records.csl import csl_item_to_record
from rag_core.records.record import first_surname, split_name

__all__ = ["field_references", "paragraph_field_codes"]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_CSL_CODE = re.compile(r"^\s*ADDIN\s+(ZOTERO_ITEM\s+)?CSL_CITATION\s*", re.IGNORECASE)
_NUMBERS = re.compile(r"^\s*[\[(]?\s*(\d+(?:\s*[,\u2013\-]\s*\d+)*)\s*[\])]?\s*$")
# A citation's field code holds a few items' CSL-JSON: past this it is not one (a hostile file).
MAX_FIELD_CODE_CHARS = 1_000_000


def paragraph_field_codes(paragraph, *, oversized: list[int] | None = None) -> list[str]:
    """The CSL citation field codes of a ``w:p`` element, in order. A code longer than
    ``MAX_FIELD_CODE_CHARS`` is not kept (not read past that length either): its size goes to
    ``oversized``, so the draft can say it was skipped."""
    codes: list[str] = []
    current: list[str] | None = None
    size = 0
    for element in paragraph.iter(f"{_W}fldChar", f"{_W}instrText", f"{_W}fldSimple"):
        tag = element.tag
        if tag == f"{_W}fldSimple":
            codes.append(element.get(f"{_W}instr") or "")
        elif tag == f"{_W}fldChar":
            kind = element.get(f"{_W}fldCharType")
            if kind == "begin":
                current, size = [], 0
            elif current is not None:  # separate or end: the code is complete
                codes.append("".join(current) if size <= MAX_FIELD_CODE_CHARS else _TOO_LONG + str(size))
                current = None
        elif current is not None:
            size += len(element.text or "")
            if size <= MAX_FIELD_CODE_CHARS:
                current.append(element.text or "")
            elif len(current) < 2:
                current[:] = [("".join(current) + (element.text or ""))[:200]]  # its start tells what it is
    kept = []
    for code in codes:
        if code.startswith(_TOO_LONG) or len(code) > MAX_FIELD_CODE_CHARS:
            if oversized is not None:
                oversized.append(int(code[len(_TOO_LONG):]) if code.startswith(_TOO_LONG) else len(code))
        elif _CSL_CODE.match(code):
            kept.append(code)
    return kept


_TOO_LONG = "\x00too long:"


def _numbers(text: str, count: int) -> list[str] | None:
    m = _NUMBERS.match(text or "")
    if not m:
        return None
    numbers: list[str] = []
    for part in re.split(r"\s*,\s*", m.group(1)):
        ends = re.split(r"\s*[\u2013\-]\s*", part)
        if len(ends) == 2 and ends[0].isdigit() and ends[1].isdigit() and int(ends[1]) - int(ends[0]) < 50:
            numbers.extend(str(n) for n in range(int(ends[0]), int(ends[1]) + 1))
        else:
            numbers.append(part)
    return numbers if len(numbers) == count else None


def field_references(codes: list[str]) -> tuple[list[Reference], int]:
    """Reference-list entries for the items the codes name, and how many codes could not be read
    (not JSON, or not the shape of a CSL citation: ``citationItems`` not a list, an item or its
    ``itemData`` not an object); a code's readable items are kept."""
    references: list[Reference] = []
    unreadable = 0
    for code in codes:
        m = _CSL_CODE.match(code)
        via = "Zotero field code" if m and m.group(1) else "Mendeley field code"
        try:
            data = json.loads(code[m.end():].strip())
        except (ValueError, RecursionError):
            unreadable += 1
            continue
        items = data.get("citationItems") if isinstance(data, dict) else None
        properties = data.get("properties") if isinstance(data, dict) else None
        shown = str(properties.get("plainCitation") or "") if isinstance(properties, dict) else ""
        if not isinstance(items, list) or not items:
            unreadable += 1
            continue
        records = [_record(item) for item in items]
        if any(record is None for record in records):
            unreadable += 1
        records = [record for record in records if record is not None]
        numbers = _numbers(shown, len(records))
        for n, record in enumerate(records):
            authors = record.get("authors") or []
            references.append(Reference(
                key=numbers[n] if numbers else None, text=f"{'; '.join(authors[:3])} ({record.get('year')}). "
                f"{record.get('title') or ''}", surnames=[first_surname(a) for a in authors],
                year=record.get("year"), title=record.get("title"), doi=record.get("doi"),
                arxiv_id=record.get("arxiv_id"), via=via,
                first_initial=_initial(split_name(authors[0])[0]) if authors else None))
    return references, unreadable


def _record(item) -> dict | None:
    """The record of one citation item's ``itemData``, or None when it is not a CSL-JSON object."""
    data = item.get("itemData") if isinstance(item, dict) else None
    if not isinstance(data, dict):
        return None
    try:
        return csl_item_to_record(data)
    except (TypeError, ValueError, AttributeError, RecursionError):
        return None


def _initial(given: str) -> str | None:
    letter = next((c for c in given if c.isalpha()), "")
    return letter.upper() or None
