"""A local Zotero data folder: its records from ``zotero.sqlite`` and its PDFs from ``storage/``.

The database is opened read-only and immutable (``file:...?mode=ro&immutable=1``): nothing is
written, no lock is taken and no journal is made, so a running Zotero is not disturbed (it keeps
the file locked; an immutable reader does not ask for the lock). Only the tables of Zotero's
published schema are read: ``items``, ``itemTypes``, ``fields``, ``itemData``,
``itemDataValues``, ``creators``, ``itemCreators``, ``collections``, ``collectionItems``,
``itemAttachments`` and ``deletedItems``; and Better BibTeX's ``better-bibtex.sqlite`` (table
``citationkey``) when it is there, for the citation keys. A stored PDF attachment (``path`` ``storage:NAME.pdf``)
lies in ``storage/<attachment key>/NAME.pdf``; a linked file outside the folder is not read.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path
from urllib.parse import quote

from rag_core.errors import InputFileError
from rag_core.records.record import clean_record
from rag_core.safe_files import regular_file_size
from rag_core.settings import MAX_RECORDS, MAX_ZOTERO_SQLITE_BYTES

__all__ = ["read_zotero", "zotero_collections"]

_SKIPPED_TYPES = ("attachment", "note", "annotation")
_VENUE_FIELDS = ("publicationTitle", "proceedingsTitle", "conferenceName", "bookTitle", "university",
                 "publisher", "repository", "websiteTitle")


def _connect(folder: Path) -> sqlite3.Connection:
    database = folder / "zotero.sqlite"
    size = regular_file_size(database, label=str(database))
    if size > MAX_ZOTERO_SQLITE_BYTES:
        raise InputFileError(f"{database}: larger than the {MAX_ZOTERO_SQLITE_BYTES // 2**30} GiB this reads.")
    uri = f"file:{quote(str(database.resolve()))}?mode=ro&immutable=1"
    try:
        connection = sqlite3.connect(uri, uri=True)
        connection.execute("SELECT itemID FROM items LIMIT 1")
    except sqlite3.Error as exc:
        raise InputFileError(f"{database}: not a Zotero database ({exc}).") from None
    return connection


def zotero_collections(folder: str | Path) -> list[str]:
    """The names of the Zotero library's collections."""
    with _connect(Path(folder)) as connection:
        return [row[0] for row in connection.execute("SELECT collectionName FROM collections ORDER BY collectionName")]


# a key pinned in Extra by Better BibTeX ("Citation Key: lewis2020"; older versions: "bibtex: ...")
_EXTRA_KEY = re.compile(r"^\s*(?:citation key|bibtex)\s*:\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


def _better_bibtex_keys(folder: Path, notes: list[str]) -> dict[int, str]:
    """Better BibTeX's citation keys by item id, from ``better-bibtex.sqlite`` beside the Zotero
    database (read-only and immutable, as that one); {} when it is not there."""
    database = folder / "better-bibtex.sqlite"
    if not database.exists():
        return {}
    try:
        if regular_file_size(database, label=str(database)) > MAX_ZOTERO_SQLITE_BYTES:
            raise InputFileError("too large")
        uri = f"file:{quote(str(database.resolve()))}?mode=ro&immutable=1"
        with closing(sqlite3.connect(uri, uri=True)) as connection:
            rows = connection.execute("SELECT itemID, citationKey FROM citationkey").fetchall()
    except (sqlite3.Error, InputFileError, OSError) as exc:
        notes.append(f"Better BibTeX's citation keys could not be read from {database.name} ({exc}).")
        return {}
    return {int(item): str(key) for item, key in rows if isinstance(item, int) and key}


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
    the stored PDF of each when it has one, as a :class:`rag_core.records.record.RecordsFile`."""
    from rag_core.records.record import RecordsFile

    folder = Path(folder).expanduser()
    if not (folder / "zotero.sqlite").exists():
        raise InputFileError(f"{folder}: no zotero.sqlite here (Zotero's data folder holds it, with storage/).")
    with _connect(folder) as connection:
        query = ("SELECT i.itemID, i.key, t.typeName FROM items i JOIN itemTypes t USING (itemTypeID) "
                 "WHERE i.itemID NOT IN (SELECT itemID FROM deletedItems)")
        params: tuple = ()
        if collection is not None:
            found = connection.execute("SELECT collectionID FROM collections WHERE collectionName = ?",
                                       (collection,)).fetchall()
            if not found:
                names = ", ".join(repr(n) for n in zotero_collections(folder)) or "none"
                raise InputFileError(f"{folder}: no Zotero collection named {collection!r} (there are: {names}).")
            query += " AND i.itemID IN (SELECT itemID FROM collectionItems WHERE collectionID = ?)"
            params = (found[0][0],)
        items = [row for row in connection.execute(query + " ORDER BY i.itemID", params)
                 if row[2] not in _SKIPPED_TYPES]
        if len(items) > MAX_RECORDS:
            raise InputFileError(f"{folder}: more than {MAX_RECORDS:,} items; import one collection at a time.")
        records, pdfs, notes = [], {}, []
        better_bibtex = _better_bibtex_keys(folder, notes)
        for item_id, key, type_name in items:
            fields = dict(connection.execute(
                "SELECT f.fieldName, v.value FROM itemData d JOIN fields f USING (fieldID) "
                "JOIN itemDataValues v USING (valueID) WHERE d.itemID = ?", (item_id,)).fetchall())
            creators = connection.execute(
                "SELECT c.firstName, c.lastName FROM itemCreators ic JOIN creators c USING (creatorID) "
                "WHERE ic.itemID = ? ORDER BY ic.orderIndex", (item_id,)).fetchall()
            names = [" ".join(p for p in (first, last) if p) for first, last in creators]
            venue = next((fields[f] for f in _VENUE_FIELDS if fields.get(f)), None)
            pinned = _EXTRA_KEY.search(fields.get("extra") or "")
            # the citation key a LaTeX draft cites: Zotero 7's own field, a key pinned in Extra,
            # Better BibTeX's; else the item's Zotero key
            cite_key = fields.get("citationKey") or (pinned and pinned.group(1)) or better_bibtex.get(item_id) or key
            record = clean_record({"key": cite_key, "type": type_name,
                                   "title": fields.get("title"), "authors": names, "year": _year(fields.get("date")),
                                   "doi": fields.get("DOI"), "arxiv_id": _arxiv(fields), "venue": venue})
            records.append(record)
            pdf = _stored_pdf(connection, folder, item_id)
            if pdf is not None:
                pdfs[len(records) - 1] = pdf
    missing = sum(1 for n in range(len(records)) if n not in pdfs)
    if missing:
        notes.append(f"{missing} of {len(records)} Zotero item(s) have no stored PDF in storage/.")
    return RecordsFile(str(folder) + (f" (collection {collection})" if collection else ""), "Zotero", records,
                       notes, pdfs)


def _stored_pdf(connection: sqlite3.Connection, folder: Path, item_id: int) -> Path | None:
    rows = connection.execute(
        "SELECT i.key, a.path FROM itemAttachments a JOIN items i ON i.itemID = a.itemID "
        "WHERE a.parentItemID = ? AND a.contentType = 'application/pdf' "
        "AND a.itemID NOT IN (SELECT itemID FROM deletedItems) ORDER BY a.itemID", (item_id,)).fetchall()
    storage = (folder / "storage").resolve()
    for key, path in rows:
        if not path or not path.startswith("storage:"):
            continue  # a linked file: it lives outside the data folder
        candidate = (storage / key / path[len("storage:"):]).resolve()
        if candidate.parent.parent == storage and candidate.is_file():
            return candidate
    return None
