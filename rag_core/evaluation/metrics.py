"""Ranking metrics as BEIR reports them (nDCG@10, MRR@10, Recall@100), and documents from chunks.

The figures agree with ``ir_measures`` (tests/evaluation/test_evaluation.py checks it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

METRICS = ("ndcg@10", "mrr@10", "recall@100")


def _evaluated(qrels: Mapping[str, Mapping[str, int]]) -> list[str]:
    return [qid for qid, rels in qrels.items() if any(r > 0 for r in rels.values())]


def _ranked(docs: Mapping[str, float] | Sequence[str]) -> list[str]:
    if isinstance(docs, Mapping):
        return [d for d, _ in sorted(docs.items(), key=lambda t: (-t[1], t[0]))]
    return list(docs)


def per_query_metrics(run: Mapping, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, float]]:
    """nDCG@10 (gain = relevance), RR@10 and Recall@100 of each query with a relevant document.

    ``run`` maps query id -> {doc id: score} (higher is better; ties by doc id) or a list
    of doc ids best first. A query missing from ``run`` scores 0 everywhere.
    """
    out = {}
    for qid in _evaluated(qrels):
        rels = qrels[qid]
        ranking = _ranked(run.get(qid, {}))
        gains = [rels.get(d, 0) for d in ranking[:10]]
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains) if g > 0)
        ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        rr = next((1.0 / (i + 1) for i, g in enumerate(gains) if g > 0), 0.0)
        relevant = {d for d, r in rels.items() if r > 0}
        recall = len(relevant.intersection(ranking[:100])) / len(relevant)
        out[qid] = {"ndcg@10": dcg / idcg if idcg else 0.0, "mrr@10": rr, "recall@100": recall}
    return out


def compute_metrics(run: Mapping, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """Mean nDCG@10, MRR@10 and Recall@100 over the queries that have a relevant document."""
    per_query = per_query_metrics(run, qrels)
    n = len(per_query)
    means = {m: (sum(v[m] for v in per_query.values()) / n if n else 0.0) for m in METRICS}
    means["queries"] = n
    return means


def docs_from_chunks(
    chunk_order: Iterable[int],
    chunk_doc_ids: Sequence[str],
    top_k: int = 100,
    *,
    exclude: str | None = None,
) -> list[str]:
    """Documents in the order of their best chunk; ``exclude`` (the query id) is dropped."""
    seen: dict[str, None] = {}
    for i in chunk_order:
        doc = chunk_doc_ids[int(i)]
        if doc == exclude or doc in seen:
            continue
        seen[doc] = None
        if len(seen) >= top_k:
            break
    return list(seen)


def as_run(rankings: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """Ranked doc lists -> {qid: {doc: score}} with scores that keep the order exactly."""
    return {qid: {d: float(len(docs) - r) for r, d in enumerate(docs)} for qid, docs in rankings.items()}
