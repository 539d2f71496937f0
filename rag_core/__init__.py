"""rag_core: ground claims in scientific literature with TF-IDF, hybrid and exact search.

Names are imported lazily, so ``from rag_core import chunk_text`` (pure Python) works
with no optional dependency installed, and ``import rag_core`` stays fast.
"""

from __future__ import annotations

import importlib

from .chunking import PageText, chunk_pages, chunk_text
from .settings import (
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_CROSS_ENCODER_MODEL,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_POOL,
)

__version__ = "0.1.0"

_LAZY = {
    "search_exact": "exact",
    "HybridSearch": "compat",
    "QueryExpander": "compat",
    "fuse_search_results": "compat",
    "reciprocal_rank_fusion": "compat",
    "RagIndex": "index",
    "build_index": "index",
    "build_index_from_chunks": "index",
    "CrossEncoderReranker": "rerankers",
    "DiversityReranker": "rerankers",
    "NoopReranker": "rerankers",
    "RerankerBase": "rerankers",
    "get_reranker": "rerankers",
    "search": "retrieval",
    "search_dense": "retrieval",
    "search_lexical": "retrieval",
    "IndexFormatError": "errors",
    "QueryError": "errors",
    "RagCoreError": "errors",
    "UnsafeIndexError": "errors",
    "load_index": "store",
    "save_index": "store",
    "Library": "library",
    "compare": "comparison",
    "verify_quote": "citations",
    "CitationCheck": "citations",
    "extract_pdf": "pdf",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rag_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CHUNK_OVERLAP_CHARS",
    "CHUNK_SIZE_CHARS",
    "DEFAULT_CROSS_ENCODER_MODEL",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_POOL",
    "PageText",
    "chunk_pages",
    "chunk_text",
    *sorted(_LAZY),
]
