"""Every door of one collection at once (not a test): errors, lost documents, lost judgments, latencies.

    HF_HUB_OFFLINE=1 python benchmarks/stress_doors.py [--seconds 300] [--store folder|postgres|URL|both]
        [--searchers 4] [--ingesters 2] [--checkers 2] [--importers 1] [--json FILE]

One collection ("c") of three shared PDFs (TF-IDF, BM25 and exact search: no dense vectors, so
the CPU goes to the doors), with a few judgments, then for ``--seconds``, each in its own process:

* **searchers** loop: load the index, a TF-IDF and a BM25 search, an exact search, the documents
  and the collections;
* **ingesters** loop: add a PDF of their own (another shared PDF each), then remove it;
* **checkers** loop: read a manuscript of 12 quotes taken word for word from the three PDFs and
  check it against the collection (every verdict and document must be those the same check gave
  before the stress began, on the quiet collection: ``baseline_verbatim`` says how many of them
  were ``verbatim`` in the document quoted),
  then read one hostile manuscript of issue 22 (300 KB: hyphenated capitals, ``\\cite[``,
  initials, short paragraphs in turn) and find its statements;
* **importers** loop: write a CSV of 200 judgments (a new question each round, exact places
  in the three PDFs) and import it, remembering each row it wrote.

At the end the collection must hold exactly its three PDFs, ``check`` must find nothing wrong,
every judgment an import reported written (and the seeds) must be stored with its grade, and no
process may have seen an error. ``--store both`` runs the folder store, then PostgreSQL (a
throw-away pgserver, as the other benchmarks start it). Prints one JSON object per store.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PDFS = REPO.parent / "shared" / "data" / "pdfs"
BASE = ("ml_bert_devlin2018_arxiv1810.04805.pdf", "ml_dpr_karpukhin2020_arxiv2004.04906.pdf",
        "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf")
WRITES = ("awkward_apl2011_custom_font_encoding_2col.pdf", "awkward_scanned_ocr_layer_zfn_a_1999_solitary_waves.pdf")
HOSTILE = ("hyphenated-capitals", "cite-brackets", "initials", "short-paragraphs")
HOSTILE_BYTES = 300_000

COMMON = textwrap.dedent("""
    import json, sys, time, traceback
    from rag_core.collections.library import Library
    store, seconds, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    lib = Library(store=store)
    stop = time.time() + seconds
    errors, latencies = [], []
    def failed(exc):
        errors.append(f"{type(exc).__name__}: {exc}"[:300] + " @ " + traceback.format_exc().splitlines()[-3][:200])
    def done(**extra):
        with open(out, "w") as handle:
            json.dump({"errors": errors[:20], "n_errors": len(errors), "latencies_s": latencies, **extra}, handle)
""")

SEARCHER = COMMON + textwrap.dedent("""
    from rag_core.retrieval.ranking import search_lexical
    from rag_core.retrieval.exact import search_exact
    queries = ["dense passage retrieval", "masked language model", "dark matter and the CMB", "fine-tuning BERT"]
    n = 0
    while time.time() < stop:
        t = time.perf_counter()
        try:
            index = lib.load_index("c")
            search_lexical(queries[n % 4], index, top=5, method="tfidf")
            search_lexical(queries[n % 4], index, top=5, method="bm25")
            search_exact("retrieval", index, max_hits=3)
            lib.documents("c")
            lib.list()
        except Exception as exc:
            failed(exc)
        latencies.append(time.perf_counter() - t)
        n += 1
    done()
""")

INGESTER = COMMON + textwrap.dedent("""
    from pathlib import Path
    pdf = sys.argv[4]
    rounds = 0
    while time.time() < stop:
        t = time.perf_counter()
        try:
            report = lib.add_pdfs("c", [pdf], embed="none")
            assert report.files[0].status == "ok", (report.files[0].status, report.files[0].reason)
            lib.remove_documents("c", [report.files[0].source])
            rounds += 1
        except Exception as exc:
            failed(exc)
        latencies.append(time.perf_counter() - t)
    done(rounds=rounds)
""")

CHECKER = COMMON + textwrap.dedent("""
    from rag_core.citations.manuscript import ManuscriptError, check_statements, read_manuscript
    manuscript, expected, hostile = sys.argv[4], json.loads(sys.argv[5]), sys.argv[6:]
    rounds, hostile_s = 0, []
    while time.time() < stop:
        t = time.perf_counter()
        try:
            statements = read_manuscript(manuscript).statements()
            rows = check_statements(statements, lib.load_index("c"), documents=lib.documents("c"), top=1)
            got = [[row.verdict, row.source] for row in rows]
            assert got == expected, f"verdicts {got} != {expected}"
            rounds += 1
        except Exception as exc:
            failed(exc)
        latencies.append(time.perf_counter() - t)
        path = hostile[rounds % len(hostile)]
        t = time.perf_counter()
        try:
            read_manuscript(path).statements()
        except ManuscriptError:
            pass
        except Exception as exc:
            failed(exc)
        hostile_s.append(time.perf_counter() - t)
    done(rounds=rounds, hostile_s=hostile_s)
""")

IMPORTER = COMMON + textwrap.dedent("""
    import random
    from rag_core.lab.transfer import import_judgments
    places, folder = json.loads(open(sys.argv[4]).read()), sys.argv[5]
    rng = random.Random(int(sys.argv[6]))
    written, rounds = [], 0
    while time.time() < stop:
        query = f"stress question {sys.argv[6]} {rounds}"
        rows = {}
        for _ in range(200):
            sha, start, end = places[rng.randrange(len(places))]
            rows[(sha, start, end)] = rng.randrange(4)
        path = f"{folder}/import-{sys.argv[6]}-{rounds}.csv"
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write("query,document,quote,grade,doc_sha256,start,end\\r\\n")
            for (sha, start, end), grade in rows.items():
                handle.write(f"{query},{sha[:12]},,{grade},{sha},{start},{end}\\r\\n")
        t = time.perf_counter()
        try:
            report = import_judgments(lib, "c", path)
            assert report.rejected == 0 and report.added == len(rows), report.summary()
            written.extend([query, sha, start, end, grade] for (sha, start, end), grade in rows.items())
            rounds += 1
        except Exception as exc:
            failed(exc)
        latencies.append(time.perf_counter() - t)
    done(rounds=rounds, written=written)
""")


def percentiles(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(values), "p50_s": round(statistics.median(ordered), 3),
            "p95_s": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3),
            "max_s": round(ordered[-1], 3)}


def manuscript(library, folder: Path) -> tuple[Path, list]:
    """12 quotes, word for word from the three PDFs (four each, each from inside one passage), and
    the verdict each was written to get."""
    from rag_core.text.sentences import split_sentences

    index = library.load_index("c")
    lines, expected = [], []
    for source in BASE:
        picked = 0
        for chunk in (c for c in index.chunks if c["source"] == source):
            text = " ".join(chunk["text"].split())
            for a, b in split_sentences(text):
                words = text[a:b].split()
                if picked < 4 and 10 <= len(words) <= 30 and '"' not in text[a:b] and "\u201c" not in text[a:b]:
                    lines.append(f"The paper says that \u201c{' '.join(words[2:-2])}\u201d.")
                    expected.append(["verbatim", source])
                    picked += 1
    path = folder / "manuscript.md"
    path.write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    return path, expected


def run_store(store: str, seconds: float, counts: dict, work: Path) -> dict:
    from rag_core.collections.library import Library
    from rag_core.lab.judgments import load_judgments, make_judgment, passages_of, set_grade
    from rag_core.testing import hostile_manuscripts

    library = Library(store=store)
    report = library.add_pdfs("c", [PDFS / name for name in BASE], embed="none")
    assert [f.status for f in report.files] == ["ok"] * len(BASE), report.files
    index = library.load_index("c")
    passages = passages_of(index, library.documents("c"))
    seeds = []
    for n, i in enumerate(range(0, len(index.chunks), max(1, len(index.chunks) // 6))):
        judgment = make_judgment(f"seed question {n % 2}", passages, i, n % 4, index.chunks[i]["text"])
        set_grade(library, "c", judgment)
        seeds.append([judgment.query, judgment.doc, judgment.start, judgment.end, judgment.grade])
    shas = {d["doc_id"]: d["sha256"] for d in library.documents("c")}
    places = [[shas[c["doc_id"]], c["start"], c["end"]] for c in index.chunks]
    (work / "places.json").write_text(json.dumps(places))
    path, quotes = manuscript(library, work)
    from rag_core.citations.manuscript import check_statements, read_manuscript

    # what the checks must give under stress: the same check's verdicts on the quiet collection
    baseline = check_statements(read_manuscript(path).statements(), library.load_index("c"),
                                documents=library.documents("c"), top=1)
    expected = [[row.verdict, row.source] for row in baseline]
    hostile = []
    for name in HOSTILE:
        suffix, data = hostile_manuscripts(HOSTILE_BYTES)[name]
        hostile.append(work / f"hostile-{name}{suffix}")
        hostile[-1].write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    procs = []

    def start(role: str, code: str, *extra: str) -> None:
        out = work / f"{role}-{len(procs)}.json"
        procs.append((role, out, subprocess.Popen([sys.executable, "-c", code, store, str(seconds), str(out), *extra],
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                                  env=env)))

    for _ in range(counts["searchers"]):
        start("searcher", SEARCHER)
    for n in range(counts["ingesters"]):
        start("ingester", INGESTER, str(PDFS / WRITES[n % len(WRITES)]))
    for _ in range(counts["checkers"]):
        start("checker", CHECKER, str(path), json.dumps(expected), *map(str, hostile))
    for n in range(counts["importers"]):
        start("importer", IMPORTER, str(work / "places.json"), str(work), str(n))
    results: dict[str, list[dict]] = {}
    for role, out, proc in procs:
        _, err = proc.communicate(timeout=seconds + 900)
        if proc.returncode != 0 or not out.exists():
            results.setdefault(role, []).append({"n_errors": 1, "errors": [f"crashed ({proc.returncode}): "
                                                                             f"{err.strip()[-500:]}"]})
        else:
            results.setdefault(role, []).append(json.loads(out.read_text()))
    documents = sorted(d["source"] for d in library.documents("c"))
    stored = {(j.query, j.doc, j.start, j.end): j.grade for j in load_judgments(library, "c")}
    written = seeds + [w for r in results.get("importer", []) for w in r.get("written", [])]
    lost = [w for w in written if stored.get(tuple(w[:4])) != w[4]]
    check = library.check("c")
    summary = {
        "store": library.store.kind, "seconds": seconds, **counts,
        "errors": {role: sum(r.get("n_errors", 0) for r in rs) for role, rs in results.items()},
        "error_examples": [e for rs in results.values() for r in rs for e in r.get("errors", [])][:10],
        "searches": percentiles([x for r in results.get("searcher", []) for x in r["latencies_s"]]),
        "ingest_rounds": percentiles([x for r in results.get("ingester", []) for x in r["latencies_s"]]),
        "manuscript_checks": percentiles([x for r in results.get("checker", []) for x in r["latencies_s"]]),
        "hostile_manuscripts": percentiles([x for r in results.get("checker", []) for x in r.get("hostile_s", [])]),
        "imports": percentiles([x for r in results.get("importer", []) for x in r["latencies_s"]]),
        "judgments_written": len(written), "judgments_lost": len(lost), "lost_examples": lost[:3],
        "documents_at_end": documents, "lost_documents": sorted(set(BASE) - set(documents)),
        "extra_documents": sorted(set(documents) - set(BASE)),
        "baseline_verbatim": f"{sum(e == q for e, q in zip(expected, quotes, strict=True))} of {len(quotes)}",
        "check_ok": check.ok, "check_problems": check.problems[:5], "load_average": os.getloadavg(),
    }
    library.store.close()
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--store", default="both", help="folder, postgres (a throw-away pgserver), both, or a "
                                                        "postgresql:// URL")
    parser.add_argument("--searchers", type=int, default=4)
    parser.add_argument("--ingesters", type=int, default=2)
    parser.add_argument("--checkers", type=int, default=2)
    parser.add_argument("--importers", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    counts = {"searchers": args.searchers, "ingesters": args.ingesters, "checkers": args.checkers,
              "importers": args.importers}
    stores = ["folder", "postgres"] if args.store == "both" else [args.store]
    summaries, ok = [], True
    for kind in stores:
        work = Path(tempfile.mkdtemp(prefix="rag-core-stress-doors-"))
        server = None
        try:
            store = str(work / "data")
            if kind == "postgres":
                from rag_core.collections.store.local_server import start_local_server

                server, store = start_local_server(work / "pg")
            elif kind != "folder":
                store = kind
            summary = run_store(store, args.seconds, counts, work)
        finally:
            if server is not None:
                server.cleanup()
            shutil.rmtree(work, ignore_errors=True)
        print(json.dumps(summary, ensure_ascii=False), flush=True)
        summaries.append(summary)
        ok = ok and not (any(summary["errors"].values()) or summary["judgments_lost"] or summary["lost_documents"]
                         or summary["extra_documents"] or not summary["check_ok"])
    if args.json:
        args.json.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                         "cpus": os.cpu_count(), "runs": summaries}, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
