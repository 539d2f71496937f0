"""Choose the hybrid defaults on a BEIR split (SciFact train), using the product's own code.

    python benchmarks/tune_hybrid.py /work/shared/data/scifact --split train --stage lexical
    python benchmarks/tune_hybrid.py /work/shared/data/scifact --split train --stage fusion

``lexical``: BM25 k1/b and title handling. ``fusion``: pool size, fusion kind (RRF k,
min-max, z-score), list weights, TF-IDF in the fusion or not. The fusion stage calls
``rag_core.retrieval.ranking.pool_candidates`` and ``fuse_candidates``, the functions ``search()``
itself uses, on first-stage scores computed once per query. Dense embeddings come from
the evaluation cache (computed on first use).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

from rag_core.evaluation import (
    CHUNK_DEPTH,
    Evaluator,
    as_run,
    compute_metrics,
    docs_from_chunks,
    document_chunks,
    load_beir,
)
from rag_core.index.lexical import BM25Index, TfidfScorer, fit_tfidf, top_k


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def lexical_stage(ds, title_modes, grid) -> list[dict]:
    rows = []
    qids = list(ds.queries)
    for title_mode in title_modes:
        chunks = document_chunks(ds.corpus, title_mode=title_mode)
        texts = [c["text"] for c in chunks]
        doc_ids = [c["doc_id"] for c in chunks]
        vec, mat = fit_tfidf(texts)
        scorer = TfidfScorer(vec, mat)
        ranked = {q: docs_from_chunks(top_k(scorer.scores(ds.queries[q]), CHUNK_DEPTH, positive_only=True),
                                      doc_ids, exclude=q) for q in qids}
        m = compute_metrics(as_run(ranked), ds.qrels)
        rows.append({"title_mode": title_mode, "method": "tfidf", **m})
        log(json.dumps(rows[-1]))
        for k1, b in grid:
            bm = BM25Index.build(texts, k1=k1, b=b)
            ranked = {q: docs_from_chunks(top_k(bm.scores(ds.queries[q]), CHUNK_DEPTH, positive_only=True),
                                          doc_ids, exclude=q) for q in qids}
            m = compute_metrics(as_run(ranked), ds.qrels)
            rows.append({"title_mode": title_mode, "method": "bm25", "k1": k1, "b": b, **m})
            log(json.dumps(rows[-1]))
    return rows


def first_stage_scores(ev: Evaluator) -> dict[str, np.ndarray]:
    n = len(ev.query_ids)
    out = {name: np.zeros((n, len(ev.chunks)), dtype=np.float32) for name in ("tfidf", "bm25", "dense")}
    for qi in range(n):
        for name in out:
            out[name][qi] = ev.chunk_scores(name, qi)
    return out


def fusion_stage(ev: Evaluator, scores: dict[str, np.ndarray], configs: list[dict]) -> list[dict]:
    from rag_core.retrieval.fusion import fuse_candidates
    from rag_core.retrieval.ranking import pool_candidates

    rows = []
    n = len(ev.query_ids)
    by_pool: dict[tuple, list] = {}
    for cfg in configs:
        names = tuple(cfg["lists"])
        key = (cfg["pool"], names)
        if key not in by_pool:
            by_pool[key] = [pool_candidates({nm: scores[nm][qi] for nm in names}, cfg["pool"]) for qi in range(n)]
        ranked = {}
        for qi, qid in enumerate(ev.query_ids):
            ranks, cands = by_pool[key][qi]
            q_scores = {nm: scores[nm][qi] for nm in names}
            fused = fuse_candidates(q_scores, ranks, cands, weights=cfg["weights"], rrf_k=cfg.get("rrf_k", 60),
                                    kind=cfg["kind"])
            order = sorted(cands, key=lambda i: (-fused[i], i))
            ranked[qid] = docs_from_chunks(order, ev.doc_ids, exclude=qid)
        m = compute_metrics(as_run(ranked), ev.dataset.qrels)
        rows.append({**cfg, **{k: round(v, 4) if isinstance(v, float) else v for k, v in m.items()}})
        log(json.dumps(rows[-1]))
    return rows


def fusion_configs(pools, quick: bool = False) -> list[dict]:
    """The grid. TF-IDF's top ``pool`` is always in the pool, as in ``search()`` (the
    contract's pool is TF-IDF UNION dense); a TF-IDF weight of 0 leaves it out of the scores."""
    configs = []
    lists = ["tfidf", "bm25", "dense"]
    for pool in pools:
        for wt in (0.0, 0.25, 0.5):
            for wb, wd in ((1, 1), (1, 1.5), (1.5, 1), (1, 2), (2, 1)):
                w = {"tfidf": wt, "bm25": wb, "dense": wd}
                for k in (10, 60):
                    configs.append({"pool": pool, "lists": lists, "kind": "rrf", "rrf_k": k, "weights": w})
                for kind in ("minmax", "zscore"):
                    configs.append({"pool": pool, "lists": lists, "kind": kind, "weights": w})
    return configs


def check_configs() -> list[dict]:
    """The old default (RRF k=60, pool 50) against the chosen one and its neighbours."""
    lists = ["tfidf", "bm25", "dense"]
    w = {"tfidf": 0.0, "bm25": 1.0, "dense": 1.0}
    out = [{"pool": 50, "lists": lists, "kind": "rrf", "rrf_k": 60, "weights": w},
           {"pool": 30, "lists": lists, "kind": "rrf", "rrf_k": 60, "weights": w}]
    for pool in (30, 50):
        for kind in ("minmax", "zscore"):
            out.append({"pool": pool, "lists": lists, "kind": kind, "weights": w})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("--split", default="train")
    p.add_argument("--stage", choices=("lexical", "fusion"), default="fusion")
    p.add_argument("--title-modes", default="prefix,every_chunk")
    p.add_argument("--title-mode", default="prefix")
    p.add_argument("--long-text", default="windows")
    p.add_argument("--pools", default="20,50,100")
    p.add_argument("--out", default=None, help="write all rows as JSON here")
    p.add_argument("--grid", choices=("full", "check"), default="full",
                   help="check: old default vs chosen fusion only (for a second dataset)")
    args = p.parse_args(argv)
    ds = load_beir(args.dataset, args.split)
    started = time.perf_counter()
    if args.stage == "lexical":
        grid = list(itertools.product((0.9, 1.2, 1.5), (0.4, 0.75, 1.0)))
        rows = lexical_stage(ds, args.title_modes.split(","), grid)
        best = max((r for r in rows if r["method"] == "bm25"), key=lambda r: r["ndcg@10"])
    else:
        ev = Evaluator(ds, title_mode=args.title_mode, long_text=args.long_text, progress=log)
        scores = first_stage_scores(ev)
        log(f"first-stage scores ready in {time.perf_counter() - started:.0f}s")
        configs = (check_configs() if args.grid == "check"
                   else fusion_configs([int(x) for x in args.pools.split(",")]))
        rows = fusion_stage(ev, scores, configs)
        best = max(rows, key=lambda r: r["ndcg@10"])
    print("BEST", json.dumps(best))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    log(f"done in {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
