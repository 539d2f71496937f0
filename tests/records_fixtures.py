"""Fixtures for issue 18: a Zotero data folder built from Zotero's published schema, and a Word
manuscript whose citations carry Zotero's field codes."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
from pathlib import Path

# The tables rag_core reads, as Zotero's schema (chrome/content/zotero/schema/userdata.sql and
# system.sql, Zotero 6 and 7) declares them.
ZOTERO_SCHEMA = """
CREATE TABLE itemTypes (itemTypeID INTEGER PRIMARY KEY, typeName TEXT, templateItemTypeID INT,
    display INT DEFAULT 1);
CREATE TABLE fields (fieldID INTEGER PRIMARY KEY, fieldName TEXT, fieldFormatID INT);
CREATE TABLE creatorTypes (creatorTypeID INTEGER PRIMARY KEY, creatorType TEXT);
CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, type TEXT NOT NULL, editable INT NOT NULL,
    filesEditable INT NOT NULL, version INT NOT NULL DEFAULT 0, storageVersion INT NOT NULL DEFAULT 0,
    lastSync INT NOT NULL DEFAULT 0, archived INT NOT NULL DEFAULT 0);
CREATE TABLE items (itemID INTEGER PRIMARY KEY, itemTypeID INT NOT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, libraryID INT NOT NULL, key TEXT NOT NULL,
    version INT NOT NULL DEFAULT 0, synced INT NOT NULL DEFAULT 0, UNIQUE (libraryID, key),
    FOREIGN KEY (libraryID) REFERENCES libraries(libraryID) ON DELETE CASCADE);
CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE);
CREATE TABLE itemData (itemID INT, fieldID INT, valueID, PRIMARY KEY (itemID, fieldID),
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (fieldID) REFERENCES fields(fieldID), FOREIGN KEY (valueID) REFERENCES itemDataValues(valueID));
CREATE TABLE creators (creatorID INTEGER PRIMARY KEY, firstName TEXT, lastName TEXT, fieldMode INT,
    UNIQUE (lastName, firstName, fieldMode));
CREATE TABLE itemCreators (itemID INT NOT NULL, creatorID INT NOT NULL, creatorTypeID INT NOT NULL DEFAULT 1,
    orderIndex INT NOT NULL DEFAULT 0, PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex),
    UNIQUE (itemID, orderIndex), FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (creatorID) REFERENCES creators(creatorID) ON DELETE CASCADE,
    FOREIGN KEY (creatorTypeID) REFERENCES creatorTypes(creatorTypeID));
CREATE TABLE collections (collectionID INTEGER PRIMARY KEY, collectionName TEXT NOT NULL,
    parentCollectionID INT DEFAULT NULL, clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL, key TEXT NOT NULL, version INT NOT NULL DEFAULT 0, synced INT NOT NULL DEFAULT 0,
    UNIQUE (libraryID, key), FOREIGN KEY (libraryID) REFERENCES libraries(libraryID) ON DELETE CASCADE,
    FOREIGN KEY (parentCollectionID) REFERENCES collections(collectionID) ON DELETE CASCADE);
CREATE TABLE collectionItems (collectionID INT NOT NULL, itemID INT NOT NULL, orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (collectionID, itemID), FOREIGN KEY (collectionID) REFERENCES collections(collectionID)
    ON DELETE CASCADE, FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE);
CREATE TABLE itemAttachments (itemID INTEGER PRIMARY KEY, parentItemID INT, linkMode INT, contentType TEXT,
    charsetID INT, path TEXT, syncState INT DEFAULT 0, storageModTime INT, storageHash TEXT,
    lastProcessedModificationTime INT, FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (parentItemID) REFERENCES items(itemID) ON DELETE CASCADE);
CREATE TABLE deletedItems (itemID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE);
"""
# Zotero's own ids for these (system.sql).
_TYPES = {"journalArticle": 22, "conferencePaper": 11, "preprint": 38, "attachment": 3, "note": 28}
_FIELDS = {"title": 1, "date": 6, "url": 13, "publicationTitle": 38, "DOI": 59, "extra": 16,
           "proceedingsTitle": 117, "archiveID": 125}


def make_zotero_folder(folder: Path, items: list[dict]) -> Path:
    """A Zotero data folder: ``zotero.sqlite`` and ``storage/KEY/file.pdf``. Each item: ``type``,
    ``fields`` (Zotero field name -> value), ``creators`` [(first, last)], ``pdf`` (a path to copy
    in as its stored attachment), ``collection`` (a name), ``deleted``."""
    folder.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(folder / "zotero.sqlite")
    db.executescript(ZOTERO_SCHEMA)
    db.executemany("INSERT INTO itemTypes (itemTypeID, typeName) VALUES (?, ?)", [(v, k) for k, v in _TYPES.items()])
    db.executemany("INSERT INTO fields (fieldID, fieldName) VALUES (?, ?)", [(v, k) for k, v in _FIELDS.items()])
    db.execute("INSERT INTO creatorTypes VALUES (8, 'author')")
    db.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (1, 'user', 1, 1)")
    collections: dict[str, int] = {}
    next_id = 1
    for n, item in enumerate(items):
        item_id, next_id = next_id, next_id + 1
        db.execute("INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (?, ?, 1, ?)",
                   (item_id, _TYPES[item.get("type", "journalArticle")], f"ITEM{n:04d}"))
        for field, value in item.get("fields", {}).items():
            db.execute("INSERT OR IGNORE INTO itemDataValues (value) VALUES (?)", (value,))
            value_id = db.execute("SELECT valueID FROM itemDataValues WHERE value = ?", (value,)).fetchone()[0]
            db.execute("INSERT INTO itemData VALUES (?, ?, ?)", (item_id, _FIELDS[field], value_id))
        for order, (first, last) in enumerate(item.get("creators", [])):
            db.execute("INSERT OR IGNORE INTO creators (firstName, lastName, fieldMode) VALUES (?, ?, 0)",
                       (first, last))
            creator = db.execute("SELECT creatorID FROM creators WHERE firstName = ? AND lastName = ?",
                                 (first, last)).fetchone()[0]
            db.execute("INSERT INTO itemCreators VALUES (?, ?, 8, ?)", (item_id, creator, order))
        if item.get("collection"):
            name = item["collection"]
            if name not in collections:
                collections[name] = len(collections) + 1
                db.execute("INSERT INTO collections (collectionID, collectionName, libraryID, key) VALUES (?, ?, 1, ?)",
                           (collections[name], name, f"COLL{collections[name]:04d}"))
            db.execute("INSERT INTO collectionItems VALUES (?, ?, 0)", (collections[name], item_id))
        if item.get("deleted"):
            db.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (item_id,))
        if item.get("pdf"):
            attachment, next_id = next_id, next_id + 1
            key = f"ATT{n:05d}"
            db.execute("INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (?, 3, 1, ?)", (attachment, key))
            stored = folder / "storage" / key / Path(item["pdf"]).name
            stored.parent.mkdir(parents=True)
            shutil.copyfile(item["pdf"], stored)
            db.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
                       "VALUES (?, ?, 0, 'application/pdf', ?)", (attachment, item_id, f"storage:{stored.name}"))
    db.commit()
    db.close()
    return folder


def zotero_field_code(items: list[dict], shown: str, *, mendeley: bool = False) -> str:
    """A citation field's code as Zotero's (or Mendeley's) Word plugin writes it."""
    payload = {"citationID": "a1b2c3", "properties": {"formattedCitation": shown, "plainCitation": shown,
                                                        "noteIndex": 0},
               "citationItems": [{"id": n + 1, "uris": [f"http://zotero.org/users/1/items/ITEM{n:04d}"],
                                  "itemData": item} for n, item in enumerate(items)],
               "schema": "https://github.com/citation-style-language/schema/raw/master/csl-citation.json"}
    head = "ADDIN CSL_CITATION " if mendeley else "ADDIN ZOTERO_ITEM CSL_CITATION "
    return head + json.dumps(payload)


def make_field_code_docx(paragraphs: list[list[tuple[str, str | None]]]) -> bytes:
    """A .docx whose paragraphs are pieces of text, each plain (code None) or a citation field
    (the text shown, and its code: Word's complex field, the code split over two runs)."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    for pieces in paragraphs:
        paragraph = document.add_paragraph()
        for text, code in pieces:
            if code is None:
                paragraph.add_run(text)
                continue
            for kind, content in (("begin", None), ("instr", code[:40]), ("instr", code[40:]), ("separate", None),
                                  ("text", text), ("end", None)):
                run = paragraph.add_run()
                if kind == "text":
                    run.text = content
                elif kind == "instr":
                    element = OxmlElement("w:instrText")
                    element.set(qn("xml:space"), "preserve")
                    element.text = content
                    run._r.append(element)
                else:
                    element = OxmlElement("w:fldChar")
                    element.set(qn("w:fldCharType"), kind)
                    run._r.append(element)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()
