"""Score fusion for hybrid search: the first-stage lists' scores of each pool candidate, fused.

This is what :func:`rag_core.search` runs when no cross-encoder can be had. The dict-level
fusion of the older API (``reciprocal_rank_fusion`` over result lists, ``HybridSearch``)
lives in :mod:`rag_core.compat`. The defaults and the figures that chose them are in
:mod:`rag_core.settings`.
"""

from __future__ import annotations

import numpy as np

from rag_core.settings import DEFAULT_FUSION, DEFAULT_FUSION_WEIGHTS, DEFAULT_RRF_K, DEFAULT_WITH_BM25

FUSIONS = ("rrf", "minmax", "zscore")
FUSION_DESCRIPTIONS = {
    "rrf": "reciprocal rank fusion of the first-stage ranks (BM25 and dense)",
    "minmax": "score fusion of the first-stage lists (BM25 and dense scores, min-max normalised over the pool)",
    "zscore": "score fusion of the first-stage lists (BM25 and dense scores, standardised over the pool)",
}


def fusion_score_type(kind: str | None = None) -> str:
    """``score_type`` of fused hybrid results: "rrf" for rank fusion, "fused" for score fusion."""
    return "rrf" if (kind or DEFAULT_FUSION) == "rrf" else "fused"


def fuse_candidates(
    scores: dict[str, np.ndarray],
    ranks: dict[str, dict[int, int]],
    candidates: list[int],
    *,
    weights: dict[str, float] | None = None,
    rrf_k: int = DEFAULT_RRF_K,
    kind: str | None = None,
) -> dict[int, float]:
    """The fused score of each pool candidate (higher is better).

    ``kind="rrf"``: sum over lists of ``weight / (rrf_k + rank)`` for the lists that
    ranked the candidate in their top ``pool``. ``"minmax"`` / ``"zscore"``: each
    retriever's raw score of every candidate (known for all of them, not just the ones it
    ranked), min-max scaled or standardised over the candidates, then the weighted sum.
    """
    kind = kind or DEFAULT_FUSION
    if kind not in FUSIONS:
        raise ValueError(f"fusion must be one of {FUSIONS}, got {kind!r}")
    weights = {**DEFAULT_FUSION_WEIGHTS, **(weights or {})}
    if not any(weights.get(name, 0.0) for name in ranks):
        # e.g. no embeddings and no BM25: only TF-IDF, weighted 0 by default; rank by it.
        weights = dict.fromkeys(ranks, 1.0)
    if kind == "rrf":
        return {
            i: sum(weights.get(name, 0.0) / (rrf_k + rank[i]) for name, rank in ranks.items() if i in rank)
            for i in candidates
        }
    idx = np.asarray(candidates, dtype=np.int64)
    total = np.zeros(len(idx), dtype=np.float64)
    for name, values in scores.items():
        weight = weights.get(name, 0.0)
        if not weight or name not in ranks:
            continue
        v = np.asarray(values[idx], dtype=np.float64)
        if kind == "minmax":
            lo, hi = float(v.min()), float(v.max())
            v = (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
        else:  # zscore
            sd = float(v.std())
            v = (v - float(v.mean())) / sd if sd > 0 else np.zeros_like(v)
        total += weight * v
    return {int(i): float(t) for i, t in zip(idx, total, strict=True)}


def score_scale(score_type: str | None, *, fusion: str | None = None, weights: dict[str, float] | None = None,
                rrf_k: int = DEFAULT_RRF_K) -> str:
    """What a hybrid row's score means and its range, in one sentence: ``score_type`` "fused" (with
    ``fusion`` "minmax" or "zscore"), "rrf" or "rerank", with the fusion ``weights`` the search used."""
    weights = {k: v for k, v in {**DEFAULT_FUSION_WEIGHTS, **(weights or {})}.items() if v}
    total = sum(weights.values())
    parts = " + ".join(f"{w:g} × {name}" for name, w in weights.items())
    if score_type == "fused" and (fusion or DEFAULT_FUSION) == "zscore":
        return (f"Score: {parts}, each list's score standardised over the pool (standard deviations above the "
                "pool's mean: no fixed range; 0 is average).")
    if score_type == "fused":
        return (f"Score from 0 to {total:g}: {parts}, each list's score min-max normalised to 0–1 over the pool "
                f"({total:g}: first in every list; 0: last in every list).")
    if score_type == "rrf":
        return (f"Score: reciprocal rank fusion, the sum over the lists of weight / ({rrf_k} + rank) ({parts}): "
                f"at most {total / (rrf_k + 1):.3f}, for a passage first in every list.")
    if score_type == "rerank":
        return ("Score: the cross-encoder's relevance score for the question and the passage (higher is better; "
                "no fixed range).")
    return ""

__all__ = [
    "DEFAULT_FUSION",
    "DEFAULT_FUSION_WEIGHTS",
    "DEFAULT_RRF_K",
    "DEFAULT_WITH_BM25",
    "FUSIONS",
    "FUSION_DESCRIPTIONS",
    "fuse_candidates",
    "fusion_score_type",
    "score_scale",
]
