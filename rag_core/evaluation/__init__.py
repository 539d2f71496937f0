"""Retrieval quality on BEIR-format datasets, laid out as BEIR does.

:mod:`.beir` reads a dataset folder and chunks its documents; :mod:`.metrics` scores
rankings (nDCG@10, MRR@10, Recall@100); :mod:`.cache` keeps chunk embeddings between
runs; :mod:`.runner` ranks with each method (:class:`Evaluator`, :func:`evaluate`,
:func:`format_table`). The names below are importable from ``rag_core.evaluation``.
"""

from __future__ import annotations

from rag_core.evaluation.beir import (
    DEFAULT_TITLE_MODE,
    TITLE_MODES,
    BeirDataset,
    document_chunks,
    load_beir,
    read_qrels,
)
from rag_core.evaluation.cache import cached_embeddings
from rag_core.evaluation.metrics import METRICS, as_run, compute_metrics, docs_from_chunks, per_query_metrics
from rag_core.evaluation.runner import (
    CHUNK_DEPTH,
    DEFAULT_METHODS,
    METHODS,
    Evaluator,
    cross_encoder_unavailable,
    evaluate,
    format_table,
)
from rag_core.settings import EVAL_CACHE_ENV as CACHE_ENV
from rag_core.settings import EVAL_CROSS_ENCODER_ENV as CROSS_ENCODER_ENV
from rag_core.settings import MMR_LAMBDA

__all__ = [
    "CACHE_ENV",
    "CHUNK_DEPTH",
    "CROSS_ENCODER_ENV",
    "DEFAULT_METHODS",
    "DEFAULT_TITLE_MODE",
    "METHODS",
    "METRICS",
    "MMR_LAMBDA",
    "TITLE_MODES",
    "BeirDataset",
    "Evaluator",
    "as_run",
    "cached_embeddings",
    "compute_metrics",
    "cross_encoder_unavailable",
    "docs_from_chunks",
    "document_chunks",
    "evaluate",
    "format_table",
    "load_beir",
    "per_query_metrics",
    "read_qrels",
]
