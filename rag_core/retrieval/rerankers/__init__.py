"""Rerankers: one module per backend and a small factory."""

from __future__ import annotations

from rag_core.retrieval.rerankers.base import RerankerBase
from rag_core.retrieval.rerankers.cross_encoder import CrossEncoderReranker
from rag_core.retrieval.rerankers.diversity import DiversityReranker
from rag_core.retrieval.rerankers.noop import NoopReranker

_RERANKERS = {
    "cross_encoder": CrossEncoderReranker,
    "diversity": DiversityReranker,
    "none": NoopReranker,
}


def get_reranker(reranker_type: str = "none", **kwargs) -> RerankerBase:
    """``"cross_encoder"``, ``"diversity"`` or ``"none"``; kwargs go to the class."""
    try:
        cls = _RERANKERS[reranker_type]
    except KeyError:
        raise ValueError(
            f"unknown reranker_type {reranker_type!r}; choose one of {sorted(_RERANKERS)}"
        ) from None
    return cls(**kwargs)


__all__ = ["CrossEncoderReranker", "DiversityReranker", "NoopReranker", "RerankerBase", "get_reranker"]
