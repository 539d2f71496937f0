"""A million passages in one collection on one machine: build, memory, query latency, adding PDFs.

    python benchmarks/bench_million.py [--chunks 1000000] [--data-dir DIR] [--keep] [--json]

1. Build: real SciFact chunks (9,188, with their real int8 embeddings from the evaluation
   cache; computed once if missing) repeated with variation (words rotated, a copy tag; each
   copy's vector is the original's plus noise, renormalised) to ``--chunks`` chunks in
   documents of 60 chunks, committed to a folder-store collection (segments of 100k chunks,
   each with TF-IDF, BM25, vectors and an HNSW graph). Build time and disk size.
2. Query, in a fresh process: load time and RSS, then p50/p95 of TF-IDF, BM25, hybrid (no
   cross-encoder), and exact literal search (a phrase that occurs, one that does not) over 60
   SciFact claims; recall@10 of the HNSW dense top 10 against the exact product; RSS after.
3. Add 10 real PDFs with ``rag-core ingest`` (a new segment; embeddings computed): wall time
   to searchable and to done, and a query that finds them.

Prints each goal of issue 9 (item 6) beside its measured value and writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
DOC_CHUNKS = 60
NOISE = 0.25
PDFS = ["ml_bert_devlin2018_arxiv1810.04805.pdf", "ml_dpr_karpukhin2020_arxiv2004.04906.pdf",
        "ml_rag_lewis2020_arxiv2005.11401.pdf", "ml_seal_bevilacqua2022_arxiv2204.10628.pdf",
        "ml_tableformer_yang2022_acl.pdf", "cs_tracemonkey_gal2009_pldi.pdf",
        "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf",
        "phys_jcap2008_apparent_average_accelerations_arxiv0807.3577.pdf",
        "qem_temme2017_error_mitigation_talk_slides_stemen2020.pdf", "awkward_apl2011_custom_font_encoding_2col.pdf"]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message} (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def mapped_rss_mib(under: str) -> dict[str, float]:
    """Resident MiB of each kind of memory-mapped file under ``under`` (summed over segments)."""
    from rag_core.testing import resident_kib

    sizes: dict[str, float] = {}
    for path, kib in resident_kib(under).items():
        sizes[Path(path).name] = sizes.get(Path(path).name, 0.0) + kib / 1024
    return {k: round(v, 1) for k, v in sorted(sizes.items(), key=lambda kv: -kv[1]) if v >= 1}


def folder_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def base_corpus():
    from rag_core.evaluation import cached_embeddings, document_chunks, load_beir

    dataset = load_beir(SHARED / "scifact", "test")
    chunks = document_chunks(dataset.corpus)
    log(f"{len(chunks):,} SciFact chunks; embeddings from the evaluation cache (computed if missing)")
    vectors = np.asarray(cached_embeddings(chunks, progress=log), dtype=np.float32)
    return chunks, vectors, list(dataset.queries.values())


def synthetic(n: int, chunks: list[dict], vectors: np.ndarray):
    """``n`` chunks in documents of DOC_CHUNKS, their vectors, and the document records."""
    rng = np.random.default_rng(20261130)
    out_chunks: list[dict] = []
    out_vectors = np.empty((n, vectors.shape[1]), dtype=np.float32)
    documents: list[dict] = []
    copy = 0
    while len(out_chunks) < n:
        for i, chunk in enumerate(chunks):
            if len(out_chunks) >= n:
                break
            text = chunk["text"]
            if copy:
                words = text.split()
                r = copy % max(len(words), 1)
                text = " ".join(words[r:] + words[:r]) + f" copy{copy}"
                vector = vectors[i] + NOISE * rng.standard_normal(vectors.shape[1]).astype(np.float32) / 19.6
                vector /= np.linalg.norm(vector)
            else:
                vector = vectors[i]
            row = len(out_chunks)
            out_vectors[row] = vector
            doc = row // DOC_CHUNKS
            out_chunks.append({"text": text, "source": f"synthetic-{doc:06d}.pdf", "doc_id": f"d{doc:015d}",
                               "doc_chunk": row % DOC_CHUNKS, "start": None, "end": None, "page_start": 1,
                               "page_end": 1, "page_label": None, "page_breaks": [[0, 1]]})
        copy += 1
    for doc in range((n + DOC_CHUNKS - 1) // DOC_CHUNKS):
        count = min(DOC_CHUNKS, n - doc * DOC_CHUNKS)
        documents.append({"doc_id": f"d{doc:015d}", "source": f"synthetic-{doc:06d}.pdf", "file_name": "",
                          "sha256": hashlib.sha256(f"synthetic {doc}".encode()).hexdigest(), "pages": 1,
                          "chunks": count, "bytes": 0, "has_page_labels": False, "added": time.time(),
                          "warnings": [], "title": None, "authors": None, "year": None})
    return out_chunks, out_vectors, documents


def build(data_dir: Path, n: int) -> dict:
    from rag_core.collections.library import Library

    chunks, vectors, _ = base_corpus()
    started = time.perf_counter()
    all_chunks, all_vectors, documents = synthetic(n, chunks, vectors)
    log(f"made {n:,} chunks in {len(documents):,} documents ({time.perf_counter() - started:.0f} s)")
    library = Library(data_dir)
    library.create("million")
    started = time.perf_counter()
    with library.store.writing("million"):
        library.store.commit("million", documents=documents, chunks=all_chunks, embeddings=all_vectors,
                             dense_mask=None, new_files={})
    seconds = time.perf_counter() - started
    log(f"built in {seconds:.0f} s")
    return {"chunks": n, "documents": len(documents), "build_s": round(seconds, 1),
            "disk_mib": round(folder_mib(data_dir / "collections" / "million"), 1),
            "build_peak_rss_mib": round(rss_mib(), 1)}


QUERY = r"""
import json, os, re, statistics, sys, time
import numpy as np
sys.path.insert(0, sys.argv[3])
from bench_million import current_rss_mib, mapped_rss_mib
from rag_core.collections.library import Library
from rag_core.retrieval.ranking import search, search_lexical
from rag_core.retrieval.exact import search_exact

queries = json.loads(sys.argv[2])
t = time.perf_counter()
index = Library(sys.argv[1]).load_index("million")
load_s = time.perf_counter() - t
rss_loaded = current_rss_mib()

def timed(fn):
    for q in queries[:3]:
        fn(q)
    times = []
    for q in queries:
        t = time.perf_counter(); fn(q); times.append(time.perf_counter() - t)
    ms = sorted(1000 * x for x in times)
    return {"p50_ms": round(statistics.median(ms), 1), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 1)}

out = {"load_s": round(load_s, 2), "rss_after_load_mib": round(rss_loaded, 1),
       "segments": len(getattr(index, "parts", [index]))}
phases = {"load": (current_rss_mib(), mapped_rss_mib(sys.argv[1]))}
out["tfidf"] = timed(lambda q: search_lexical(q, index, 10, method="tfidf"))
out["bm25"] = timed(lambda q: search_lexical(q, index, 10, method="bm25"))
phases["lexical"] = (current_rss_mib(), mapped_rss_mib(sys.argv[1]))
index.query_vector(queries[0])  # the model loads once, outside the timings
out["hybrid"] = timed(lambda q: search(q, index, top=10, cross_encoder_model=""))
phases["hybrid"] = (current_rss_mib(), mapped_rss_mib(sys.argv[1]))
present = [w for w in ("dense retrieval", "randomized controlled trial", "gene expression", "copy17 ")]
out["exact_present"] = timed(lambda q: search_exact(present[len(q) % len(present)], index, max_hits=10))
out["exact_absent"] = timed(lambda q: search_exact("zyxwvut quokka", index, max_hits=10))
phases["exact"] = (current_rss_mib(), mapped_rss_mib(sys.argv[1]))
out["rss_by_phase"] = {k: {"rss_mib": round(v[0], 1), "mapped_files_mib": v[1]} for k, v in phases.items()}
# what the searches cost in memory (before the recall check, whose exact products over every
# vector no search does); file-backed pages are the memory-mapped index files (page cache)
out["rss_after_searches_mib"] = round(current_rss_mib(), 1)
with open("/proc/self/status", encoding="ascii") as handle:
    fields = dict(line.split(":", 1) for line in handle if line.startswith(("RssAnon", "RssFile")))
out["rss_anon_mib"] = round(int(fields["RssAnon"].split()[0]) / 1024, 1)
out["rss_file_mib"] = round(int(fields["RssFile"].split()[0]) / 1024, 1)
recalls = []
for q in queries[:30]:
    rows, _ = index.dense_top(q, 10)
    exact = np.argsort(-np.asarray(index.dense_scores(q)))[:10]
    recalls.append(len(set(rows.tolist()) & set(exact.tolist())) / 10)
out["ann_recall_at_10"] = round(float(np.mean(recalls)), 4)
out["rss_end_mib"] = round(current_rss_mib(), 1)
out["rss_peak_mib"] = round(__import__("resource").getrusage(__import__("resource").RUSAGE_SELF).ru_maxrss / 1024, 1)
print(json.dumps(out))
"""


def query(data_dir: Path, queries: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", QUERY, str(data_dir), json.dumps(queries), str(REPO / "benchmarks")],
                          capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def add_pdfs(data_dir: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(data_dir), "ingest", "million",
                           *[str(SHARED / "pdfs" / name) for name in PDFS], "--json", "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=3600)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    report = json.loads(done.stdout)
    return {"files_ok": sum(f["status"] == "ok" for f in report["files"]), "chunks_added": report["chunks_added"],
            "searchable_after_s": report["searchable_after_s"], "total_s": round(seconds, 1),
            "embedded": report["embedding"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--data-dir", help="build here (default: a temporary folder, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep the data folder")
    parser.add_argument("--skip-build", action="store_true", help="use the collection already in --data-dir")
    parser.add_argument("--build-only", action="store_true", help="build (into --data-dir) and stop")
    parser.add_argument("--query-only", action="store_true", help="measure the searches only (the collection "
                        "stays as built: no PDFs added)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data_dir = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="rag-core-million-"))
    report: dict = {"machine": f"{os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d %H:%M")}
    try:
        if not args.skip_build:
            report["build"] = build(data_dir, args.chunks)
            if args.build_only:
                print(json.dumps(report, indent=1))
                return 0
        from rag_core.evaluation import load_beir

        queries = list(load_beir(SHARED / "scifact", "test").queries.values())[:60]
        log("querying in a fresh process")
        report["query"] = query(data_dir, queries)
        if args.query_only:
            print(json.dumps(report, indent=1))
            return 0
        log("adding 10 PDFs")
        report["add_10_pdfs"] = add_pdfs(data_dir)
        report["query_after_adding"] = query(data_dir, queries[:20])
        report["disk_mib_end"] = round(folder_mib(data_dir / "collections" / "million"), 1)
    finally:
        if not (args.keep or args.data_dir):
            shutil.rmtree(data_dir, ignore_errors=True)
    report["load_average"] = os.getloadavg()
    q = report["query"]
    goals = [
        ("query process RSS", "<= 4096 MiB",
         f"{q['rss_after_searches_mib']:,.0f} MiB after the searches ({q['rss_anon_mib']:,.0f} own memory, "
         f"{q['rss_file_mib']:,.0f} mapped index files; {q['rss_after_load_mib']:,.0f} after load; "
         f"{q['rss_peak_mib']:,.0f} peak with the recall check's exact products)"),
        ("TF-IDF p50", "<= 20 ms", f"{q['tfidf']['p50_ms']} ms"),
        ("BM25 p50", "<= 20 ms", f"{q['bm25']['p50_ms']} ms"),
        ("hybrid p50 (HNSW dense stage)", "<= 60 ms", f"{q['hybrid']['p50_ms']} ms"),
        ("HNSW recall@10 vs exact", ">= 0.98", f"{q['ann_recall_at_10']}"),
        ("exact literal p50", "<= 1000 ms", f"{q['exact_present']['p50_ms']} ms present, "
                                             f"{q['exact_absent']['p50_ms']} ms absent"),
        ("adding 10 PDFs", "<= 120 s", f"{report['add_10_pdfs']['total_s']} s "
                                       f"(searchable after {report['add_10_pdfs']['searchable_after_s']} s)"),
    ]
    if "build" in report:
        goals.append(("build", "report", f"{report['build']['build_s']} s, {report['build']['disk_mib']:,} MiB "
                                          f"on disk, peak RSS {report['build']['build_peak_rss_mib']:,.0f} MiB"))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{'goal':34s} {'target':>12s}  measured")
        for name, target, measured in goals:
            print(f"{name:34s} {target:>12s}  {measured}")
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
