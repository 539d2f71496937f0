"""A local Zotero data folder: its records from ``zotero.sqlite`` and its PDFs from ``storage/``.

The database is read by the rules of :mod:`rag_core.records.foreign_sqlite`: read-only and
immutable (nothing written, no lock taken, so a running Zotero is not disturbed), with what
Zotero has committed to ``zotero.sqlite-wal`` but not yet checkpointed read from a private copy,
only real tables with the columns read (a view named ``items`` is refused), and row and time
budgets checked while reading. Only the tables of Zotero's published schema are read: ``items``,
``itemTypes``, ``fields``, ``itemData``, ``itemDataValues``, ``creators``, ``itemCreators``,
``collections``, ``collectionItems``, ``itemAttachments`` and ``deletedItems``; and Better
BibTeX's ``better-bibtex.sqlite`` (table ``citationkey``) when it is there, for the citation keys.
Every value is read as text whatever its stored type (an integer ``date`` is "2017"). A stored
PDF attachment (``path`` ``storage:NAME.pdf``) lies in ``storage/<attachment key>/NAME.pdf``; a
linked file outside the folder is not read.
"""

from __future__ import annotations

import re
from pathlib import Path

from rag_core.errors import InputFileError
from rag_core.records.foreign_sqlite import ForeignDatabase, open_foreign_sqlite
from rag_core.records.record import clean_record
from rag_core.settings import MAX_RECORDS, MAX_ZOTERO_SQLITE_BYTES

__all__ = ["ZOTERO_TABLES", "read_zotero", "zotero_collections"]

_SKIPPED_TYPES = ("attachment", "note", "annotation")
_VENUE_FIELDS = ("publicationTitle", "proceedingsTitle", "conferenceName", "bookTitle", "university",
                 "publisher", "repository", "websiteTitle")
_READ_FIELDS = ("title", "date", "DOI", "extra", "citationKey", "archiveID", "url", "number", *_VENUE_FIELDS)
_FIELD_NAMES = {name: name for name in _READ_FIELDS}  # one string each, not one a row (100,000 items: ~30 MB)
# The tables read and the columns read from each (Zotero 5, 6 and 7 have them all).
ZOTERO_TABLES = {
    "items": ("itemID", "itemTypeID", "key"), "itemTypes": ("itemTypeID", "typeName"),
    "fields": ("fieldID", "fieldName"), "itemData": ("itemID", "fieldID", "valueID"),
    "itemDataValues": ("valueID", "value"), "creators": ("creatorID", "firstName", "lastName"),
    "itemCreators": ("itemID", "creatorID", "orderIndex"), "collections": ("collectionID", "collectionName"),
    "collectionItems": ("collectionID", "itemID"),
    "itemAttachments": ("itemID", "parentItemID", "contentType", "path"), "deletedItems": ("itemID",),
}
_BETTER_BIBTEX_TABLES = {"citationkey": ("itemID", "citationKey")}
# Per item: at most this many creators and attachments are kept.
_MAX_CREATORS_PER_ITEM = 2_000
_MAX_ATTACHMENTS_PER_ITEM = 1_000
# In all: creators and PDF attachments read from one library (20 authors an item at the cap).
_MAX_CREATOR_ROWS = 2_000_000
_MAX_ATTACHMENT_ROWS = 1_000_000
_MAX_COLLECTIONS = 100_000


def _text(value) -> str | None:
    """A stored value as text, whatever its type (SQLite keeps what it was given: 2017, b"...")."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _connect(folder: Path) -> ForeignDatabase:
    database = folder / "zotero.sqlite"
    return open_foreign_sqlite(database, tables=ZOTERO_TABLES, max_bytes=MAX_ZOTERO_SQLITE_BYTES, owner="Zotero")


def _collection_names(db: ForeignDatabase) -> list[str]:
    rows = db.rows("SELECT collectionName FROM collections", budget=_MAX_COLLECTIONS)
    return sorted({name for (value,) in rows if (name := _text(value))})


def zotero_collections(folder: str | Path) -> list[str]:
    """The names of the Zotero library's collections."""
    with _connect(Path(folder).expanduser()) as db:
        return _collection_names(db)


# a key pinned in Extra by Better BibTeX ("Citation Key: lewis2020"; older versions: "bibtex: ...")
_EXTRA_KEY = re.compile(r"^\s*(?:citation key|bibtex)\s*:\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


def _better_bibtex_keys(folder: Path, notes: list[str]) -> dict[int, str]:
    """Better BibTeX's citation keys by item id, from ``better-bibtex.sqlite`` beside the Zotero
    database (read by the same rules as that one); {} when it is not there."""
    database = folder / "better-bibtex.sqlite"
    if not database.exists():
        return {}
    try:
        with open_foreign_sqlite(database, tables=_BETTER_BIBTEX_TABLES, max_bytes=MAX_ZOTERO_SQLITE_BYTES,
                                 owner="Better BibTeX") as db:
            rows = db.all("SELECT itemID, citationKey FROM citationkey", budget=MAX_RECORDS * 2)
            notes.extend(db.notes)
    except InputFileError as exc:
        notes.append(f"Better BibTeX's citation keys could not be read ({exc})")
        return {}
    return {item: key for item, value in rows if isinstance(item, int) and (key := _text(value))}


def _year(date: str | None) -> object:
    m = re.match(r"^(\d{4})", date or "")  # Zotero stores "2020-05-22 2020-05-22" or "2020-00-00 2020"
    return m.group(1) if m else date


def _arxiv(fields: dict[str, str]) -> str | None:
    for name in ("archiveID", "extra", "url", "number"):
        value = fields.get(name) or ""
        if "arxiv" in value.lower():
            m = re.search(r"(\d{4}\.\d{4,5})", value)
            if m:
                return m.group(1)
    return None


def read_zotero(folder: str | Path, collection: str | None = None):
    """The records of a Zotero data folder (every regular item, or those of ``collection``), with
    the stored PDF of each when it has one, as a :class:`rag_core.records.record.RecordsFile`.

    Four queries in all (the items, their fields, their creators, their PDF attachments), each
    read row by row under its budget: not four queries an item."""
    from rag_core.records.record import RecordsFile

    folder = Path(folder).expanduser()
    if not (folder / "zotero.sqlite").exists():
        raise InputFileError(f"{folder}: no zotero.sqlite here (Zotero's data folder holds it, with storage/).")
    with _connect(folder) as db:
        skipped = ", ".join(f"'{t}'" for t in _SKIPPED_TYPES)
        chosen = ("SELECT i.itemID FROM items i JOIN itemTypes t ON t.itemTypeID = i.itemTypeID "
                  f"WHERE t.typeName NOT IN ({skipped}) AND i.itemID NOT IN (SELECT itemID FROM deletedItems)")
        params: tuple = ()
        if collection is not None:
            found = db.all("SELECT collectionID FROM collections WHERE collectionName = ? LIMIT 1", (collection,),
                           budget=1)
            if not found:
                names = ", ".join(repr(n) for n in _collection_names(db)) or "none"
                raise InputFileError(f"{folder}: no Zotero collection named {collection!r} (there are: {names}).")
            chosen += " AND i.itemID IN (SELECT itemID FROM collectionItems WHERE collectionID = ?)"
            params = (found[0][0],)
        too_many = f"{folder}: more than {MAX_RECORDS:,} items; import one collection at a time."
        items = db.all(
            "SELECT i.itemID, i.key, t.typeName FROM items i JOIN itemTypes t ON t.itemTypeID = i.itemTypeID "
            f"WHERE i.itemID IN ({chosen}) ORDER BY i.itemID LIMIT {MAX_RECORDS + 1}", params, budget=MAX_RECORDS,
            over=too_many)
        wanted = {item_id for item_id, _key, _type in items}
        fields: dict[object, dict[str, str]] = {}
        names = ", ".join("?" for _ in _READ_FIELDS)
        for item_id, name, value in db.rows(
                "SELECT d.itemID, f.fieldName, v.value FROM itemData d JOIN fields f ON f.fieldID = d.fieldID "
                f"JOIN itemDataValues v ON v.valueID = d.valueID WHERE f.fieldName IN ({names}) "
                f"AND d.itemID IN ({chosen})", (*_READ_FIELDS, *params),
                budget=len(wanted) * len(_READ_FIELDS) * 2 + 1000, over=f"{folder}: more fields than items hold."):
            name, text = _FIELD_NAMES.get(name) or _text(name), _text(value)
            if item_id in wanted and name and text:
                fields.setdefault(item_id, {}).setdefault(name, text)
        creators: dict[object, list[str]] = {}
        for item_id, first, last in db.rows(
                "SELECT ic.itemID, c.firstName, c.lastName FROM itemCreators ic JOIN creators c "
                f"ON c.creatorID = ic.creatorID WHERE ic.itemID IN ({chosen}) ORDER BY ic.itemID, ic.orderIndex",
                params, budget=_MAX_CREATOR_ROWS, over=f"{folder}: more than {_MAX_CREATOR_ROWS:,} creators; import "
                                                       "one collection at a time."):
            listed = creators.setdefault(item_id, [])
            if len(listed) < _MAX_CREATORS_PER_ITEM:
                listed.append(" ".join(p for p in (_text(first), _text(last)) if p))
        attachments: dict[object, list[tuple[str | None, str | None]]] = {}
        for parent, key, path in db.rows(
                "SELECT a.parentItemID, i.key, a.path FROM itemAttachments a JOIN items i ON i.itemID = a.itemID "
                "WHERE a.contentType = 'application/pdf' AND a.itemID NOT IN (SELECT itemID FROM deletedItems) "
                f"AND a.parentItemID IN ({chosen}) ORDER BY a.itemID", params, budget=_MAX_ATTACHMENT_ROWS,
                over=f"{folder}: more than {_MAX_ATTACHMENT_ROWS:,} PDF attachments; import one collection at a time."):
            listed = attachments.setdefault(parent, [])
            if len(listed) < _MAX_ATTACHMENTS_PER_ITEM:
                listed.append((_text(key), _text(path)))
        records, pdfs, notes = [], {}, list(db.notes)
        better_bibtex = _better_bibtex_keys(folder, notes)
        for item_id, key, type_name in items:
            kept = fields.pop(item_id, {})  # let go of each item's rows as its record is made
            venue = next((kept[f] for f in _VENUE_FIELDS if kept.get(f)), None)
            pinned = _EXTRA_KEY.search(kept.get("extra") or "")
            # the citation key a LaTeX draft cites: Zotero 7's own field, a key pinned in Extra,
            # Better BibTeX's; else the item's Zotero key
            cite_key = (kept.get("citationKey") or (pinned and pinned.group(1))
                        or better_bibtex.get(item_id) or _text(key))
            records.append(clean_record({
                "key": cite_key, "type": _text(type_name), "title": kept.get("title"),
                "authors": [n for n in creators.pop(item_id, []) if n], "year": _year(kept.get("date")),
                "doi": kept.get("DOI"), "arxiv_id": _arxiv(kept), "venue": venue}))
            pdf = _stored_pdf(folder, attachments.get(item_id, []))
            if pdf is not None:
                pdfs[len(records) - 1] = pdf
    missing = sum(1 for n in range(len(records)) if n not in pdfs)
    if missing:
        notes.append(f"{missing} of {len(records)} Zotero item(s) have no stored PDF in storage/.")
    return RecordsFile(str(folder) + (f" (collection {collection})" if collection else ""), "Zotero", records,
                       notes, pdfs)


def _stored_pdf(folder: Path, attachments: list[tuple[str | None, str | None]]) -> Path | None:
    """The first of an item's PDF attachments stored in ``storage/<key>/`` (a linked file outside
    the data folder is not read)."""
    storage = (folder / "storage").resolve()
    for key, path in attachments:
        if not key or not path or not path.startswith("storage:"):
            continue  # a linked file: it lives outside the data folder
        candidate = (storage / key / path[len("storage:"):]).resolve()
        if candidate.parent.parent == storage and candidate.is_file():
            return candidate
    return None
