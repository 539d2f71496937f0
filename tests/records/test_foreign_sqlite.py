"""Issue 27 rows 1-4: a Zotero database read by the rules for a foreign SQLite database -- only
real tables with the expected columns (no view, virtual table or generated column is queried),
row and time budgets while reading, a clear message for a schema it cannot read, every value
read as text, and what Zotero committed to its -wal file read too (or said to be missing)."""

from __future__ import annotations

import sqlite3

import pytest

from rag_core.errors import InputFileError
from rag_core.records import foreign_sqlite
from rag_core.records.foreign_sqlite import open_foreign_sqlite
from rag_core.records.zotero import read_zotero, zotero_collections
from tests.records_fixtures import make_zotero_folder

ITEMS = [{"fields": {"title": "Attention Is All You Need", "date": "2017"}, "creators": [("Ashish", "Vaswani")],
          "collection": "Thesis"},
         {"fields": {"title": "BERT: Pre-training of Deep Bidirectional Transformers", "date": "2019"},
          "creators": [("Jacob", "Devlin")]}]
DPR = "Dense Passage Retrieval for Open-Domain Question Answering"


def _folder(tmp_path, items=ITEMS):
    return make_zotero_folder(tmp_path / "Zotero", items)


def _sql(folder, script: str) -> None:
    db = sqlite3.connect(folder / "zotero.sqlite")
    db.executescript(script)
    db.commit()
    db.close()


def test_an_items_view_over_an_endless_query_is_refused_before_it_runs(tmp_path):
    folder = tmp_path / "z"
    folder.mkdir()
    db = sqlite3.connect(folder / "zotero.sqlite")
    db.executescript("CREATE VIEW items AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) "
                     "SELECT n AS itemID, 22 AS itemTypeID, 'K'||n AS key FROM r;"
                     "CREATE TABLE itemTypes(itemTypeID INTEGER PRIMARY KEY, typeName TEXT);"
                     "CREATE TABLE deletedItems(itemID INTEGER PRIMARY KEY);")
    db.close()
    with pytest.raises(InputFileError, match="items is a view, not a table"):
        read_zotero(folder)


@pytest.mark.parametrize("trick, message", [
    ("ALTER TABLE itemTypes RENAME TO itemTypes_real; CREATE VIEW itemTypes AS SELECT * FROM itemTypes_real;",
     "itemTypes is a view"),
    ("DROP TABLE deletedItems; CREATE VIRTUAL TABLE deletedItems USING fts5(itemID);", "deletedItems is a virtual"),
    ("DROP TABLE creators; CREATE TABLE creators (creatorID INTEGER PRIMARY KEY, firstName TEXT, "
     "lastName TEXT GENERATED ALWAYS AS (printf('%.*c', 900000000, 'x')) VIRTUAL);",
     "creators.lastName is a generated"),
    ("DROP TABLE fields;", "no table fields"),
    ("ALTER TABLE itemDataValues RENAME COLUMN value TO val;", "itemDataValues has no column value"),
])
def test_other_view_tricks_and_missing_schema_are_one_clear_message(tmp_path, trick, message):
    folder = _folder(tmp_path)
    _sql(folder, trick)
    with pytest.raises(InputFileError, match=message):
        read_zotero(folder)
    with pytest.raises(InputFileError, match=message):
        zotero_collections(folder)


def test_the_schema_of_the_doors_case_names_every_missing_table(tmp_path):
    folder = tmp_path / "z"
    folder.mkdir()
    _sql(folder, "CREATE TABLE items (itemID INTEGER PRIMARY KEY)")
    with pytest.raises(InputFileError, match=r"no table itemTypes, fields.*items has no column itemTypeID"):
        read_zotero(folder)


def test_values_of_any_stored_type_are_read_as_text(tmp_path):
    folder = _folder(tmp_path)
    _sql(folder, "INSERT INTO itemDataValues VALUES (9001, 2017); INSERT INTO itemDataValues VALUES (9002, 42);"
                 "INSERT INTO itemDataValues VALUES (9003, x'4174746e');"
                 "UPDATE itemData SET valueID = 9001 WHERE itemID = 1 AND fieldID = 6;"
                 "INSERT INTO itemData VALUES (1, 16, 9002);"  # extra: an integer
                 "UPDATE itemData SET valueID = 9003 WHERE itemID = 2 AND fieldID = 1;")  # a title stored as a blob
    records = read_zotero(folder).records
    assert records[0]["year"] == 2017 and records[0]["title"] == "Attention Is All You Need"
    assert records[1]["title"] == "Attn"


def test_the_row_budget_is_checked_while_reading(tmp_path, monkeypatch):
    from rag_core.records import zotero

    folder = _folder(tmp_path, ITEMS * 3)
    monkeypatch.setattr(zotero, "MAX_RECORDS", 4)
    read_rows = []
    real = foreign_sqlite.ForeignDatabase.rows

    def counting(self, sql, params=(), **kw):
        for row in real(self, sql, params, **kw):
            read_rows.append(sql[:30])
            yield row
    monkeypatch.setattr(foreign_sqlite.ForeignDatabase, "rows", counting)
    with pytest.raises(InputFileError, match="more than 4 items; import one collection at a time"):
        read_zotero(folder)
    assert sum(1 for s in read_rows if s.startswith("SELECT i.itemID")) == 4  # stopped at the fifth, not after all


def test_the_time_budget_stops_a_query_that_runs_on(tmp_path):
    folder = _folder(tmp_path)
    with open_foreign_sqlite(folder / "zotero.sqlite", tables={"items": ("itemID",)}, max_bytes=2**30,
                             seconds=0) as db, pytest.raises(InputFileError, match="took longer than 0 s"):
        db.all("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT count(*) FROM r", budget=1)


def test_a_value_over_the_size_limit_is_an_error_not_an_allocation(tmp_path, monkeypatch):
    folder = _folder(tmp_path, [{"fields": {"title": "T" * 5000, "date": "2017"}}])
    monkeypatch.setattr(foreign_sqlite, "FOREIGN_SQLITE_MAX_VALUE_BYTES", 1024)
    with pytest.raises(InputFileError, match=r"holds a value larger than 1\.0 KiB"):
        read_zotero(folder)


def _commit_to_wal(folder, *, exclusive: bool) -> sqlite3.Connection:
    """What a running Zotero does: the database in WAL mode, an item committed to the -wal file and
    not yet checkpointed, the connection kept open (with Zotero's exclusive lock when asked)."""
    writer = sqlite3.connect(folder / "zotero.sqlite", isolation_level=None)
    if exclusive:
        writer.execute("PRAGMA locking_mode=EXCLUSIVE")
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO itemDataValues (value) VALUES (?)", (DPR,))
    value = writer.execute("SELECT last_insert_rowid()").fetchone()[0]
    writer.execute("INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (50, 22, 1, 'NEW')")
    writer.execute("INSERT INTO itemData VALUES (50, 1, ?)", (value,))
    return writer


@pytest.mark.parametrize("exclusive", [False, True])
def test_what_zotero_committed_to_its_wal_file_is_read_without_touching_its_files(tmp_path, exclusive):
    folder = _folder(tmp_path)
    writer = _commit_to_wal(folder, exclusive=exclusive)
    try:
        before = {p.name: p.read_bytes() for p in folder.iterdir() if p.name.startswith("zotero.sqlite")}
        found = read_zotero(folder)
        after = {p.name: p.read_bytes() for p in folder.iterdir() if p.name.startswith("zotero.sqlite")}
    finally:
        writer.close()
    assert [r["title"] for r in found.records][-1] == DPR
    assert any("zotero.sqlite-wal holds changes" in n and "private copy" in n for n in found.notes)
    assert after == before  # nothing of Zotero's written, no file added


def test_a_wal_file_that_cannot_be_copied_is_said_to_be_missing(tmp_path, monkeypatch):
    import collections

    folder = _folder(tmp_path)
    writer = _commit_to_wal(folder, exclusive=True)
    monkeypatch.setattr(foreign_sqlite.shutil, "disk_usage", lambda _p: collections.namedtuple(
        "usage", "total used free")(0, 0, 0))
    try:
        found = read_zotero(folder)
    finally:
        writer.close()
    assert DPR not in [r["title"] for r in found.records]
    assert any("the newest changes may be missing" in n for n in found.notes)


@pytest.mark.parametrize("odd", ["folder", "garbage"])
def test_an_odd_wal_file_is_no_traceback(tmp_path, odd):
    import os

    folder = _folder(tmp_path)
    wal = folder / "zotero.sqlite-wal"
    if odd == "folder":
        wal.mkdir()
    else:
        wal.write_bytes(os.urandom(5000))  # not a log SQLite wrote: recovery passes it over
    found = read_zotero(folder)
    assert [r["title"] for r in found.records] == [item["fields"]["title"] for item in ITEMS]
    if odd == "folder":
        assert any("the newest changes may be missing" in n for n in found.notes)
