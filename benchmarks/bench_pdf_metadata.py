"""How right the records read from the shared PDFs are (not a test): first author, every author, year.

    HF_HUB_OFFLINE=1 python benchmarks/bench_pdf_metadata.py [--markdown]

Each of the 25 PDFs of ../shared/data/pdfs is read by ``rag_core.pdf.extraction.extract_pdf``
(what an ingest stores) and its record compared with benchmarks/data/pdf_metadata_truth.json:

* first author: the first name's surname is the manifest's (folded: accents, case, hyphens and
  spaces; a name's surname is any run of its words after the first, so "Ivan Rodriguez Montoya"
  is Rodriguez-Montoya), and the name carries no mark ("Borgeaudy" is wrong);
* every author: as many names as the page prints, each with its surname, in order;
* year: one of the years the manifest names (a venue year, or its arXiv identifier's year).

A field the manifest does not name is not scored (``-``); a PDF is right when every field that
is scored is. Run it with ``PYTHONPATH`` pointing at another checkout to measure that one (the
figures before this reader: ``docs/metadata.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import unicodedata
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
PDFS = REPO.parent / "shared" / "data" / "pdfs"
TRUTH = REPO / "benchmarks" / "data" / "pdf_metadata_truth.json"


def key(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text)
    return "".join(c for c in folded if c.isalpha() and not unicodedata.combining(c)).casefold()


def has_surname(name: str, surname: str) -> bool:
    words = name.split()
    if len(words) == 1:
        return key(words[0]) == key(surname)
    runs = {key("".join(words[i:j])) for i in range(1, len(words)) for j in range(i + 1, len(words) + 1)}
    return key(surname) in runs


def score(record: dict, truth: dict) -> dict:
    authors = record.get("authors") or []
    out = {"first": None, "all": None, "year": None}
    if truth["first_surname"]:
        out["first"] = bool(authors) and has_surname(authors[0], truth["first_surname"])
    if truth["surnames"]:
        out["all"] = len(authors) == len(truth["surnames"]) and all(
            has_surname(a, s) for a, s in zip(authors, truth["surnames"], strict=False))
    if truth["years"]:
        out["year"] = record.get("year") in truth["years"]
    return out


def main() -> int:
    from rag_core.pdf.extraction import extract_pdf

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--json", type=Path, help="also write every record and score here")
    args = parser.parse_args()
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))["files"]
    rows, right, details = [], 0, {}
    for name in sorted(truth):
        record = extract_pdf(PDFS / name).metadata or {}
        s = score(record, truth[name])
        ok = all(v is not False for v in s.values())
        right += ok
        authors = record.get("authors") or []
        rows.append((name, authors[0] if authors else "", len(authors), record.get("year"), s, ok))
        details[name] = {"record": record, "score": s, "right": ok}
    mark = {True: "yes", False: "NO", None: "-"}
    if args.markdown:
        print("| PDF | first author read | authors | year | first author | every author | year | right |")
        print("|---|---|---:|---:|:-:|:-:|:-:|:-:|")
        for name, first, n, year, s, ok in rows:
            print(f"| `{name}` | {first} | {n} | {year or ''} | {mark[s['first']]} | {mark[s['all']]} | "
                  f"{mark[s['year']]} | {mark[ok]} |")
    else:
        for name, first, n, year, s, ok in rows:
            print(f"{name[:58]:58} {first[:24]:24} {n:3} {year or '':>5}  first {mark[s['first']]:3} "
                  f"all {mark[s['all']]:3} year {mark[s['year']]:3}  {'RIGHT' if ok else 'wrong'}")
    for field in ("first", "all", "year"):
        scored = [r[4][field] for r in rows if r[4][field] is not None]
        print(f"{field}: {sum(scored)} of {len(scored)} scored right")
    print(f"PDFs with first author, every author and year right: {right} of {len(rows)}")
    if args.json:
        args.json.write_text(json.dumps(details, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
