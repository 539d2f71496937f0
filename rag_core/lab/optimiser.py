"""Hybrid-search optimiser: a grid over fusion kind, dense weight, RRF k, pool and lexical
lists, scored on a collection's judgments, with an honest estimate of the gain.

Picking the best of hundreds of settings on the same queries it is scored on flatters it
(it memorises those queries). So the gain reported is measured on queries the choice did not
see: leave-one-query-out (each query scored with the settings that are best on all the
others) or a held-out split (settings chosen on a random half, scored on the other half).
The settings recommended are the best on all judged queries; the held-out gain says what
to expect from them on new queries, with a 95% bootstrap interval and a paired test.

Each setting (a :class:`~rag_core.retrieval.search_spec.SearchSpec` with the reranker "none") ranks
exactly as :func:`rag_core.retrieval.ranking.search_with_spec` does: the
first-stage scores of a query are computed once, then the same
:func:`~rag_core.retrieval.ranking.pool_candidates` and :func:`~rag_core.retrieval.fusion.fuse_candidates`
run for each setting (``tests/lab/test_lab.py`` checks the orders agree).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rag_core.evaluation.metrics import METRIC_LABELS, has_relevant, query_metrics
from rag_core.lab.judgments import Judgments, passages_of
from rag_core.lab.statistics import Estimate, PairedTest, mean_ci, paired_test
from rag_core.retrieval.fusion import fuse_candidates
from rag_core.retrieval.ranking import covered_fusion_weights, pool_candidates
from rag_core.retrieval.search_spec import SearchSpec

SCHEMES = ("loo", "split")
DEFAULT_WEIGHTS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
DEFAULT_POOLS = (10, 20, 30, 50, 100)
DEFAULT_RRF_KS = (10, 60)
DEFAULT_LEXICAL = ("both", "bm25")
Progress = Callable[[str], None]


def default_grid(baseline: SearchSpec | None = None, *, weights: Sequence[float] = DEFAULT_WEIGHTS,
                 pools: Sequence[int] = DEFAULT_POOLS, rrf_ks: Sequence[int] = DEFAULT_RRF_KS,
                 lexical: Sequence[str] = DEFAULT_LEXICAL,
                 fusions: Sequence[str] = ("minmax", "zscore", "rrf")) -> list[SearchSpec]:
    """The settings tried, the baseline first (so a tie keeps it)."""
    baseline = baseline or SearchSpec()
    base = SearchSpec(fusion=baseline.fusion, dense_weight=baseline.dense_weight, rrf_k=baseline.rrf_k,
                      pool=baseline.pool, lexical=baseline.lexical, reranker="none")
    grid = [base]
    seen = {_identity(base)}
    for fusion, weight, pool, lex in itertools.product(fusions, weights, pools, lexical):
        for k in (rrf_ks if fusion == "rrf" else (baseline.rrf_k,)):
            spec = SearchSpec(fusion=fusion, dense_weight=float(weight), rrf_k=int(k), pool=int(pool),
                              lexical=lex, reranker="none")
            if _identity(spec) not in seen:
                seen.add(_identity(spec))
                grid.append(spec)
    return grid


def _identity(spec: SearchSpec) -> tuple:
    return (spec.fusion, round(float(spec.dense_weight), 6), spec.rrf_k if spec.fusion == "rrf" else 0,
            spec.pool, spec.lexical)


# --------------------------------------------------------------------------- ranking fast


class QueryScores:
    """One query's first-stage scores, and the fused top 10 of any setting from them."""

    def __init__(self, index, query: str):
        self.index = index
        self.tfidf = index.tfidf_scores(query)
        self.bm25 = index.bm25_scores(query)
        self.dense = None
        if index.embeddings is not None:
            dense = index.dense_scores(query)
            if index.dense_mask is not None:
                dense = np.where(index.dense_mask, dense, -np.inf).astype(np.float32)
            self.dense = dense
        self._pools: dict[tuple, tuple] = {}

    def _scores(self, lexical: str) -> dict[str, np.ndarray]:
        scores = {}
        if lexical in ("both", "tfidf"):
            scores["tfidf"] = self.tfidf
        if lexical in ("both", "bm25"):
            scores["bm25"] = self.bm25
        if self.dense is not None:
            scores["dense"] = self.dense
        return scores

    def _pool(self, pool: int, lexical: str):
        key = (pool, lexical)
        if key not in self._pools:
            scores = self._scores(lexical)
            ranks, candidates = pool_candidates(scores, pool, None)
            if "dense" in scores and self.index.dense_mask is not None and candidates:
                mask = self.index.dense_mask
                known = [scores["dense"][i] for i in candidates if mask[i]]
                scores["dense"] = np.where(mask, scores["dense"], min(known, default=0.0)).astype(np.float32)
            self._pools[key] = (scores, ranks, candidates)
        return self._pools[key]

    def top(self, spec: SearchSpec, k: int = 10) -> list[int]:
        """The chunk indices of the fused top ``k`` under ``spec`` (as ``search_with_spec`` orders them)."""
        scores, ranks, candidates = self._pool(spec.pool, spec.lexical)
        if not candidates:
            return []
        weights = covered_fusion_weights(self.index, spec.weights())
        fused = fuse_candidates(scores, ranks, candidates, weights=weights, rrf_k=spec.rrf_k, kind=spec.fusion)
        return sorted(candidates, key=lambda i: (-fused[i], i))[:k]


# --------------------------------------------------------------------------- choosing honestly


@dataclass
class Selection:
    """Which setting each held-out query was scored with, and the held-out figures."""

    scheme: str
    chosen: list[int]  # per query: the column chosen without it (-1: the query was used for choosing)
    held_out: list[int]  # the queries scored
    values: list[float]  # metric of each held-out query under its chosen setting
    baseline_values: list[float]
    best_all: int  # the column best on every query (the recommendation)
    agreement: float  # share of the choices that equal ``best_all``


def select(matrix: np.ndarray, baseline: int = 0, *, scheme: str = "loo", seed: int = 0) -> Selection:
    """Choose a column of ``matrix`` (queries x settings) without scoring it on the queries it
    was chosen on. Ties go to the lowest column (the baseline is column 0)."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    matrix = np.asarray(matrix, dtype=np.float64)
    n, _ = matrix.shape
    if n < 2:
        raise ValueError("the optimiser needs at least 2 scored queries (3 or more for a held-out estimate worth "
                         "reading)")
    totals = matrix.sum(axis=0)
    best_all = _argmax(totals)
    chosen = [-1] * n
    if scheme == "loo":
        held = list(range(n))
        for i in held:
            chosen[i] = _argmax(totals - matrix[i])
    else:
        order = np.random.default_rng(seed).permutation(n)
        train, held = sorted(order[: n // 2].tolist()), sorted(order[n // 2:].tolist())
        pick = _argmax(matrix[train].sum(axis=0))
        for i in held:
            chosen[i] = pick
    values = [float(matrix[i, chosen[i]]) for i in held]
    base = [float(matrix[i, baseline]) for i in held]
    agreement = sum(1 for i in held if chosen[i] == best_all) / len(held)
    return Selection(scheme, chosen, held, values, base, best_all, agreement)


def _argmax(values: np.ndarray) -> int:
    best = float(np.max(values))
    return int(np.flatnonzero(values >= best - 1e-12)[0])


@dataclass
class OptimiserResult:
    """The recommendation and what it is worth on queries it was not chosen on."""

    best: SearchSpec
    baseline: SearchSpec
    metric: str
    scheme: str
    n_queries: int
    n_settings: int
    best_mean: float  # on every judged query (optimistic: chosen on them)
    baseline_mean: float
    held_out_mean: float  # the choose-the-best procedure, scored on held-out queries
    held_out_baseline_mean: float
    gain: Estimate  # held-out gain over the baseline, with its 95% interval
    test: PairedTest
    agreement: float
    top: list[dict] = field(default_factory=list)  # the best settings and their means
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"best": self.best.saved(), "baseline": self.baseline.saved(), "metric": self.metric,
                "scheme": self.scheme, "n_queries": self.n_queries, "n_settings": self.n_settings,
                "best_mean": self.best_mean, "baseline_mean": self.baseline_mean,
                "held_out_mean": self.held_out_mean, "held_out_baseline_mean": self.held_out_baseline_mean,
                "gain": self.gain.to_dict(), "test": self.test.to_dict(), "agreement": self.agreement,
                "top": self.top, "seconds": round(self.seconds, 2)}

    def advice(self) -> str:
        metric = METRIC_LABELS.get(self.metric, self.metric)
        if self.gain.mean is None:
            return "Not enough judged queries to estimate a gain."
        if self.best == self.baseline:
            return "The current settings are already the best of the grid on these judgments."
        low = self.gain.low if self.gain.low is not None else self.gain.mean
        if low > 0:
            return (f"On queries the choice did not see, the best settings gained {self.gain.mean:+.3f} {metric} "
                    f"(95% interval {self.gain.text()}): worth making the default.")
        return (f"On queries the choice did not see, the gain is {self.gain.mean:+.3f} {metric} (95% interval "
                f"{self.gain.text()}), which includes no gain: the grid's best may only fit these queries. "
                "Judge more queries before changing the default.")


def optimise(index, documents: Sequence[Mapping], judgments: Judgments, *, baseline: SearchSpec | None = None,
             grid: Sequence[SearchSpec] | None = None, scheme: str = "loo", metric: str = "ndcg@10",
             seed: int = 0, progress: Progress | None = None) -> OptimiserResult:
    """Score every setting of ``grid`` on the judged queries and choose honestly (see module doc)."""
    started = time.perf_counter()
    baseline = baseline or SearchSpec()
    grid = list(grid) if grid is not None else default_grid(baseline)
    if not grid:
        raise ValueError("the grid is empty")
    passages = passages_of(index, documents)
    queries = []
    for text in judgments.queries():
        graded = judgments.grades(text, passages)
        grades = {i: g.grade for i, g in graded.items()}
        if has_relevant(grades):
            queries.append((text, grades))
    if len(queries) < 2:
        raise ValueError(f"The optimiser needs at least 2 queries with a passage graded 2 or 3; this collection has "
                         f"{len(queries)}. Judge more queries first.")
    base_spec = grid[0]
    matrix = np.zeros((len(queries), len(grid)))
    for qi, (text, grades) in enumerate(queries):
        if progress:
            progress(f"query {qi + 1}/{len(queries)}: {len(grid)} settings")
        scores = QueryScores(index, text)
        for ci, spec in enumerate(grid):
            value = query_metrics(scores.top(spec, 10), grades)[metric]
            matrix[qi, ci] = 0.0 if value is None else value
    chosen = select(matrix, 0, scheme=scheme, seed=seed)
    means = matrix.mean(axis=0)
    gains = [v - b for v, b in zip(chosen.values, chosen.baseline_values, strict=True)]
    held_ids = [str(i) for i in chosen.held_out]
    test = paired_test(dict(zip(held_ids, chosen.values, strict=True)),
                       dict(zip(held_ids, chosen.baseline_values, strict=True)),
                       names=("chosen settings", "baseline"), metric=metric, seed=seed)
    order = np.argsort(-means, kind="stable")[:10]
    top = [{**grid[int(c)].saved(), "mean": float(means[int(c)])} for c in order]
    best = grid[chosen.best_all]
    return OptimiserResult(
        best=best, baseline=base_spec, metric=metric, scheme=scheme, n_queries=len(queries), n_settings=len(grid),
        best_mean=float(means[chosen.best_all]), baseline_mean=float(means[0]),
        held_out_mean=float(np.mean(chosen.values)), held_out_baseline_mean=float(np.mean(chosen.baseline_values)),
        gain=mean_ci(gains, seed=seed), test=test, agreement=chosen.agreement, top=top,
        seconds=time.perf_counter() - started,
    )
