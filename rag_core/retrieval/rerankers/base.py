"""The reranker interface."""

from __future__ import annotations

from abc import ABC, abstractmethod


def result_text(result: dict) -> str:
    """The passage text of a result dict (``text``, ``content`` or ``document``)."""
    for key in ("text", "content", "document"):
        value = result.get(key)
        if isinstance(value, str):
            return value
    return ""


class RerankerBase(ABC):
    """Orders a list of result dicts for a query; returns new dicts, best first."""

    name = "base"

    @abstractmethod
    def rerank(self, query: str, results: list[dict], n_results: int | None = None) -> list[dict]:
        """Reorder ``results`` for ``query`` and cut to ``n_results`` when given."""

    @staticmethod
    def _cut(results: list[dict], n_results: int | None) -> list[dict]:
        return results if n_results is None else results[: max(int(n_results), 0)]
