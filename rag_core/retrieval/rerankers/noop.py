"""A reranker that keeps the order it is given."""

from __future__ import annotations

from rag_core.retrieval.rerankers.base import RerankerBase


class NoopReranker(RerankerBase):
    """Returns the results unchanged, cut to ``n_results``."""

    name = "none"

    def rerank(self, query: str, results: list[dict], n_results: int | None = None) -> list[dict]:
        return self._cut(list(results), n_results)
