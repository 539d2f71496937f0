"""Reference lists in the common styles (not a test): is each entry resolved to the right document
of a collection of the 25 shared PDFs, or to "not in collection" -- and never to a different paper
with the same first author and year?

    HF_HUB_OFFLINE=1 python benchmarks/bench_reference_lists.py [--data-dir DIR] [--set dev|heldout|all] [--json]

The entries are written by hand in ``benchmarks/data/reference_lists.json``, one list per style
(ACL, APA, IEEE, Nature, Vancouver, numeric with brackets (ACM), numeric without brackets (LNCS)),
for works in ``../shared/data/pdfs`` and works that are not there, traps among them: M. Lewis's
BART (2020) beside P. Lewis's RAG (2020), P. Lewis's PAQ (2021, one year off), N. Thakur's
Augmented SBERT beside BEIR (2021), and made-up papers with the first author and year of one of
the collection's (a J. Devlin 2019, a K. Lo 2020, ...). Each style's list becomes a manuscript
(one sentence citing each entry, the list under "References") read by ``manuscript_from_text``;
every citation is resolved against the documents' records as read from the PDFs
(``Library.documents``) by ``resolve_citation``. Per style: right (matched to its file),
absent-ok ("not in collection" for a work that is not there), ambiguous (the right file among the
candidates, or a work not there given candidates), missed (a work that is there said not to be),
wrong (matched to another document: must be 0). The collection is built without embeddings.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
PDFS = REPO.parent / "shared" / "data" / "pdfs"
DATA = REPO / "benchmarks" / "data" / "reference_lists.json"
OUTCOMES = ("right", "absent_ok", "ambiguous", "missed", "wrong", "unread")


def load_data(path: Path = DATA) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def manuscript_text(style: dict, entries: list[dict]) -> str:
    """One paragraph citing each entry (its marker, or its number), then the list."""
    lines, refs = [], []
    for n, item in enumerate(entries, start=1):
        marker = item.get("marker")
        if style.get("numbering"):
            lines.append(f"This was shown before in earlier work [{n}].")
            refs.append(style["numbering"].format(n=n) + item["entry"])
        else:
            narrative = not marker.startswith("(")
            lines.append(f"{marker} describe a method that we build on." if narrative
                         else f"This was shown before in earlier work {marker}.")
            refs.append(item["entry"])
    return "\n\n".join(lines) + "\n\nReferences\n\n" + "\n".join(refs) + "\n"


def outcome(resolution, want: str | None) -> str:
    """How one resolution counts: right, absent_ok, ambiguous, missed or wrong."""
    if want is None:
        if resolution.status == "not_in_collection":
            return "absent_ok"
        return "ambiguous" if resolution.status == "ambiguous" else "wrong" if resolution.status == "matched" \
            else "unread"
    if resolution.status == "matched":
        return "right" if resolution.source == want else "wrong"
    if resolution.status == "ambiguous":
        return "ambiguous" if want in resolution.candidates else "wrong"
    return "missed" if resolution.status == "not_in_collection" else "unread"


def run_style(style: dict, entries: list[dict], works: dict, infos: list[dict]) -> tuple[dict, list[str]]:
    """The counts of one style's list, and a line for each entry that is not right."""
    from rag_core.citations.manuscript import manuscript_from_text
    from rag_core.citations.resolution import resolve_citation

    counts = dict.fromkeys(OUTCOMES, 0)
    problems = []
    statements = manuscript_from_text(manuscript_text(style, entries)).statements()
    if len(statements) != len(entries):
        problems.append(f"{len(statements)} statements read for {len(entries)} entries")
    for statement, item in zip(statements, entries, strict=False):
        want = works[item["work"]]["file"]
        if len(statement.citations) != 1:
            counts["unread"] += 1
            problems.append(f"{item['work']}: {len(statement.citations)} citations read")
            continue
        resolution = resolve_citation(statement.citations[0], infos)
        got = outcome(resolution, want)
        counts[got] += 1
        if got not in ("right", "absent_ok"):
            problems.append(f"{item['work']} ({got}): {resolution.text()}")
    counts["unread"] += max(0, len(entries) - len(statements))
    return counts, problems


def collection_infos(data_dir: Path) -> list[dict]:
    """The shared PDFs' records as ``resolve_citation`` reads them (built once, without embeddings)."""
    from rag_core import Library
    from rag_core.retrieval.exact import document_texts

    library = Library(data_dir)
    if not library.exists("shared"):
        started = time.time()
        library.add_pdfs("shared", sorted(PDFS.glob("*.pdf")), compute_embeddings=False)
        print(f"built the collection in {time.time() - started:.0f} s", file=sys.stderr)
    openings = {d.source: d.text[:2000] for d in document_texts(library.load_index("shared").chunks)}
    return [{**{k: d.get(k) for k in ("source", "title", "authors", "year", "doi", "arxiv_id")},
             "first_page": openings.get(d["source"], "")} for d in library.documents("shared")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "rag-core-bench-references")
    parser.add_argument("--set", choices=("dev", "heldout", "all"), default="all")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args()
    data = load_data()
    infos = collection_infos(args.data_dir)
    sets = list(data["sets"]) if args.set == "all" else [args.set]
    results = {}
    for name in sets:
        for key, entries in data["sets"][name].items():
            counts, problems = run_style(data["styles"][key], entries, data["works"], infos)
            results[f"{name}/{key}"] = {"counts": counts, "problems": problems}
    if args.json:
        print(json.dumps(results, indent=1, ensure_ascii=False))
        return 0
    print(f"{'set/style':32} {'entries':>7} {'right':>5} {'absent ok':>9} {'ambig.':>6} {'missed':>6} "
          f"{'unread':>6} {'wrong':>5}")
    total = dict.fromkeys(OUTCOMES, 0)
    for label, result in results.items():
        c = result["counts"]
        for k in OUTCOMES:
            total[k] += c[k]
        print(f"{label:32} {sum(c.values()):>7} {c['right']:>5} {c['absent_ok']:>9} {c['ambiguous']:>6} "
              f"{c['missed']:>6} {c['unread']:>6} {c['wrong']:>5}")
        for problem in result["problems"]:
            print(f"    {problem}")
    print(f"{'all':32} {sum(total.values()):>7} {total['right']:>5} {total['absent_ok']:>9} {total['ambiguous']:>6} "
          f"{total['missed']:>6} {total['unread']:>6} {total['wrong']:>5}")
    return 1 if total["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
