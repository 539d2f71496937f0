"""Retrieval quality: every method by one name, one implementation of the metrics, and BEIR datasets.

:mod:`.methods` is the method registry (names, labels, what each needs, :func:`run_method`),
used by BEIR evaluation and by the relevance lab; :mod:`.metrics` scores rankings (BEIR's
nDCG@10, MRR@10, Recall@100, and the lab's figures against graded passages); :mod:`.beir`
reads a dataset folder and chunks its documents; :mod:`.cache` keeps chunk embeddings between
runs; :mod:`.runner` ranks a dataset with each method (:class:`Evaluator`, :func:`evaluate`,
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
from rag_core.evaluation.methods import METHODS, method_label, parse_methods, run_method
from rag_core.evaluation.metrics import BEIR_METRICS, as_run, compute_metrics, docs_from_chunks, per_query_metrics
from rag_core.evaluation.runner import (
    CHUNK_DEPTH,
    DEFAULT_METHODS,
    Evaluator,
    cross_encoder_unavailable,
    evaluate,
    format_table,
)
from rag_core.settings import EVAL_CACHE_ENV as CACHE_ENV
from rag_core.settings import EVAL_CROSS_ENCODER_ENV as CROSS_ENCODER_ENV

__all__ = [
    "BEIR_METRICS",
    "CACHE_ENV",
    "CHUNK_DEPTH",
    "CROSS_ENCODER_ENV",
    "DEFAULT_METHODS",
    "DEFAULT_TITLE_MODE",
    "METHODS",
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
    "method_label",
    "parse_methods",
    "per_query_metrics",
    "read_qrels",
    "run_method",
]
