"""Fusion: reciprocal rank fusion, merging result lists, ``HybridSearch``, and the score fusion hybrid search uses."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

SearchFn = Callable[[str, int], list[dict]]

FUSIONS = ("rrf", "minmax", "zscore")
# Hybrid defaults chosen on SciFact's train queries (docs/benchmarks.md): min-max
# normalised score fusion of BM25 and dense (weights 1:1) beat the best RRF by ~0.02-0.03
# nDCG@10 (0.734 vs 0.716 train; RRF k=60 1:1 was 0.702); TF-IDF stays in the pool
# (the contract's pool) but adds nothing to the fused score.
DEFAULT_WITH_BM25 = True
DEFAULT_FUSION_WEIGHTS = {"tfidf": 0.0, "bm25": 1.0, "dense": 1.0}
DEFAULT_RRF_K = 60
DEFAULT_FUSION = "minmax"
FUSION_DESCRIPTIONS = {
    "rrf": "reciprocal rank fusion of the first-stage ranks (BM25 and dense)",
    "minmax": "score fusion of the first-stage lists (BM25 and dense scores, min-max normalised over the pool)",
    "zscore": "score fusion of the first-stage lists (BM25 and dense scores, standardised over the pool)",
}


def fusion_score_type(kind: str | None = None) -> str:
    """``score_type`` of fused hybrid results: "rrf" for rank fusion, "fused" for score fusion."""
    return "rrf" if (kind or DEFAULT_FUSION) == "rrf" else "fused"


def result_key(result: dict, field: str = "id"):
    """A result's identity: ``field`` when present, else its chunk index, else source and text."""
    for name in (field, "id", "chunk_index"):
        if name in result and result[name] is not None:
            return (name, result[name])
    return ("content", result.get("source"), result.get("text", result.get("content")))


def reciprocal_rank_fusion(
    result_lists: Sequence[Sequence[dict]], k: int = 60, weights: Sequence[float] | None = None
) -> list[dict]:
    """Fuse ranked lists: each result scores the sum over lists of ``weight / (k + rank)``.

    Ranks count from 1 in each list. Returns copies of the results, best first, with
    ``rrf_score`` (and ``score``) set to the fused score.
    """
    if weights is None:
        weights = [1.0] * len(result_lists)
    if len(weights) != len(result_lists):
        raise ValueError(f"got {len(weights)} weights for {len(result_lists)} result lists")
    fused: dict = {}
    order: list = []
    for results, weight in zip(result_lists, weights, strict=True):
        for rank, result in enumerate(results, start=1):
            key = result_key(result)
            if key not in fused:
                fused[key] = {**result, "rrf_score": 0.0}
                order.append(key)
            fused[key]["rrf_score"] += float(weight) / (k + rank)
    merged = [fused[key] for key in order]
    merged.sort(key=lambda r: r["rrf_score"], reverse=True)  # stable: first seen wins ties
    for result in merged:
        result["score"] = result["rrf_score"]
    return merged


def fuse_search_results(
    result_lists: Sequence[Sequence[dict]], n_results: int = 5, dedupe_by: str = "id"
) -> list[dict]:
    """Merge the results of several queries, dropping duplicates by ``dedupe_by``.

    Relevance order is kept: results are taken rank by rank across the lists (the
    first of each list, then the second...), and the first copy of a duplicate wins.
    """
    seen = set()
    merged: list[dict] = []
    longest = max((len(r) for r in result_lists), default=0)
    for position in range(longest):
        for results in result_lists:
            if position >= len(results):
                continue
            result = results[position]
            key = result_key(result, dedupe_by)
            if key in seen:
                continue
            seen.add(key)
            merged.append(result)
            if len(merged) >= n_results:
                return merged
    return merged


class HybridSearch:
    """Vector and lexical search functions fused with weighted RRF.

    Each function takes ``(query, n_results)`` and returns result dicts, best first.
    """

    MODES = ("vector", "bm25", "hybrid")

    def __init__(
        self,
        vector_search_fn: SearchFn | None = None,
        bm25_search_fn: SearchFn | None = None,
        alpha: float = 0.6,
        rrf_k: int = 60,
    ):
        self.vector_search_fn = vector_search_fn
        self.bm25_search_fn = bm25_search_fn
        self.rrf_k = rrf_k
        self.alpha = 0.6
        self.set_alpha(alpha)

    def set_alpha(self, alpha: float) -> None:
        """Weight of the vector list in hybrid mode (0.0 to 1.0); lexical gets ``1 - alpha``."""
        alpha = float(alpha)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be between 0.0 and 1.0, got {alpha}")
        self.alpha = alpha

    def set_search_functions(
        self, vector_search_fn: SearchFn | None = None, bm25_search_fn: SearchFn | None = None
    ) -> None:
        if vector_search_fn is not None:
            self.vector_search_fn = vector_search_fn
        if bm25_search_fn is not None:
            self.bm25_search_fn = bm25_search_fn

    def search(self, query: str, n_results: int = 5, mode: str = "hybrid") -> list[dict]:
        if mode not in self.MODES:
            raise ValueError(f"mode must be one of {self.MODES}, got {mode!r}")
        if mode == "vector":
            return list(self._require(self.vector_search_fn, "vector")(query, n_results))[:n_results]
        if mode == "bm25":
            return list(self._require(self.bm25_search_fn, "bm25")(query, n_results))[:n_results]
        lists, weights = [], []
        if self.vector_search_fn is not None:
            lists.append(self.vector_search_fn(query, n_results * 2))
            weights.append(self.alpha)
        if self.bm25_search_fn is not None:
            lists.append(self.bm25_search_fn(query, n_results * 2))
            weights.append(1.0 - self.alpha)
        if not lists:
            raise ValueError("hybrid search needs at least one search function; call set_search_functions()")
        return reciprocal_rank_fusion(lists, k=self.rrf_k, weights=weights)[:n_results]

    @staticmethod
    def _require(fn: SearchFn | None, name: str) -> SearchFn:
        if fn is None:
            raise ValueError(f"no {name} search function is set; pass it to HybridSearch or set_search_functions()")
        return fn


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
