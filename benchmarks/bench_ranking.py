"""One table of ranking candidates on held-out sets: SciFact test, ArguAna test, the PDF questions.

    RAG_CORE_EVAL_CACHE=/work/cache/ranking nice -n 10 python benchmarks/ranking_data.py  # vectors, once
    python benchmarks/bench_ranking.py [--sets scifact,arguana,pdf] [--head NAME] [--json FILE] [--update-card]

Candidates: today's hybrid and dense, and both with the learned query head
(``rag_core/models/query_head.py``) on the query vectors; with ``--extra windows,feedback`` two
unfitted ones too: sentence-window dense scoring (a chunk scores as its best window of at most
``WINDOW_CHARS`` characters, or its own vector, whichever is higher) and dense pseudo-relevance
feedback (the query vector moved towards its first hybrid chunks'). Every candidate ranks through the
product's search functions (``run_method``, package hybrid defaults, no cross-encoder); each
query's lexical scores are computed once and shared, the dense scores come from the cached
query vectors (plain, or through the head). Figures: nDCG@10 and Recall@100 (ir-measures; BEIR
sets at document level, a document at its best chunk; PDF questions at passage level, gain =
grade, relevant from grade 2), the paired difference to today's hybrid with its 95% bootstrap
interval and the two-sided paired randomisation p, ms/query of the whole product path (query
embedded by the default encoder, head, search) on a sample of queries, and the dense vectors'
size (the head adds its file). ``--update-card`` writes the figures into the head's card.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.ranking_data import (  # noqa: E402
    ARGUANA,
    DEV_QUESTIONS,
    SCIFACT,
    WindowVectors,
    beir_set,
    feedback_vectors,
    paired,
    pdf_set,
    query_table,
    say,
    vector_table,
)
from rag_core.models.query_head import (  # noqa: E402
    CARD_FILE,
    HEAD_FILE,
    head_folder,
    load_query_head,
)
from rag_core.settings import QUERY_HEAD_ENV  # noqa: E402

DEFAULT_HEAD = "minilm-claims-query-head-v1"
# The unfitted candidates' settings, chosen on SciFact train (all 809 queries; nothing fitted
# there) before any held-out set was run with them (docs/benchmarks.md section 24):
WINDOW_CHARS = 300        # sentence windows of at most 300 characters; a chunk scores as max(own, best window)
FEEDBACK = (10, 0.25)     # dense feedback: the first 10 hybrid chunks, weight 0.25 (the least harmful on train)


def product_ms(rs, method: str, head: str | None, n: int) -> dict[str | None, float]:
    """Median ms per query of the product path (embed, head, search) over ``n`` queries, plain and
    with ``head`` timed in turn on each query (the machine's load falls on both alike)."""
    from rag_core.evaluation.methods import run_method
    from rag_core.retrieval.search_spec import SearchSpec

    spec = SearchSpec(cross_encoder_model=None)
    times: dict[str | None, list[float]] = {None: [], head: []}
    for q in rs.query_ids[: n + 1]:
        for which in (None, head):
            os.environ[QUERY_HEAD_ENV] = which or "none"
            rs.index._query_vector = None
            t0 = time.perf_counter()
            run_method(method, rs.texts[q], rs.index, spec, top=10)
            times[which].append(1000 * (time.perf_counter() - t0))
    os.environ[QUERY_HEAD_ENV] = "none"
    return {k: float(np.median(v[1:])) for k, v in times.items()}  # the first query loads the models


COST = """
import time
t0 = time.perf_counter()
from rag_core.models.query_head import load_query_head
t1 = time.perf_counter()
head = load_query_head({name!r})
t2 = time.perf_counter()
import numpy as np
v = np.full(head.dimension, head.dimension ** -0.5, dtype=np.float32)
t3 = time.perf_counter()
for _ in range(1000):
    head.apply(v)
t4 = time.perf_counter()
print((t1 - t0) * 1000, (t2 - t1) * 1000, (t4 - t3))
"""


def head_cost(name: str, runs: int = 5) -> dict:
    """What the head adds to a fresh process (a CLI search): importing its module, loading and
    checking the file, and one query put through it; medians of ``runs`` processes."""
    import subprocess

    rows = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", COST.format(name=name)], capture_output=True, text=True,
                              cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), check=True)
        rows.append([float(x) for x in done.stdout.split()])
    med = np.median(np.array(rows), axis=0)
    return {"import_ms": round(float(med[0]), 1), "load_ms": round(float(med[1]), 1),
            "apply_ms": round(float(med[2]), 3), "runs": runs}


def evaluate_set(rs, vectors: dict, head, head_name: str, timing: int, extra: tuple[str, ...] = (),
                 window_chars: int = WINDOW_CHARS, feedback: tuple[int, float] = FEEDBACK,
                 blends: tuple[float, ...] = ()) -> list[dict]:
    plain = vectors
    through = {t: head.apply(v) for t, v in vectors.items()}
    head_mb = (head_folder(head_name) / HEAD_FILE).stat().st_size / 1e6
    vectors_mb = rs.index.embeddings.nbytes / 1e6
    per, rows, windows = {}, [], None
    candidates = [("hybrid", "hybrid", plain), ("dense", "dense", plain),
                  ("hybrid+head", "hybrid", through), ("dense+head", "dense", through)]
    if "windows" in extra:
        windows = WindowVectors(rs.index, window_chars)
        candidates.append(("hybrid+windows", "hybrid", plain))
    for blend in blends:  # the head at another blend than its card's
        other = dataclasses.replace(head, blend=blend)
        candidates.append((f"hybrid+head@{blend:g}", "hybrid", {t: other.apply(v) for t, v in vectors.items()}))
    if "feedback" in extra:
        candidates.append(("hybrid+feedback", "hybrid", feedback_vectors(rs, plain, k=feedback[0], beta=feedback[1])))
    for cand, method, vecs in candidates:
        t0 = time.perf_counter()
        per[cand] = rs.per_query(rs.rankings(vecs, method, windows=windows if cand.endswith("+windows") else None))
        say(f"{rs.name} {cand}: nDCG@10 {np.mean([v['ndcg@10'] for v in per[cand].values()]):.4f} "
            f"({time.perf_counter() - t0:.0f}s)")
    timed = {m: product_ms(rs, m, head_name, timing) if timing else {} for m in ("hybrid", "dense")}
    for cand in per:
        uses_head = "+head" in cand
        method = cand.split("+")[0]
        row = {"set": rs.name, "candidate": cand, "queries": len(per[cand])}
        for m in ("ndcg@10", "recall@100"):
            row[m] = float(np.mean([v[m] for v in per[cand].values()]))
            if cand != "hybrid":
                row[f"vs_hybrid_{m}"] = paired({q: v[m] for q, v in per["hybrid"].items()},
                                               {q: v[m] for q, v in per[cand].items()})
        # the unfitted candidates are not in the product: no product path to time
        row["ms_per_query"] = None if cand.endswith(("+windows", "+feedback")) or "@" in cand else \
            timed[method].get(head_name if uses_head else None)
        row["vectors_mb"] = round(vectors_mb + (head_mb if uses_head else 0.0)
                                  + (windows.megabytes if cand.endswith("+windows") else 0.0), 2)
        rows.append(row)
    return rows


def format_rows(rows: list[dict]) -> str:
    out = [f"{'set':<14} {'candidate':<16} {'nDCG@10':>8} {'Δ vs hybrid [95% CI]':>26} {'p':>6} {'R@100':>7} "
           f"{'ΔR@100 [95% CI]':>26} {'ms/q':>6} {'MB':>6} {'n':>5}"]
    for r in rows:
        d = r.get("vs_hybrid_ndcg@10")
        dr = r.get("vs_hybrid_recall@100")
        ci = f"{d['delta']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]" if d else ""
        cir = f"{dr['delta']:+.3f} [{dr['low']:+.3f}, {dr['high']:+.3f}]" if dr else ""
        p = f"{d['p']:.3f}" if d else ""
        ms = f"{r['ms_per_query']:.0f}" if r.get("ms_per_query") is not None else "-"
        out.append(f"{r['set']:<14} {r['candidate']:<16} {r['ndcg@10']:>8.4f} {ci:>26} {p:>6} {r['recall@100']:>7.4f} "
                   f"{cir:>26} {ms:>6} {r['vectors_mb']:>6.1f} {r['queries']:>5}")
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", default="scifact,arguana,pdf", help="of scifact, arguana, pdf, pdf-dev")
    p.add_argument("--head", default=DEFAULT_HEAD)
    p.add_argument("--timing", type=int, default=30, help="queries timed per candidate (0: none)")
    p.add_argument("--extra", default="", help="unfitted candidates too: windows,feedback")
    p.add_argument("--window-chars", type=int, default=WINDOW_CHARS)
    p.add_argument("--blends", default="", help="the head at these blends too (e.g. 0.25,0.5)")
    p.add_argument("--json", type=Path)
    p.add_argument("--update-card", action="store_true")
    args = p.parse_args(argv)
    os.environ[QUERY_HEAD_ENV] = "none"  # the sets' vectors are made here; the product path is timed apart
    head = load_query_head(args.head)
    say(f"head {head.name}: blend {head.blend}, SHA-256 {head.sha256[:12]}")
    rows = []
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        if name == "scifact":
            rs, vectors = beir_set(SCIFACT, "test", "SciFact test", None), query_table()
        elif name == "arguana":
            from rag_core.evaluation import load_beir

            rs = beir_set(ARGUANA, "test", "ArguAna test", None)
            vectors = vector_table(list(load_beir(ARGUANA, "test").queries.values()), "queries-arguana")
        elif name == "pdf":
            rs, vectors = pdf_set("PDF questions"), query_table()
        elif name == "pdf-dev":  # our own questions over the same PDFs: for choosing, not for the goals
            rs = pdf_set("PDF dev questions", DEV_QUESTIONS)
            vectors = vector_table(sorted(set(rs.texts.values())), "queries-pdf-dev")
        else:
            raise SystemExit(f"unknown set {name!r}")
        extra = tuple(x.strip() for x in args.extra.split(",") if x.strip())
        blends = tuple(float(x) for x in args.blends.split(",") if x.strip())
        rows += evaluate_set(rs, vectors, head, args.head, args.timing, extra, args.window_chars, blends=blends)
        print(format_rows([r for r in rows if r["set"] == rs.name]), flush=True)
    print("\n" + format_rows(rows))
    cost = head_cost(args.head)
    print(f"head in a fresh process: import {cost['import_ms']} ms, load and check {cost['load_ms']} ms, "
          f"one query {cost['apply_ms']} ms (medians of {cost['runs']})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"head": head.name, "sha256": head.sha256, "blend": head.blend,
                                         "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                         "load": os.getloadavg(), "rows": rows, "head_cost": cost}, indent=1),
                             encoding="utf-8")
    if args.update_card:
        path = head_folder(args.head) / CARD_FILE
        card = json.loads(path.read_text(encoding="utf-8"))
        card.setdefault("figures", {}).setdefault("held_out", {}).update({
            f"{r['set']} / {r['candidate']}": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()
                                               if k in ("ndcg@10", "recall@100", "queries", "ms_per_query")}
            | ({"vs_hybrid_ndcg@10": {k: round(v, 4) if isinstance(v, float) else v
                                      for k, v in r["vs_hybrid_ndcg@10"].items()}} if "vs_hybrid_ndcg@10" in r else {})
            for r in rows if not r["candidate"].endswith(("+windows", "+feedback")) and "@" not in r["candidate"]})
        card["figures"]["held_out_command"] = "python benchmarks/bench_ranking.py --update-card"
        path.write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        say(f"wrote the held-out figures into {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
