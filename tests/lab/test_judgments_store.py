"""Judgments as committed, checksummed data, on both stores: a judgments file or row that is
deleted, emptied or replaced is still read from its committed copy, reported by check-store, and
restored by --repair; judgments written by the previous version still load; an export and import
round trip gives back every field; a large merge holds the writer lock only for its write."""

from __future__ import annotations

import json

import psycopg
import pytest

from rag_core.atomic import write_json_atomic
from rag_core.cli import main
from rag_core.lab.judgments import (
    DATA_KEY,
    FORMAT,
    Judgment,
    add_judgments,
    commit_change,
    load_judgments,
    make_judgment,
    passages_of,
    set_grade,
)
from rag_core.lab.transfer import export_judgments, import_judgments
from tests.support import SMALL_PDFS

DPR = SMALL_PDFS[1]


def _judge(lib, name: str = "papers", queries=("dense retrieval", "dark matter mass")) -> list[Judgment]:
    index = lib.load_index(name)
    passages = passages_of(index, lib.documents(name))
    records = []
    for q, query in enumerate(queries):
        for k, i in enumerate((3 + q, 10 + q, 60 + q)):
            records.append(make_judgment(query, passages, i, (k + q) % 4, index.chunks[i]["text"],
                                         when=1_700_000_000.123456 + 3.7 * k + q))
    add_judgments(lib, name, records)
    return load_judgments(lib, name).records()


def _store_args(lib) -> list[str]:
    url = getattr(lib.store, "url", None)
    return ["--store", url] if url else ["--store", lib.store.location]


def _damage(lib, how: str) -> None:
    """Lose, empty or replace the live judgments behind the store's back."""
    empty_payload = {"format": FORMAT, "format_version": 1, "judgments": []}
    url = getattr(lib.store, "url", None)
    if url is None:
        path = lib.store.side_data("papers").live_path(DATA_KEY)
        if how == "deleted":
            path.unlink()
        elif how == "emptied":
            path.write_bytes(b"")
        else:
            path.write_text(json.dumps(empty_payload), encoding="utf-8")
        return
    with psycopg.connect(url, autocommit=True) as conn:
        if how == "deleted":
            conn.execute("DELETE FROM rag_core.side_data WHERE key = 'judgments'")
        elif how == "emptied":
            conn.execute("UPDATE rag_core.side_data SET value = '{}'::jsonb WHERE key = 'judgments'")
        else:
            conn.execute("UPDATE rag_core.side_data SET value = %s::jsonb WHERE key = 'judgments'",
                         (json.dumps(empty_payload),))


@pytest.mark.parametrize("how", ["deleted", "emptied", "replaced"])
def test_lost_judgments_are_reported_and_restored(lab_on_store, how, capsys):
    lib = lab_on_store
    judged = _judge(lib)
    _damage(lib, how)
    assert load_judgments(lib, "papers").records() == judged  # read from the committed copy meanwhile
    report = lib.check("papers")
    word = {"deleted": "missing", "emptied": "emptied", "replaced": "altered"}[how]
    assert not report.ok and any("judgments" in p and word in p for p in report.problems), report.problems
    assert main([*_store_args(lib), "check-store", "papers"]) == 1
    assert "judgments" in capsys.readouterr().out
    repaired = lib.check("papers", repair=True)
    assert repaired.ok and any("restored the relevance lab's judgments" in r for r in repaired.repaired), repaired
    assert lib.check("papers").problems == []
    assert main([*_store_args(lib), "check-store", "papers"]) == 0
    capsys.readouterr()
    assert lib.store.read_data("papers", DATA_KEY) == load_judgments(lib, "papers").to_payload()
    assert load_judgments(lib, "papers").records() == judged
    if getattr(lib.store, "url", None) is None:  # the live file itself is back
        path = lib.store.side_data("papers").live_path(DATA_KEY)
        assert json.loads(path.read_text())["count"] == len(judged)


def test_when_the_newest_copy_is_damaged_too_the_last_good_generation_is_restored(lab_on_store):
    lib = lab_on_store
    first = _judge(lib, queries=("dense retrieval",))
    everything = _judge(lib, queries=("dense retrieval", "dark matter mass"))
    assert len(everything) > len(first)
    url = getattr(lib.store, "url", None)
    if url is None:
        side = lib.store.side_data("papers")
        side.live_path(DATA_KEY).unlink()
        newest = side.records()[DATA_KEY]
        side.copy_path(DATA_KEY, newest).write_text("{}")
    else:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DELETE FROM rag_core.side_data WHERE key = 'judgments'")
            conn.execute("UPDATE rag_core.side_data_log SET data = 'damaged' WHERE key = 'judgments' AND generation = "
                         "(SELECT max(generation) FROM rag_core.side_data_log WHERE key = 'judgments')")
    with pytest.raises(Exception, match="judgments"):
        load_judgments(lib, "papers")
    report = lib.check("papers", repair=True)
    assert report.ok and any("newest intact copy" in r for r in report.repaired), report
    assert load_judgments(lib, "papers").records() == first  # the last good judgments
    assert lib.check("papers").problems == []


def test_judgments_written_by_the_previous_version_still_load(lab_library):
    """A folder collection whose data/judgments.json the previous version wrote (format 1, no
    checksum record) loads, checks clean, and is recorded by the next write."""
    lib = lab_library
    judged = _judge(lib)
    side = lib.store.side_data("papers")
    (side.path / "data-records.json").unlink()
    for kept in (side.path / "data-history").rglob("*.json"):
        kept.unlink()
    write_json_atomic(side.live_path(DATA_KEY), {"format": FORMAT, "format_version": 1,
                                                 "judgments": [j.to_dict() for j in judged]})
    assert load_judgments(lib, "papers").records() == judged
    assert lib.check("papers").ok and lib.check("papers").problems == []
    index = lib.load_index("papers")
    extra = make_judgment("a third question", passages_of(index, lib.documents("papers")), 20, 2,
                          index.chunks[20]["text"])
    set_grade(lib, "papers", extra)
    assert load_judgments(lib, "papers").records() == sorted([*judged, extra], key=lambda j: (j.query, j.doc,
                                                                                              j.start, j.end))
    assert json.loads(side.live_path(DATA_KEY).read_text())["format_version"] == 2
    assert side.records()[DATA_KEY].generation == 2  # adopted as generation 1, then written
    side.live_path(DATA_KEY).unlink()
    assert not lib.check("papers").ok  # recorded now: a loss is found


def test_a_postgres_library_of_the_previous_schema_still_loads_its_judgments(lab_on_store, store_kind):
    """Schema 1 (no side_data_log) with a judgments row the previous version wrote: the store is
    upgraded on first use, the judgments load, and check-store --repair records them."""
    if store_kind != "postgres":
        pytest.skip("PostgreSQL only")
    from rag_core.collections.library import Library

    lib = lab_on_store
    judged = _judge(lib)
    url = lib.store.url
    legacy = {"format": FORMAT, "format_version": 1, "judgments": [j.to_dict() for j in judged]}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE rag_core.side_data_log")
        conn.execute("UPDATE rag_core.meta SET value = '1'::jsonb WHERE key = 'schema_version'")
        conn.execute("UPDATE rag_core.side_data SET value = %s::jsonb WHERE key = 'judgments'", (json.dumps(legacy),))
    older = Library(store=url + "&application_name=upgraded")  # a new process's first connection
    assert load_judgments(older, "papers").records() == judged
    report = older.check("papers", repair=True)
    assert report.ok and any("recorded the checksums" in r for r in report.repaired), report
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM rag_core.side_data WHERE key = 'judgments'")
    assert load_judgments(older, "papers").records() == judged
    assert not older.check("papers").ok
    older.store.close()


def test_export_and_import_round_trip_every_field(lab_library, tmp_path):
    lib = lab_library
    index = lib.load_index("papers")
    judged = _judge(lib)
    sheet = tmp_path / "evidence.csv"
    words = index.chunks[40]["text"].split()
    quote = " ".join(words[len(words) // 2:len(words) // 2 + 9])  # in no other passage (not in an overlap)
    sheet.write_text(f"query,document,quote,grade\nwhat is quoted,{DPR},\"{quote}\",3\n", encoding="utf-8")
    assert import_judgments(lib, "papers", sheet).added == 1  # a judgment with an evidence quote and its place
    before = load_judgments(lib, "papers").records()
    assert len(before) == len(judged) + 1 and any(j.quote_start is not None and j.by == "import" for j in before)
    out = tmp_path / "judgments.csv"
    export_judgments(lib, "papers", out)
    with lib.store.writing("papers"):
        lib.store.write_data("papers", DATA_KEY, None)
    report = import_judgments(lib, "papers", out)
    assert report.imported == len(before) and report.rejected == 0 and not report.warnings, report.to_dict()
    assert load_judgments(lib, "papers").records() == before  # every field: place, grade, time, quote, author
    folder = tmp_path / "beir"
    export_judgments(lib, "papers", folder)
    with lib.store.writing("papers"):
        lib.store.write_data("papers", DATA_KEY, None)
    assert import_judgments(lib, "papers", folder).rejected == 0
    assert {(j.query, j.key, j.grade) for j in load_judgments(lib, "papers")} == {(j.query, j.key, j.grade)
                                                                                  for j in before}


def test_a_change_is_prepared_outside_the_writer_lock(lab_library, monkeypatch):
    """A merge waits for the lock only to write; a writer that committed meanwhile is not lost."""
    from rag_core.collections.store.folder import store as folder_store

    monkeypatch.setattr(folder_store, "LOCK_TIMEOUT_S", 5)  # were the lock held while preparing: busy, not a hang
    lib = lab_library
    index = lib.load_index("papers")
    passages = passages_of(index, lib.documents("papers"))
    first = make_judgment("first", passages, 1, 1)
    other = make_judgment("committed meanwhile", passages, 2, 2)
    calls = []

    def change(current):
        if not calls:  # another writer commits while this change is being prepared
            set_grade(lib, "papers", other)
        calls.append(len(current))
        return current.with_judgment(first), "done"

    result = commit_change(lib, "papers", change)
    assert result[1] == "done" and calls == [0, 1]  # prepared again, under the lock, over the other's grade
    assert {j.query for j in load_judgments(lib, "papers")} == {"first", "committed meanwhile"}


def test_a_postgres_row_written_again_with_the_same_value_is_not_damage(lab_on_store, store_kind):
    """As after a restore from pg_dump: the row is new (another xmin), its value the same."""
    if store_kind != "postgres":
        pytest.skip("PostgreSQL only")
    lib = lab_on_store
    judged = _judge(lib)
    with psycopg.connect(lib.store.url, autocommit=True) as conn:
        conn.execute("UPDATE rag_core.side_data SET value = value, updated = updated + 1 WHERE key = 'judgments'")
    assert load_judgments(lib, "papers").records() == judged
    assert lib.check("papers").problems == []


@pytest.mark.parametrize("how", ["emptied", "halved", "garbled", "deleted"])
def test_every_side_data_file_damaged_in_turn(lab_library, tmp_path, how, capsys):
    """Each file of the judgments (the live file, the checksum records, each kept copy) damaged
    in turn: never a traceback, always reported, and a repair gives back every judgment."""
    import shutil

    judged = _judge(lab_library, queries=("dense retrieval",))
    judged = _judge(lab_library, queries=("dense retrieval", "dark matter mass"))
    index = lab_library.load_index("papers")
    set_grade(lab_library, "papers", make_judgment("third", passages_of(index, lab_library.documents("papers")), 5, 1))
    judged = load_judgments(lab_library, "papers").records()
    folder = lab_library.store.side_data("papers").path
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.json")
                   if p.name.startswith(("judgments", "data-records", "g0")))
    assert len(files) == 5, files  # live, records, three kept generations
    newest = max(f for f in files if f.startswith("data-history"))  # an older copy gone is history lost, not damage
    from rag_core.collections.library import Library

    for rel in files:
        root = tmp_path / f"{how}-{rel.replace('/', '_')}"
        shutil.copytree(lab_library.root, root)
        lib = Library(root)
        path = lib.store.side_data("papers").path / rel
        data = path.read_bytes()
        if how == "emptied":
            path.write_bytes(b"")
        elif how == "halved":
            path.write_bytes(data[: len(data) // 2])
        elif how == "garbled":
            path.write_bytes(data[:40] + bytes(b ^ 0x5A for b in data[40:80]) + data[80:])
        else:
            path.unlink()
        try:
            assert load_judgments(lib, "papers").records() == judged, rel
        except Exception as exc:  # noqa: BLE001 - only the checksum records' loss may stop a read
            assert rel == "data-records.json" and "check-store" in str(exc), (rel, how, exc)
        older_copy_gone = how == "deleted" and rel.startswith("data-history") and rel != newest
        assert main(["--data-dir", str(root), "check-store", "papers"]) == (0 if older_copy_gone else 1), (rel, how)
        out, err = capsys.readouterr()
        assert "Traceback" not in err, (rel, how, err)
        assert older_copy_gone or "judgments" in out or "data-records" in out, (rel, how, out)
        repaired = lib.check("papers", repair=True)
        assert repaired.ok, (rel, how, repaired)
        assert load_judgments(lib, "papers").records() == judged, (rel, how)
        assert lib.check("papers").problems == [], (rel, how)
