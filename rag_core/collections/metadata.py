"""A collection's bibliographic records: corrected by hand, imported from a reference manager,
exported, each field with where it came from.

The record read from each PDF at ingest (:mod:`rag_core.pdf.metadata`) is kept as it was; what a
person corrects (``rag-core meta set``, the Collections page) and what an import brings
(``rag-core meta import``: BibTeX, CSL-JSON, RIS, a Zotero data folder) is kept beside it as the
collection's side data ``records`` (:mod:`rag_core.collections.store.side_data`: a committed,
checksummed generation per change, with copies, in the folder store and in PostgreSQL alike),
keyed by the document's SHA-256. So a correction survives removing and re-adding the same file,
and :func:`apply_records` lays it over the PDF's record wherever documents are read.

``origin`` says per field: ``pdf``, ``arxiv`` (the year from the arXiv id), ``file name``,
``import`` (with the file it came from) or ``edited``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag_core.errors import CollectionError, InputFileError
from rag_core.records.matching import match_records
from rag_core.records.record import FIELDS, clean_record

__all__ = [
    "EDITABLE_FIELDS",
    "RECORDS_KEY",
    "ImportReport",
    "apply_records",
    "changed_fields",
    "export_records",
    "import_records",
    "load_records",
    "record_rows",
    "set_record",
]

RECORDS_KEY = "records"
FORMAT = "rag_core.records"
EDITABLE_FIELDS = ("title", "authors", "year", "doi", "arxiv_id", "venue", "key", "type")


def _store(store_or_library):
    return getattr(store_or_library, "store", store_or_library)


def load_records(store, name: str) -> dict[str, dict]:
    """The collection's kept records: ``{sha256: {"fields", "origin", "from", "time"}}``."""
    raw = _store(store).read_data(name, RECORDS_KEY)
    if raw is None:
        return {}
    if not isinstance(raw, dict) or raw.get("format") != FORMAT or not isinstance(raw.get("documents"), dict):
        raise CollectionError(f"The records of collection {name!r} are not in a format this version reads.")
    return {sha: entry for sha, entry in raw["documents"].items() if isinstance(entry, dict)}


def apply_records(documents: Sequence[dict], kept: dict[str, dict]) -> list[dict]:
    """The documents with their kept records laid over the PDF's, and ``origin`` per field."""
    out = []
    for doc in documents:
        doc = dict(doc)
        origin = dict(doc.get("origin") or {})
        for key in ("title", "authors", "year"):
            if doc.get(key) and key not in origin:
                origin[key] = "pdf"  # a document ingested before origins were kept
        entry = kept.get(doc.get("sha256") or "")
        if entry:
            for key, value in (entry.get("fields") or {}).items():
                if key in EDITABLE_FIELDS:
                    doc[key] = value
            origin.update({k: v for k, v in (entry.get("origin") or {}).items() if k in EDITABLE_FIELDS})
        doc["origin"] = origin
        out.append(doc)
    return out


def _commit(store, name: str, change: Callable[[dict[str, dict]], dict[str, dict]]) -> None:
    store = _store(store)
    with store.writing(name):
        kept = change(load_records(store, name))
        store.write_data(name, RECORDS_KEY, {"format": FORMAT, "format_version": 1, "documents": kept})


def _document(documents: Sequence[dict], wanted: str) -> dict:
    for doc in documents:
        if wanted in (doc.get("source"), doc.get("doc_id"), doc.get("file_name"), doc.get("sha256")):
            return doc
    names = ", ".join(d["source"] for d in documents[:10])
    raise CollectionError(f"No document {wanted!r} in this collection (it has: {names}"
                          f"{', ...' if len(documents) > 10 else ''}).")


def set_record(store, name: str, document: str, documents: Sequence[dict], **fields) -> dict:
    """Correct fields of one document's record by hand (``title``, ``authors`` (a list or "A; B"),
    ``year``, ``doi``, ...; a field given as "" is cleared). Returns the fields now kept."""
    doc = _document(documents, document)
    given = {k: v for k, v in fields.items() if v is not None}
    unknown = [k for k in given if k not in EDITABLE_FIELDS]
    if unknown:
        raise ValueError(f"These fields cannot be set: {', '.join(unknown)}.")
    if isinstance(given.get("authors"), str):
        given["authors"] = [a.strip() for a in given["authors"].split(";") if a.strip()]
    cleaned = clean_record(given)
    for key, value in given.items():
        if value not in ("", [], None) and cleaned.get(key) is None:
            raise ValueError(f"{key} {value!r} is not a valid {key}" + (
                " (a DOI looks like 10.1234/abc)" if key == "doi" else " (a year of four digits)" if key == "year"
                else ""))
    changed = {k: cleaned.get(k) for k in given}

    def change(kept: dict[str, dict]) -> dict[str, dict]:
        entry = dict(kept.get(doc["sha256"]) or {"fields": {}, "origin": {}})
        entry["fields"] = {**entry.get("fields", {}), **changed}
        entry["origin"] = {**entry.get("origin", {}), **dict.fromkeys(changed, "edited")}
        entry["time"] = time.time()
        return {**kept, doc["sha256"]: entry}

    _commit(store, name, change)
    return changed


@dataclass
class ImportReport:
    """What an import did: ``matched`` (document source, record label, how), ``unmatched_records``
    (labels of records that fit no document), ``unmatched_documents`` (sources no record fits),
    ``ambiguous`` (record label, the documents it fits), ``added`` (PDFs ingested from a Zotero
    folder), ``notes``."""

    source: str
    kind: str
    records: int
    matched: list[tuple[str, str, str]] = field(default_factory=list)
    unmatched_records: list[str] = field(default_factory=list)
    unmatched_documents: list[str] = field(default_factory=list)
    ambiguous: list[tuple[str, list[str]]] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def record_label(record: dict) -> str:
    authors = record.get("authors") or []
    who = authors[0].split()[-1] if authors and authors[0].split() else "?"
    title = (record.get("title") or "untitled")[:70]
    return f"{record.get('key') or '-'}: {who} {record.get('year') or 'n.d.'}, {title}"


def import_records(store, name: str, found, documents: Sequence[dict], *,
                   attachments: dict[int, str] | None = None) -> ImportReport:
    """Records (a :class:`rag_core.records.reading.RecordsFile`) matched to the documents by DOI,
    then arXiv id, then normalised title, and kept for the matched ones (origin ``import``).
    ``attachments`` maps a record's position to the SHA-256 of its own PDF (a Zotero item's stored
    file): that record is the document with that content, whatever its fields say."""
    by_sha = {d["sha256"]: d["source"] for d in documents}
    direct = {n: by_sha[sha] for n, sha in (attachments or {}).items() if sha in by_sha}
    rest = [n for n in range(len(found.records)) if n not in direct]
    matching = match_records([found.records[n] for n in rest],
                             [d for d in documents if d["source"] not in set(direct.values())])
    matching.pairs = [(n, source, "its PDF") for n, source in direct.items()] + [
        (rest[i], source, how) for i, source, how in matching.pairs]
    matching.unmatched_records = [rest[i] for i in matching.unmatched_records]
    matching.ambiguous = [(rest[i], fits) for i, fits in matching.ambiguous]
    report = ImportReport(found.name, found.kind, len(found.records), notes=list(found.notes))
    by_source = {d["source"]: d for d in documents}
    updates: dict[str, dict] = {}
    for n, source, how in matching.pairs:
        record = found.records[n]
        fields = {k: record[k] for k in FIELDS if k in EDITABLE_FIELDS and record.get(k) not in (None, [])}
        known = by_source[source].get("authors") or []
        if record.get("more_authors") and len(known) > len(fields.get("authors") or []):
            fields.pop("authors", None)  # "and others": the PDF's whole list is better than the first few
        updates[by_source[source]["sha256"]] = fields
        report.matched.append((source, record_label(record), how))
    report.unmatched_records = [record_label(found.records[n]) for n in matching.unmatched_records]
    report.unmatched_documents = list(matching.unmatched_documents)
    report.ambiguous = [(record_label(found.records[n]), fits) for n, fits in matching.ambiguous]
    if updates:
        origin_name = Path(found.name).name or found.name

        def change(kept: dict[str, dict]) -> dict[str, dict]:
            out = dict(kept)
            for sha, fields in updates.items():
                entry = dict(out.get(sha) or {"fields": {}, "origin": {}})
                edited = {k for k, v in (entry.get("origin") or {}).items() if v == "edited"}
                new = {k: v for k, v in fields.items() if k not in edited}  # a hand correction wins
                entry["fields"] = {**entry.get("fields", {}), **new}
                entry["origin"] = {**entry.get("origin", {}), **dict.fromkeys(new, "import")}
                entry["from"] = origin_name
                entry["time"] = time.time()
                out[sha] = entry
            return out

        _commit(store, name, change)
    return report


def export_records(documents: Sequence[dict], path_name: str) -> bytes:
    """The documents' records as a ``.bib`` (BibTeX) or ``.json`` (CSL-JSON) file's bytes."""
    import json

    from rag_core.records.bibtex import records_to_bibtex
    from rag_core.records.csl import records_to_csl

    records = [{**{k: d.get(k) for k in FIELDS}, "file": d.get("source")} for d in documents]
    suffix = Path(path_name).suffix.lower()
    if suffix == ".bib":
        return records_to_bibtex(records).encode("utf-8")
    if suffix == ".json":
        return (json.dumps(records_to_csl(records), ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    raise InputFileError(f"{path_name}: export to a .bib (BibTeX) or a .json (CSL-JSON) file.")


# ---------------------------------------------------------------- the Collections page's table

ORIGIN_WORDS = {"pdf": "PDF", "arxiv": "arXiv id", "file name": "file name", "import": "import", "edited": "edited"}
TABLE_FIELDS = ("title", "authors", "year", "doi")


def record_rows(documents: Sequence[dict]) -> list[dict]:
    """One editable row per document: document, title, authors ("A; B"), year, DOI, and where each
    field came from ("title: PDF · year: arXiv id · doi: import")."""
    rows = []
    for doc in documents:
        origin = doc.get("origin") or {}
        rows.append({
            "document": doc["source"], "year": str(doc.get("year") or ""), "doi": doc.get("doi") or "",
            "title": doc.get("title") or "", "authors": "; ".join(doc.get("authors") or []),
            "from": " \u00b7 ".join(f"{k}: {ORIGIN_WORDS.get(origin[k], origin[k])}" for k in TABLE_FIELDS
                                    if k in origin and doc.get(k))
            or ("no record: a scan read by OCR" if doc.get("no_record") else ""),
        })
    return rows


def changed_fields(before: Sequence[dict], after: Sequence[dict]) -> dict[str, dict]:
    """The fields a person changed in the table: ``{document: {field: new text}}`` (rows matched
    by their document; a row added or a document renamed in the table is ignored)."""
    old = {row["document"]: row for row in before}
    changes: dict[str, dict] = {}
    for row in after:
        original = old.get(row.get("document"))
        if original is None:
            continue
        fields = {k: str(row.get(k) if row.get(k) is not None else "").strip() for k in TABLE_FIELDS}
        diff = {k: v for k, v in fields.items() if v != str(original.get(k) or "").strip()}
        if diff:
            changes[original["document"]] = diff
    return changes
