"""Speed benchmark of rag_core (not a test): ingest, index build, memory, disk, query latency.

    HF_HUB_OFFLINE=1 python benchmarks/bench_speed.py --sizes 1000,10000,100000

Chunks are real text: the SciFact and ArguAna corpora (BEIR, in ../shared/data),
chunked as PDFs are (1,200 characters, 200 overlap). Above the ~20k chunks they give,
copies are made with the words rotated and a copy tag appended, so no two chunks are equal.

* PDF extraction: ``rag_core.pdf.extraction.extract_pdf`` over ../shared/data/pdfs (skipped when
  that module is missing), pages per second.
* Embedding: all-MiniLM-L6-v2 on a sample of real chunks (``--embed-sample``), fp32 and
  int8 (ONNX Runtime, ``rag_core.models.onnx_encoder``); chunks/s, and the time that rate
  implies for 100k chunks. The 100k index is NOT embedded here (hours on 2 cores): every
  size uses random unit vectors as embeddings, which is all query latency needs.
* Per size, in a fresh subprocess: index build time (TF-IDF + BM25), peak RSS of that
  process, size on disk (``rag_core.collections.store.save_index``), and p50/p95 query latency of
  tfidf, bm25, dense (query encoding + matmul), hybrid (fusion path), hybrid with a
  cross-encoder (a TINY RANDOM 2-layer BERT stand-in, since no real cross-encoder can be
  downloaded here: it measures the plumbing, not the real model's cost), exact literal
  (a phrase that occurs, and one that does not: a full scan) and exact regex.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"

import numpy as np  # noqa: E402

QUERY_DATASET = "scifact"
N_QUERIES = 40
WARMUP = 3


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def real_chunks() -> list[dict]:
    from rag_core.evaluation import document_chunks, load_beir

    chunks: list[dict] = []
    for name in ("scifact", "arguana"):
        folder = DATA / name
        if folder.is_dir():
            chunks.extend(document_chunks(load_beir(folder).corpus))
    if not chunks:
        raise SystemExit(f"no BEIR corpora under {DATA}")
    return chunks


def make_chunks(n: int) -> list[dict]:
    base = real_chunks()
    out: list[dict] = []
    copy = 0
    while len(out) < n:
        for c in base:
            if len(out) >= n:
                break
            text = c["text"]
            if copy:
                words = text.split()
                r = copy % max(len(words), 1)
                text = " ".join(words[r:] + words[:r]) + f" copy{copy}"
            out.append({**c, "text": text, "source": f"{c['doc_id']}#{copy}", "doc_chunk": c["doc_chunk"]})
        copy += 1
    return out


def percentiles(values: list[float]) -> dict:
    ms = sorted(v * 1000 for v in values)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(p95, 2), "n": len(ms)}


def timed(fn, queries) -> dict:
    for q in queries[:WARMUP]:
        fn(q)
    times = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t)
    return percentiles(times)


def tiny_cross_encoder(folder: Path) -> str:
    """A randomly initialised 2-layer BERT cross-encoder (a stand-in with the real plumbing)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from rag_core.models.loading import bundled_embedding_model_path

    torch.manual_seed(0)
    bundled = bundled_embedding_model_path()
    tokenizer = AutoTokenizer.from_pretrained(str(bundled))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=128, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=512, max_position_embeddings=512,
                        num_labels=1)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return str(folder)


def one_size(n: int, with_ce: bool) -> dict:
    """Build, save and query an index of ``n`` chunks (run in its own process)."""
    from rag_core.evaluation import load_beir
    from rag_core.index.build import build_index_from_chunks

    row: dict = {"chunks": n}
    chunks = make_chunks(n)
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((n, 384), dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    row["rss_before_build_mib"] = round(rss_mib(), 1)
    t = time.perf_counter()
    index = build_index_from_chunks(chunks, compute_embeddings=False, embeddings=emb, with_bm25=True)
    row["build_s"] = round(time.perf_counter() - t, 2)
    row["peak_rss_after_build_mib"] = round(rss_mib(), 1)
    from rag_core.collections.store import save_index

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        save_index(index, Path(tmp) / "idx")
        row["save_s"] = round(time.perf_counter() - t, 2)
        row["disk_mib"] = round(sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file()) / 2**20, 1)

    queries = list(load_beir(DATA / QUERY_DATASET).queries.values())[:N_QUERIES]
    from rag_core.retrieval.exact import search_exact
    from rag_core.retrieval.ranking import search, search_dense, search_lexical

    lat = {}
    lat["tfidf"] = timed(lambda q: search_lexical(q, index, 10, method="tfidf"), queries)
    lat["bm25"] = timed(lambda q: search_lexical(q, index, 10, method="bm25"), queries)
    lat["dense"] = timed(lambda q: search_dense(q, index, 10), queries)
    lat["hybrid"] = timed(lambda q: search(q, index, top=10, rerank=True, cross_encoder_model=""), queries)
    if with_ce:
        with tempfile.TemporaryDirectory() as tmp:
            ce = tiny_cross_encoder(Path(tmp) / "tiny_ce")
            lat["hybrid_ce_tiny"] = timed(
                lambda q: search(q, index, top=10, rerank=True, cross_encoder_model=ce), queries[:15])
    phrases = ["randomized controlled trial", "insulin resistance", "human rights", "the death penalty"]
    lat["exact_literal"] = timed(lambda q: search_exact(q, index), phrases * 5)
    lat["exact_literal_absent"] = timed(lambda q: search_exact(q, index), ["zzqx absent phrase"] * 10)
    lat["exact_regex"] = timed(lambda q: search_exact(q, index, regex=True),
                               [r"\b[Pp]\s*[<=]\s*0\.0\d+", r"\b(?:IL|TNF)-?\d+\b", r"zzqx\d+"] * 4)
    row["latency"] = lat
    row["peak_rss_mib"] = round(rss_mib(), 1)
    return row


def bench_pdfs() -> dict:
    try:
        from rag_core.pdf.extraction import extract_pdf
    except ImportError as exc:
        return {"skipped": f"rag_core.pdf.extraction not available ({exc})"}
    pdfs = sorted((DATA / "pdfs").glob("*.pdf"))
    pages = ok = 0
    t = time.perf_counter()
    for path in pdfs:
        result = extract_pdf(path)
        pages += len(result.pages) if result.pages else 0
        ok += result.status == "ok"
    dt = time.perf_counter() - t
    return {"pdfs": len(pdfs), "ok": ok, "pages": pages, "seconds": round(dt, 2),
            "pages_per_s": round(pages / dt, 1) if dt else None}


def bench_embedding(sample: int) -> dict:
    import torch

    from rag_core.models.embedding import encode_passages
    from rag_core.models.loading import load_bi_encoder

    chunks = real_chunks()
    rng = np.random.default_rng(1)
    texts = [chunks[i]["text"] for i in rng.choice(len(chunks), size=min(sample, len(chunks)), replace=False)]
    model = load_bi_encoder(encoder="torch")
    encode_passages(model, texts[:4])
    out = {"sample": len(texts), "torch_threads": torch.get_num_threads()}
    for mode in ("windows", "truncate"):
        t = time.perf_counter()
        ref = encode_passages(model, texts, long_text=mode)
        dt = time.perf_counter() - t
        out[f"fp32_{mode}_chunks_per_s"] = round(len(texts) / dt, 2)
        if mode == "windows":
            ref_windows = ref
    # int8: the ONNX Runtime encoder (rag_core.models.onnx_encoder); benchmarks/bench_embed.py compares all variants.
    qmodel = load_bi_encoder(encoder="onnx-int8")
    encode_passages(qmodel, texts[:4])
    t = time.perf_counter()
    q = encode_passages(qmodel, texts, long_text="windows")
    dt = time.perf_counter() - t
    out["int8_windows_chunks_per_s"] = round(len(texts) / dt, 2)
    out["int8_vs_fp32_mean_cosine"] = round(float((q * ref_windows).sum(axis=1).mean()), 4)
    out["extrapolated_100k_fp32_windows_min"] = round(100_000 / out["fp32_windows_chunks_per_s"] / 60, 1)
    return out


def table(report: dict) -> str:
    lines = [f"machine: {report['machine']}", f"date: {report['date']}", f"command: {report['command']}", ""]
    pdf = report.get("pdf", {})
    if "skipped" in pdf:
        lines.append(f"PDF extraction: skipped ({pdf['skipped']})")
    elif pdf:
        lines.append(f"PDF extraction: {pdf['pages']} pages of {pdf['pdfs']} PDFs in {pdf['seconds']} s = "
                     f"{pdf['pages_per_s']} pages/s")
    emb = report.get("embedding")
    if emb:
        lines.append(
            f"Embedding (all-MiniLM-L6-v2, CPU, measured on {emb['sample']} real chunks, extrapolated): "
            f"fp32 windows {emb['fp32_windows_chunks_per_s']} chunks/s, fp32 truncate "
            f"{emb['fp32_truncate_chunks_per_s']} chunks/s, int8 windows {emb['int8_windows_chunks_per_s']} chunks/s "
            f"(mean cosine to fp32 {emb['int8_vs_fp32_mean_cosine']}); 100k chunks fp32 windows would take "
            f"~{emb['extrapolated_100k_fp32_windows_min']} min")
    lines.append("")
    methods = ["tfidf", "bm25", "dense", "hybrid", "hybrid_ce_tiny", "exact_literal", "exact_literal_absent",
               "exact_regex"]
    head = (f"{'chunks':>8} {'build s':>8} {'peak RSS MiB':>12} {'disk MiB':>9} | "
            + " ".join(f"{m:>22}" for m in methods))
    lines.append(head)
    lines.append(" " * 42 + "| " + " ".join(f"{'p50/p95 ms':>22}" for _ in methods))
    for row in report["sizes"]:
        lat = row["latency"]
        cells = []
        for m in methods:
            cells.append(f"{lat[m]['p50_ms']:>10.1f}/{lat[m]['p95_ms']:<11.1f}" if m in lat else f"{'-':>22}")
        lines.append(f"{row['chunks']:>8} {row['build_s']:>8.1f} {row['peak_rss_mib']:>12.0f} "
                     f"{row['disk_mib']:>9.1f} | " + " ".join(cells))
    lines.append("")
    lines.append("embeddings of the indexes are random unit vectors (query latency only); "
                 "hybrid_ce_tiny uses a tiny random 2-layer BERT stand-in, not a real cross-encoder.")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="rag_core speed benchmark")
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--embed-sample", type=int, default=64)
    p.add_argument("--no-pdf", action="store_true")
    p.add_argument("--no-embed", action="store_true")
    p.add_argument("--no-ce", action="store_true")
    p.add_argument("--json", default=None, help="also write the report as JSON here")
    p.add_argument("--one-size", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one_size is not None:
        print(json.dumps(one_size(args.one_size, not args.no_ce)))
        return 0
    report = {
        "machine": f"{os.cpu_count()}-core {cpu_model()}, "
                   f"{round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB RAM, no GPU",
        "date": time.strftime("%Y-%m-%d"),
        "command": "python benchmarks/bench_speed.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    if not args.no_pdf:
        log("PDF extraction...")
        report["pdf"] = bench_pdfs()
    if not args.no_embed:
        log("embedding sample...")
        report["embedding"] = bench_embedding(args.embed_sample)
    report["sizes"] = []
    for n in [int(x) for x in args.sizes.split(",") if x]:
        log(f"index of {n:,} chunks...")
        cmd = [sys.executable, __file__, "--one-size", str(n)] + (["--no-ce"] if args.no_ce else [])
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log(done.stderr[-3000:])
            raise SystemExit(f"size {n} failed")
        report["sizes"].append(json.loads(done.stdout.strip().splitlines()[-1]))
        log(json.dumps(report["sizes"][-1]))
    print(table(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
