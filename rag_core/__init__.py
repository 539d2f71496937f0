"""rag_core: ground claims in scientific literature with TF-IDF, hybrid and exact search.

Names are imported lazily, so ``from rag_core import chunk_text`` (pure Python) works
with no optional dependency installed, and ``import rag_core`` stays fast.
"""

from __future__ import annotations

import importlib

from rag_core.settings import (
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_CROSS_ENCODER_MODEL,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_POOL,
)
from rag_core.text.chunking import PageText, chunk_pages, chunk_text

__version__ = "0.1.0"

_LAZY = {
    "search_exact": "retrieval.exact",
    "HybridSearch": "compat",
    "QueryExpander": "compat",
    "fuse_search_results": "compat",
    "reciprocal_rank_fusion": "compat",
    "RagIndex": "index.build",
    "build_index": "index.build",
    "build_index_from_chunks": "index.build",
    "CrossEncoderReranker": "retrieval.rerankers",
    "DiversityReranker": "retrieval.rerankers",
    "NoopReranker": "retrieval.rerankers",
    "RerankerBase": "retrieval.rerankers",
    "get_reranker": "retrieval.rerankers",
    "search": "retrieval.ranking",
    "search_dense": "retrieval.ranking",
    "search_lexical": "retrieval.ranking",
    "IndexFormatError": "errors",
    "QueryError": "errors",
    "RagCoreError": "errors",
    "UnsafeIndexError": "errors",
    "load_index": "collections.store",
    "save_index": "collections.store",
    "Library": "collections.library",
    "compare": "retrieval.comparison",
    "verify_quote": "citations.verdicts",
    "CitationCheck": "citations.verdicts",
    "extract_pdf": "pdf.extraction",
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
