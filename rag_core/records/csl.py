"""CSL-JSON (what Zotero, Mendeley and Better BibTeX export, and what their Word plugins put in a
citation's field code): items read into records, records written as items."""

from __future__ import annotations

from collections.abc import Mapping

from rag_core.output.render import printable_data
from rag_core.records.entry_types import csl_type
from rag_core.records.record import clean_record, split_name

__all__ = ["csl_item_to_record", "parse_csl_json", "records_to_csl"]


def _csl_name(name) -> str | None:
    if isinstance(name, str):
        return name
    if not isinstance(name, Mapping):
        return None
    if name.get("literal"):
        return str(name["literal"])
    parts = [name.get("given"), name.get("dropping-particle"), name.get("non-dropping-particle"), name.get("family")]
    text = " ".join(str(p) for p in parts if p)
    if text and name.get("suffix"):
        text += f", {name['suffix']}"
    return text or None


def _csl_year(issued) -> object:
    if isinstance(issued, Mapping):
        parts = issued.get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            return parts[0][0]
        return issued.get("raw") or issued.get("literal")
    return issued


def csl_item_to_record(item: Mapping) -> dict:
    """One CSL-JSON item as a record."""
    authors = item.get("author") or item.get("editor") or []
    names = [_csl_name(a) for a in authors] if isinstance(authors, list) else []
    arxiv = None
    for field in ("arxiv", "archive_location", "number", "URL", "url"):
        value = item.get(field)
        if isinstance(value, str) and ("arxiv" in value.lower() or field == "arxiv"):
            arxiv = value
            break
    if arxiv is None and str(item.get("publisher") or item.get("container-title") or "").lower().startswith("arxiv"):
        arxiv = item.get("number") or item.get("URL")
    return clean_record({
        "key": item.get("citation-key") or item.get("citation_key") or item.get("id"), "type": item.get("type"),
        "title": item.get("title"), "authors": [n for n in names if n], "year": _csl_year(item.get("issued")),
        "doi": item.get("DOI") or item.get("doi"), "arxiv_id": arxiv,
        "venue": item.get("container-title") or item.get("publisher") or item.get("event-title"),
    })


def parse_csl_json(value) -> list[dict]:
    """The records of a parsed CSL-JSON value: a list of items, ``{"items": [...]}``, or one item.
    ValueError when it is none of these."""
    if isinstance(value, Mapping):
        value = value.get("items") if isinstance(value.get("items"), list) else [value]
    if not isinstance(value, list):
        raise ValueError("a CSL-JSON file holds a list of items")
    items = [item for item in value if isinstance(item, Mapping)]
    if value and not items:
        raise ValueError("its items are not objects")
    return [csl_item_to_record(item) for item in items]


def records_to_csl(records: list[dict]) -> list[dict]:
    """Records as CSL-JSON items: the type from CSL's fixed list (:func:`~rag_core.records.entry_types.csl_type`),
    control characters removed from every value."""
    items = []
    for n, record in enumerate(records, 1):
        item: dict = {"id": record.get("key") or f"document{n}", "type": csl_type(record.get("type"))}
        if record.get("key"):
            item["citation-key"] = record["key"]
        if record.get("title"):
            item["title"] = record["title"]
        if record.get("authors"):
            item["author"] = [_split(a) for a in record["authors"]]
        if record.get("year"):
            item["issued"] = {"date-parts": [[record["year"]]]}
        if record.get("doi"):
            item["DOI"] = record["doi"]
        if record.get("arxiv_id"):
            item["URL"] = f"https://arxiv.org/abs/{record['arxiv_id']}"
            item["number"] = f"arXiv:{record['arxiv_id']}"
        if record.get("venue"):
            item["container-title"] = record["venue"]
        items.append(printable_data(item))
    return items


def _split(name: str) -> dict:
    """CSL's name fields of a name as printed (:func:`~rag_core.records.record.split_name`)."""
    given, particle, family, suffix = split_name(name)
    if not (given or particle or suffix):
        return {"literal": name}
    fields = {"family": family, "given": given, "non-dropping-particle": particle, "suffix": suffix}
    return {k: v for k, v in fields.items() if v}
