"""Maximal marginal relevance: relevant results that do not repeat each other."""

from __future__ import annotations

import numpy as np

from rag_core.index.products import gram
from rag_core.retrieval.rerankers.base import RerankerBase, result_text
from rag_core.settings import MMR_LAMBDA


class DiversityReranker(RerankerBase):
    """MMR: higher ``lambda_param`` favours relevance, lower favours diversity.

    Similarity between results uses their ``embedding`` vectors when every result has
    one, else TF-IDF vectors of their texts. Relevance is the result's position in the
    input (min-max scaled ``score`` when every result has one).
    """

    name = "diversity"

    def __init__(self, lambda_param: float = MMR_LAMBDA):
        if not 0.0 <= float(lambda_param) <= 1.0:
            raise ValueError(f"lambda_param must be between 0.0 and 1.0, got {lambda_param}")
        self.lambda_param = float(lambda_param)

    @staticmethod
    def _similarities(results: list[dict]) -> np.ndarray:
        if all(r.get("embedding") is not None for r in results):
            vectors = np.asarray([r["embedding"] for r in results], dtype=np.float32)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms == 0, 1.0, norms)
            return gram(vectors)
        from sklearn.feature_extraction.text import TfidfVectorizer

        texts = [result_text(r) or " " for r in results]
        try:
            matrix = TfidfVectorizer().fit_transform(texts)
        except ValueError:  # no words at all
            return np.eye(len(results), dtype=np.float32)
        return (matrix @ matrix.T).toarray()

    @staticmethod
    def _relevance(results: list[dict]) -> np.ndarray:
        scores = [r.get("score") for r in results]
        if all(isinstance(s, (int, float)) for s in scores):
            values = np.asarray(scores, dtype=np.float64)
            span = values.max() - values.min()
            return (values - values.min()) / span if span > 0 else np.ones(len(values))
        return 1.0 - np.arange(len(results)) / max(len(results), 1)

    def rerank(self, query: str, results: list[dict], n_results: int | None = None) -> list[dict]:
        if not results:
            return []
        n = len(results) if n_results is None else min(int(n_results), len(results))
        relevance = self._relevance(results)
        similarity = self._similarities(results)
        chosen: list[int] = []
        remaining = list(range(len(results)))
        while remaining and len(chosen) < n:
            if chosen:
                redundancy = similarity[np.ix_(remaining, chosen)].max(axis=1)
            else:
                redundancy = np.zeros(len(remaining))
            mmr = self.lambda_param * relevance[remaining] - (1 - self.lambda_param) * redundancy
            best = remaining[int(np.argmax(mmr))]
            chosen.append(best)
            remaining.remove(best)
        return [{**results[i], "mmr_rank": rank} for rank, i in enumerate(chosen, start=1)]
