"""Embedding, query-encoding and PDF-extraction speed, each beside its goal (issue 9).

    python benchmarks/bench_embed.py                       # everything, ~5-10 min on 2 shared cores
    python benchmarks/bench_embed.py --sample 64 --rounds 3 --json docs/results/bench_embed.json
    python benchmarks/bench_embed.py --skip embed,query     # PDF extraction only

Embedding: random real SciFact chunks (fixed seed), each encoder variant timed right after
stock ``SentenceTransformer.encode`` in the same round, so the ratio holds on a shared
machine where absolute figures swing with the load (printed with each figure). Chunks/s
are wall clock; "cpu chunks/s" divides by the process's CPU seconds (how fast one core of
work goes). Query encoding: p50 of ``rag_core.models.embedding.encode_query`` over SciFact claims (one
intra-op thread). Dense product: 100k x 384 random unit vectors, float32 vs float16 storage.
PDF extraction: ``rag_core.pdf.extraction.extract_pdf`` over the shared PDFs, pages per wall second
and per CPU second, beside pypdf's own ``extract_text`` over the same pages.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import statistics
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
VARIANTS = ("torch", "onnx-fp32", "onnx-int8")

GOALS = {
    "embedding": "as fast as the cores allow; int8 adopted only if SciFact nDCG@10 holds (issue 9 goal 2)",
    "query": "hybrid <= 30 ms p50 at 100k chunks = query encoding + 100k x 384 product + lexical (goal 5)",
    "pdf": ">= 30 pages/s per core (goal 3)",
}


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()} CPUs"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def timed(function):
    cpu, wall = time.process_time(), time.perf_counter()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def sample_chunks(n: int, seed: int = 0) -> list[str]:
    from rag_core.evaluation import document_chunks, load_beir

    chunks = document_chunks(load_beir(SHARED / "scifact").corpus)
    return [c["text"] for c in random.Random(seed).sample(chunks, n)]


def bench_embedding(n: int, rounds: int) -> dict:
    from rag_core.models.embedding import encode_passages
    from rag_core.models.loading import encoder_variant, load_bi_encoder

    texts = sample_chunks(n)
    stock = load_bi_encoder(encoder="torch")  # the SentenceTransformer itself
    encoders = {v: load_bi_encoder(encoder=v) for v in VARIANTS}
    for variant, model in encoders.items():
        if encoder_variant(model) != variant:
            print(f"  {variant}: not available, torch ran instead", flush=True)
    for model in (stock, *encoders.values()):  # warm up
        encode_passages(model, texts[:4])
    reference = None
    rows = {v: {"ratios": [], "cpu_ratios": [], "rates": [], "cpu_rates": [], "loads": []} for v in VARIANTS}
    for round_ in range(rounds):
        for variant, model in encoders.items():
            ref, st_wall, st_cpu = timed(lambda: stock.encode(texts, batch_size=32, normalize_embeddings=True,
                                                          convert_to_numpy=True, show_progress_bar=False))
            reference = ref if reference is None else reference
            vectors, wall, cpu = timed(lambda m=model: encode_passages(m, texts))
            row = rows[variant]
            row["ratios"].append(st_wall / wall)
            row["cpu_ratios"].append(st_cpu / cpu)
            row["rates"].append(n / wall)
            row["cpu_rates"].append(n / cpu)
            row["loads"].append(os.getloadavg()[0])
            row["stock_rate"] = n / st_wall
            cos = (vectors * reference).sum(axis=1)
            row["cosine_mean"], row["cosine_min"] = float(cos.mean()), float(cos.min())
            print(f"  round {round_ + 1} {variant:9s} {n / wall:6.1f} chunks/s (stock ST {n / st_wall:5.1f}) "
                  f"ratio {st_wall / wall:.2f}  {load()}", flush=True)
    summary = {}
    for variant, row in rows.items():
        summary[variant] = {
            "chunks_per_s": round(statistics.median(row["rates"]), 1),
            "cpu_chunks_per_s": round(statistics.median(row["cpu_rates"]), 1),
            "ratio_to_stock_st": round(statistics.median(row["ratios"]), 2),
            "ratios": [round(r, 2) for r in row["ratios"]],
            "cpu_ratio_to_stock_st": round(statistics.median(row["cpu_ratios"]), 2),
            "cosine_to_st_mean": round(row["cosine_mean"], 5),
            "cosine_to_st_min": round(row["cosine_min"], 5),
            "load_1min": [round(x, 1) for x in row["loads"]],
        }
    return {"chunks": n, "rounds": rounds, "variants": summary}


def bench_query(n_queries: int, size: int) -> dict:
    from rag_core.evaluation import load_beir
    from rag_core.models.embedding import encode_query
    from rag_core.models.loading import encoder_variant, load_bi_encoder

    queries = list(load_beir(SHARED / "scifact").queries.values())[:n_queries]
    out = {}
    for variant in VARIANTS:
        model = load_bi_encoder(encoder=variant)
        if encoder_variant(model) != variant:
            continue
        for q in queries[:3]:
            encode_query(model, q)
        times = []
        for q in queries:
            _, wall, _ = timed(lambda q=q, model=model: encode_query(model, q))
            times.append(wall * 1000)
        out[variant] = {"p50_ms": round(float(np.median(times)), 1),
                        "p95_ms": round(float(np.percentile(times, 95)), 1), "load": load()}
        print(f"  query encoding {variant:9s} p50 {out[variant]['p50_ms']:.1f} ms "
              f"p95 {out[variant]['p95_ms']:.1f} ms  {load()}", flush=True)
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((size, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = matrix[7].copy()
    half = matrix.astype(np.float16)

    def p50(function, repeats):
        function()
        return round(float(np.median([timed(function)[1] * 1000 for _ in range(repeats)])), 1)

    out["product"] = {
        "rows": size,
        "float32_ms": p50(lambda: matrix @ query, 30),
        "float16_ms": p50(lambda: half @ query.astype(np.float16), 5),
        "float16_as_float32_ms": p50(lambda: half.astype(np.float32) @ query, 5),
        "load": load(),
    }
    print(f"  {size:,} x 384 product: float32 {out['product']['float32_ms']} ms, float16 "
          f"{out['product']['float16_ms']} ms (numpy), float16 widened per query "
          f"{out['product']['float16_as_float32_ms']} ms  {load()}", flush=True)
    return out


def bench_pdf() -> dict:
    from pypdf import PdfReader

    from rag_core.pdf.extraction import extract_pdf

    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    pdfs = sorted((SHARED / "pdfs").glob("*.pdf"))
    results, pages_total = {}, 0
    extract_pdf(pdfs[0])  # imports and first-call costs out of the timing
    _, wall, cpu = timed(lambda: [extract_pdf(p) for p in pdfs])
    for p in pdfs:
        pages_total += len(PdfReader(p).pages)

    def plain():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for p in pdfs:
                for page in PdfReader(p).pages:
                    page.extract_text()

    _, pwall, pcpu = timed(plain)
    results = {
        "pages": pages_total,
        "extract_pdf": {"pages_per_s": round(pages_total / wall, 1), "pages_per_cpu_s": round(pages_total / cpu, 1)},
        "pypdf_alone": {"pages_per_s": round(pages_total / pwall, 1), "pages_per_cpu_s": round(pages_total / pcpu, 1)},
        "load": load(),
    }
    print(f"  extract_pdf {pages_total} pages: {results['extract_pdf']['pages_per_s']} pages/s wall, "
          f"{results['extract_pdf']['pages_per_cpu_s']} per CPU second; pypdf alone "
          f"{results['pypdf_alone']['pages_per_s']} / {results['pypdf_alone']['pages_per_cpu_s']}  {load()}",
          flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description="embedding, query-encoding and PDF extraction speed (issue 9)")
    parser.add_argument("--sample", type=int, default=64, help="real SciFact chunks to embed per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--size", type=int, default=100_000, help="rows of the dense product")
    parser.add_argument("--skip", default="", help="comma list of parts to skip: embed, query, pdf")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    report = {"machine": machine(),
              "date": time.strftime("%Y-%m-%d %H:%M"), "start": load()}
    print(f"{report['date']}  {report['machine']}  {report['start']}", flush=True)
    if "embed" not in skip:
        report["embedding"] = bench_embedding(args.sample, args.rounds)
    if "query" not in skip:
        report["query"] = bench_query(args.queries, args.size)
    if "pdf" not in skip:
        report["pdf"] = bench_pdf()

    print("\ngoal | measured")
    if "embedding" in report:
        for variant, row in report["embedding"]["variants"].items():
            print(f"embedding {variant:9s} | {row['chunks_per_s']} chunks/s ({row['cpu_chunks_per_s']} per CPU s), "
                  f"{row['ratio_to_stock_st']}x stock SentenceTransformer.encode (rounds {row['ratios']}; "
                  f"CPU-time ratio {row['cpu_ratio_to_stock_st']}), "
                  f"cosine to fp32 mean {row['cosine_to_st_mean']} min {row['cosine_to_st_min']}, "
                  f"load {row['load_1min']}")
        print(f"  goal: {GOALS['embedding']}")
    if "query" in report:
        for variant in VARIANTS:
            if variant in report["query"]:
                print(f"query encoding {variant:9s} | p50 {report['query'][variant]['p50_ms']} ms")
        product = report["query"]["product"]
        print(f"dense product {product['rows']:,} rows | float32 {product['float32_ms']} ms, "
              f"float16 {product['float16_ms']} ms")
        print(f"  goal: {GOALS['query']}")
    if "pdf" in report:
        pdf = report["pdf"]
        print(f"PDF extraction | {pdf['extract_pdf']['pages_per_cpu_s']} pages per CPU second "
              f"({pdf['extract_pdf']['pages_per_s']} per wall second at {pdf['load']}); pypdf alone "
              f"{pdf['pypdf_alone']['pages_per_cpu_s']}")
        print(f"  goal: {GOALS['pdf']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
