"""Many processes on one PostgreSQL store (not a test): searchers and ingesters at once.

    HF_HUB_OFFLINE=1 python benchmarks/bench_pg_concurrency.py --seconds 180 --searchers 8 --ingesters 2

Without ``--url`` a throw-away PostgreSQL 16 with pgvector is started with pgserver. One
collection starts with two real PDFs (embedded). Then, for ``--seconds``:

* each searcher process loops: ``index_token`` and ``load_index`` (rebuilt in the process
  when the version changed), then a TF-IDF, a BM25, a hybrid (fusion) and an exact search;
* each ingester process owns a disjoint set of real PDFs and loops over them: a PDF not
  in the collection is added (``embed="none"``: searchable by TF-IDF, BM25 and exact at
  once), one it added before is removed again.

At the end every document must be where its ingester left it (no lost add, no lost
removal), ``check`` must pass, and no process may have seen an error. Prints latencies
(p50/p95/max per operation) and the load average, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parents[1]
PDFS = REPO.parent / "shared" / "data" / "pdfs"
BASE = ["phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf", "awkward_apl2011_custom_font_encoding_2col.pdf"]
# text PDFs (no scans), small enough that an add takes seconds, split between the ingesters
POOL = ["ml_dpr_karpukhin2020_arxiv2004.04906.pdf", "ml_tableformer_yang2022_acl.pdf",
        "phys_lie_theory_quantum_info_thesis_draft_stemen2021.pdf",
        "awkward_scanned_ocr_layer_zfn_a_1999_solitary_waves.pdf",
        "phys_jcap2008_apparent_average_accelerations_arxiv0807.3577.pdf", "ml_rag_lewis2020_arxiv2005.11401.pdf",
        "ml_bert_devlin2018_arxiv1810.04805.pdf", "qem_mitiq_manual_v0.5.0_2021.pdf"]
QUERIES = ["dense passage retrieval", "dark matter in the cosmic microwave background", "table structure recognition",
           "retrieval augmented generation", "error mitigation", "pre-training deep bidirectional transformers"]

SEARCHER = textwrap.dedent("""
    import json, sys, time, traceback
    from rag_core.retrieval.exact import search_exact
    from rag_core.collections.library import Library
    from rag_core.retrieval.ranking import search, search_lexical
    url, seconds, queries = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
    lib = Library(store=url)
    times = {"load_index": [], "tfidf": [], "bm25": [], "hybrid": [], "exact": []}
    errors, versions, n = [], set(), 0
    stop = time.time() + seconds
    while time.time() < stop:
        q = queries[n % len(queries)]
        n += 1
        try:
            t = time.perf_counter()
            token = lib.index_token("lab")
            index = lib.load_index("lab")
            times["load_index"].append(time.perf_counter() - t)
            versions.add(token)
            for mode, fn in (("tfidf", lambda: search_lexical(q, index, 10, method="tfidf")),
                             ("bm25", lambda: search_lexical(q, index, 10, method="bm25")),
                             ("hybrid", lambda: search(q, index, top=10)),
                             ("exact", lambda: search_exact(q.split()[0], index, max_hits=10))):
                t = time.perf_counter()
                fn()
                times[mode].append(time.perf_counter() - t)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            traceback.print_exc()
    print(json.dumps({"times": times, "errors": errors, "versions_seen": len(versions), "rounds": n}))
""")

INGESTER = textwrap.dedent("""
    import json, sys, time, traceback
    from rag_core.collections.library import Library
    url, seconds, pdfs = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
    lib = Library(store=url)
    present, errors = set(), []
    times = {"add": [], "searchable_after": [], "remove": []}
    stop = time.time() + seconds
    n = 0
    while time.time() < stop:
        path = pdfs[n % len(pdfs)]
        name = path.rsplit("/", 1)[-1]
        n += 1
        try:
            t = time.perf_counter()
            if name in present:
                lib.remove_documents("lab", [name])
                present.discard(name)
                times["remove"].append(time.perf_counter() - t)
            else:
                report = lib.add_pdfs("lab", [path], embed="none")
                status = report.files[0].status
                if status != "ok":
                    errors.append(f"{name}: {status} {report.files[0].reason}")
                    continue
                present.add(name)
                times["add"].append(time.perf_counter() - t)
                times["searchable_after"].append(report.searchable_after_s)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            traceback.print_exc()
    print(json.dumps({"times": times, "errors": errors, "present": sorted(present), "operations": n}))
""")


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ms = sorted(v * 1000 for v in values)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 1), "p95_ms": round(p95, 1),
            "max_ms": round(ms[-1], 1)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--searchers", type=int, default=8)
    parser.add_argument("--ingesters", type=int, default=2)
    parser.add_argument("--url", help="a postgresql:// URL (default: a throw-away pgserver)")
    args = parser.parse_args(argv)
    from rag_core.collections.library import Library

    server = None
    workdir = Path(tempfile.mkdtemp(prefix="rag-core-conc-"))
    url = args.url
    if url is None:
        from rag_core.collections.store.local_server import start_local_server

        server, url = start_local_server(workdir / "pg")
    library = Library(store=url)
    if library.exists("lab"):
        library.delete("lab")
    print("setting up: two PDFs, embedded", file=sys.stderr, flush=True)
    library.add_pdfs("lab", [PDFS / name for name in BASE])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    load_start = os.getloadavg()
    started = time.time()
    # each child writes to files, not pipes: a searcher's final JSON (every latency) is larger than
    # a pipe's buffer, and a child blocked on a full pipe never exits while this loop waits for it
    logs = workdir / "logs"
    logs.mkdir()

    def spawn(code: str, *argv: str, name: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", code, *argv], env=env, text=True,
                                stdout=open(logs / f"{name}.out", "w"), stderr=open(logs / f"{name}.err", "w"))

    searchers = [spawn(SEARCHER, url, str(args.seconds), json.dumps(QUERIES), name=f"s{i}")
                 for i in range(args.searchers)]
    shares = [POOL[i::args.ingesters] for i in range(args.ingesters)]
    ingesters = [spawn(INGESTER, url, str(args.seconds), json.dumps([str(PDFS / n) for n in share]), name=f"i{i}")
                 for i, share in enumerate(shares)]
    loads = []
    while any(p.poll() is None for p in searchers + ingesters):
        loads.append(os.getloadavg()[0])
        time.sleep(5)
    results = {"searchers": [], "ingesters": []}
    for kind, procs in (("searchers", searchers), ("ingesters", ingesters)):
        for k, proc in enumerate(procs):
            proc.wait()
            name = f"{kind[0]}{k}"
            out = (logs / f"{name}.out").read_text()
            err = (logs / f"{name}.err").read_text()
            try:
                results[kind].append(json.loads(out.strip().splitlines()[-1]))
            except (ValueError, IndexError):
                results[kind].append({"times": {}, "errors": [f"no result (exit {proc.returncode}): {err[-500:]}"]})
    expected = set(BASE) | {name for r in results["ingesters"] for name in r.get("present", [])}
    actual = {d["source"] for d in library.documents("lab")}
    check = library.check("lab")
    index = library.load_index("lab")
    errors = [e for r in results["searchers"] + results["ingesters"] for e in r["errors"]]
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seconds": round(time.time() - started),
        "cpus": os.cpu_count(), "searchers": args.searchers, "ingesters": args.ingesters,
        "loadavg_start": load_start, "loadavg_during_mean": round(statistics.mean(loads), 1) if loads else None,
        "errors": errors, "lost_documents": sorted(expected - actual),
        "unexpected_documents": sorted(actual - expected),
        "check_ok": check.ok, "final_documents": len(actual),
        "index_chunks_match": len(index.chunks) == sum(d["chunks"] for d in library.documents("lab")),
        "versions_seen_per_searcher": [r.get("versions_seen") for r in results["searchers"]],
        "search_rounds": sum(r.get("rounds", 0) for r in results["searchers"]),
        "ingest_operations": sum(r.get("operations", 0) for r in results["ingesters"]),
        "latency": {},
    }
    for kind in ("searchers", "ingesters"):
        keys = {k for r in results[kind] for k in r["times"]}
        for key in sorted(keys):
            report["latency"][key] = summary([v for r in results[kind] for v in r["times"].get(key, [])])
    print(json.dumps(report, indent=1))
    library.store.close()
    if server is not None:
        server.cleanup()
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)
    return 0 if not errors and not report["lost_documents"] and check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
