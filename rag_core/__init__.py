"""rag_core: ground claims in scientific literature with TF-IDF, hybrid and exact search."""

from .chunking import PageText, chunk_pages, chunk_text
from .exact import search_exact
from .fusion import HybridSearch, fuse_search_results, reciprocal_rank_fusion
from .index import RagIndex, build_index, build_index_from_chunks
from .query_expansion import QueryExpander
from .rerankers import CrossEncoderReranker, DiversityReranker, NoopReranker, RerankerBase, get_reranker
from .search import search, search_dense, search_lexical
from .settings import (
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_CROSS_ENCODER_MODEL,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_POOL,
)
from .store import IndexFormatError, UnsafeIndexError, load_index, save_index

__version__ = "0.1.0"

__all__ = [
    "CHUNK_OVERLAP_CHARS",
    "CHUNK_SIZE_CHARS",
    "DEFAULT_CROSS_ENCODER_MODEL",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_POOL",
    "CrossEncoderReranker",
    "DiversityReranker",
    "HybridSearch",
    "IndexFormatError",
    "NoopReranker",
    "PageText",
    "QueryExpander",
    "RagIndex",
    "RerankerBase",
    "UnsafeIndexError",
    "build_index",
    "build_index_from_chunks",
    "chunk_pages",
    "chunk_text",
    "fuse_search_results",
    "get_reranker",
    "load_index",
    "reciprocal_rank_fusion",
    "save_index",
    "search",
    "search_dense",
    "search_exact",
    "search_lexical",
]
