"""How long a records import takes to read its file (not a test): BibTeX, CSL-JSON, RIS, a Zotero library.

    python benchmarks/bench_records_import.py [--cases big_bib,over_cap,...] [--repeat 3] [--json out.json]

Each case is built in a temporary folder, then read by ``rag_core.records.reading.read_records``
(the .bib, .json and .ris files) or ``rag_core.records.zotero.read_zotero`` in a fresh Python
process (``PYTHONPATH`` picks the checkout: point it at another one to measure that), which reports
its seconds and its peak memory (max RSS). A case that is refused reports the first words of its
message. The cases:

* ``big_bib`` -- 39,474 entries with 1 KB abstracts, braces and accents in every entry: just under
  the 50 MiB cap (issue 27 row 11: 125 s);
* ``over_cap`` -- 100,001 one-line entries (7 MiB), over the 100,000-record cap (refused after 77 s);
* ``too_big`` -- a 60 MiB file, over the byte cap;
* ``csl`` / ``ris`` -- 20,000 records as CSL-JSON and as RIS;
* ``zotero_20k`` / ``zotero_100k`` -- a Zotero library of that many items (title, date, DOI, two
  creators, a collection);
* ``zotero_wal`` -- the 20,000-item library with 100 items Zotero committed to its -wal file and
  not yet checkpointed (read from a private copy of the database and its log).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = ("big_bib", "over_cap", "too_big", "csl", "ris", "zotero_20k", "zotero_100k", "zotero_wal")

_ENTRY = ("@article{{key{n},\n  title = {{A study of things number {n} with {{B}}races and {{\\\"u}}mlauts}},\n"
          "  author = {{Smith, John and M{{\\\"u}}ller, Hans and others}},\n"
          "  abstract = {{" + "lorem ipsum dolor sit amet " * 40 + "}},\n  year = {{2019}},\n"
          "  journal = {{Journal of Tests}},\n  doi = {{10.1234/abc.{n}}},\n}}\n\n")


def big_bib(path: Path) -> Path:
    """Just under 50 MiB of BibTeX (../shared/repro/big_bib.py's file)."""
    cap, parts, size, n = 50 * 1024 * 1024 - 10, [], 0, 0
    while size + len(_ENTRY.format(n=n)) <= cap:
        text = _ENTRY.format(n=n)
        parts.append(text)
        size += len(text)
        n += 1
    path.write_text("".join(parts), encoding="utf-8")
    return path


def zotero_library(folder: Path, items: int, *, wal_items: int = 0) -> tuple[Path, sqlite3.Connection | None]:
    """A Zotero data folder of ``items`` items written in bulk (Zotero's tables, the columns read);
    with ``wal_items``, that many more committed to the -wal file by a connection left open."""
    from rag_core.testing import ZOTERO_SCHEMA

    folder.mkdir(parents=True)
    db = sqlite3.connect(folder / "zotero.sqlite")
    db.executescript(ZOTERO_SCHEMA)
    db.executemany("INSERT INTO itemTypes (itemTypeID, typeName) VALUES (?, ?)", [(22, "journalArticle"),
                                                                                  (3, "attachment")])
    db.executemany("INSERT INTO fields (fieldID, fieldName) VALUES (?, ?)", [(1, "title"), (6, "date"), (59, "DOI")])
    db.execute("INSERT INTO creatorTypes VALUES (8, 'author')")
    db.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (1, 'user', 1, 1)")
    db.execute("INSERT INTO collections (collectionID, collectionName, libraryID, key) VALUES (1, 'All', 1, 'C1')")

    def add(connection, start: int, count: int) -> None:
        rows = range(start, start + count)
        connection.executemany("INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (?, 22, 1, ?)",
                               [(i, f"K{i:07d}") for i in rows])
        values = [(3 * i, f"A study of things number {i}") for i in rows]
        values += [(3 * i + 2, f"10.1234/abc.{i}") for i in rows]
        connection.executemany("INSERT INTO itemDataValues (valueID, value) VALUES (?, ?)", values)
        connection.execute("INSERT OR IGNORE INTO itemDataValues (valueID, value) VALUES (1, '2019-00-00 2019')")
        connection.executemany("INSERT INTO itemData VALUES (?, ?, ?)", [(i, 1, 3 * i) for i in rows]
                               + [(i, 6, 1) for i in rows] + [(i, 59, 3 * i + 2) for i in rows])
        connection.executemany("INSERT INTO creators (creatorID, firstName, lastName, fieldMode) VALUES (?, ?, ?, 0)",
                               [(2 * i + k, "John", f"Smith{i}x{k}") for i in rows for k in (0, 1)])
        connection.executemany("INSERT INTO itemCreators VALUES (?, ?, 8, ?)",
                               [(i, 2 * i + k, k) for i in rows for k in (0, 1)])
        connection.executemany("INSERT INTO collectionItems VALUES (1, ?, 0)", [(i,) for i in rows])

    add(db, 1, items)
    db.commit()
    db.close()
    if not wal_items:
        return folder, None
    writer = sqlite3.connect(folder / "zotero.sqlite", isolation_level=None)
    writer.execute("PRAGMA locking_mode=EXCLUSIVE")  # as a running Zotero holds it
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("BEGIN")
    add(writer, items + 1, wal_items)
    writer.execute("COMMIT")
    return folder, writer


_READER = r"""
import json, resource, sys, time
started = time.perf_counter()
kind, path = sys.argv[1], sys.argv[2]
try:
    if kind == "zotero":
        from rag_core.records.zotero import read_zotero
        found = read_zotero(path)
    else:
        from rag_core.records.reading import read_records
        found = read_records(path)
    outcome = {"records": len(found.records), "notes": found.notes[:3]}
except Exception as exc:  # a refusal: its message
    outcome = {"refused": f"{type(exc).__name__}: {str(exc)[:160]}"}
outcome["seconds"] = round(time.perf_counter() - started, 3)
outcome["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
print(json.dumps(outcome))
"""


def read_in_child(kind: str, path: Path) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _READER, kind, str(path)], capture_output=True, text=True, env=env,
                          check=False, timeout=3600)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def build(case: str, work: Path):
    """``(kind, path, open writer or None)`` of a case."""
    if case == "big_bib":
        return "file", big_bib(work / "near50mb.bib"), None
    if case == "over_cap":
        path = work / "many.bib"
        path.write_text("".join(f"@misc{{k{n}, title={{T {n}}}}}\n" for n in range(100_001)), encoding="utf-8")
        return "file", path, None
    if case == "too_big":
        path = work / "huge.bib"
        with open(path, "wb") as handle:
            handle.truncate(60 * 1024 * 1024)
        return "file", path, None
    if case == "csl":
        path = work / "refs.json"
        path.write_text(json.dumps([{"id": f"k{n}", "type": "article-journal", "title": f"A study of things {n}",
                                     "author": [{"family": "Smith", "given": "John"}, {"family": "Müller",
                                                                                      "given": "Hans"}],
                                     "issued": {"date-parts": [[2019]]}, "DOI": f"10.1234/abc.{n}",
                                     "container-title": "Journal of Tests"} for n in range(20_000)]),
                        encoding="utf-8")
        return "file", path, None
    if case == "ris":
        path = work / "refs.ris"
        path.write_text("".join(f"TY  - JOUR\nTI  - A study of things {n}\nAU  - Smith, John\nAU  - Müller, Hans\n"
                                f"PY  - 2019\nDO  - 10.1234/abc.{n}\nJO  - Journal of Tests\nER  - \n"
                                for n in range(20_000)), encoding="utf-8")
        return "file", path, None
    if case in ("zotero_20k", "zotero_100k", "zotero_wal"):
        items = 100_000 if case == "zotero_100k" else 20_000
        folder, writer = zotero_library(work / case, items, wal_items=100 if case == "zotero_wal" else 0)
        return "zotero", folder, writer
    raise ValueError(f"no case {case!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeat", type=int, default=1, help="runs of each case (the median is reported)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-records-") as tmp:
        for case in args.cases.split(","):
            work = Path(tmp) / case
            work.mkdir()
            kind, path, writer = build(case, work)
            try:
                runs = [read_in_child(kind, path) for _ in range(args.repeat)]
            finally:
                if writer is not None:
                    writer.close()
            runs.sort(key=lambda r: r.get("seconds", 1e9))
            results[case] = {**runs[len(runs) // 2], "runs": [r.get("seconds") for r in runs]}
            shown = results[case]
            what = shown.get("refused") or shown.get("error") or f"{shown['records']:,} records"
            print(f"{case:12s} {shown.get('seconds', '?'):>8} s  {shown.get('max_rss_mb', '?'):>7} MB  {what}",
                  flush=True)
    if args.json:
        args.json.write_text(json.dumps({"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                         "load_average": os.getloadavg(), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
