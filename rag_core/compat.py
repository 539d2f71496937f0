"""The dict-level API of the multi-strategy search tool this project replaces, kept as it was.

``reciprocal_rank_fusion``, ``fuse_search_results``, ``HybridSearch`` and ``QueryExpander``
work on lists of result dicts from any search function (the contract in
../shared/spec/API.md, section 2). rag_core's own hybrid search does not use them: it fuses
score arrays over a candidate pool (:mod:`rag_core.retrieval.fusion`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

SearchFn = Callable[[str, int], list[dict]]


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
        """Replace the functions that are given; a ``None`` keeps the current one."""
        if vector_search_fn is not None:
            self.vector_search_fn = vector_search_fn
        if bm25_search_fn is not None:
            self.bm25_search_fn = bm25_search_fn

    def search(self, query: str, n_results: int = 5, mode: str = "hybrid") -> list[dict]:
        """``mode``: "vector", "bm25", or "hybrid" (RRF, vector weighted ``alpha``, lexical ``1 - alpha``)."""
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


EXPANSION_PROMPT = (
    "Write {n} different reformulations of the search query below, one per line, "
    "as a numbered list (1., 2., ...). Keep each one short and on topic.\n\nQuery: {query}"
)
_NUMBERED = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*(.+?)\s*$")


class QueryExpander:
    """Ask ``llm_generate_fn`` (prompt in, text out) for variations of a query."""

    def __init__(
        self,
        llm_generate_fn: Callable[[str], str] | None = None,
        n_variations: int = 3,
        include_original: bool = True,
    ):
        self.llm_generate_fn = llm_generate_fn
        self.n_variations = int(n_variations)
        self.include_original = include_original

    def set_llm_function(self, fn: Callable[[str], str] | None) -> None:
        self.llm_generate_fn = fn

    def expand(self, query: str) -> list[str]:
        """The original query (first, when ``include_original``) and the parsed variations."""
        if self.llm_generate_fn is None:
            return [query]
        answer = self.llm_generate_fn(EXPANSION_PROMPT.format(n=self.n_variations, query=query)) or ""
        variations: list[str] = []
        for line in str(answer).splitlines():
            match = _NUMBERED.match(line)
            if not match:
                continue
            text = match.group(1).strip().strip('"').strip()
            if text and text.lower() != query.lower() and text not in variations:
                variations.append(text)
        variations = variations[: self.n_variations]
        return ([query] if self.include_original else []) + variations or [query]


__all__ = [
    "EXPANSION_PROMPT",
    "HybridSearch",
    "QueryExpander",
    "SearchFn",
    "fuse_search_results",
    "reciprocal_rank_fusion",
    "result_key",
]
