"""The shapes of the rows the searches return.

Rows stay plain ``dict``s at run time (the public contract promises dicts, and JSON and
pandas take them as they are); these ``TypedDict``s name their keys and types for readers
and type checkers. Keys marked ``NotRequired`` are added by :func:`rag_core.compare`.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

ScoreType = Literal["cosine", "bm25", "dense_cosine", "rerank", "fused", "rrf", "exact"]
"""What ``score`` is: TF-IDF cosine, BM25, bi-encoder cosine, cross-encoder logit,
min-max / z-score fusion, reciprocal rank fusion, or an exact match (always 1.0)."""

FoundBy = Literal["tfidf", "bm25", "tfidf+bm25", "dense", "both"]
"""Which first-stage lists put a hybrid row in the pool ("both": a lexical list and dense)."""

Movement = Literal["up", "down", "same", "new"]
"""A row's rank against the TF-IDF list ("new": not in the TF-IDF list)."""

ExactMode = Literal["literal", "regex", "normalized"]


class RankedRow(TypedDict):
    """The keys every ranked row has (TF-IDF, BM25, dense and hybrid)."""

    rank: int  # from 1
    source: str
    text: str
    score: float
    score_type: ScoreType
    cosine: float  # the chunk's TF-IDF cosine to the query, whatever ranked it
    chunk_index: int  # position in ``index.chunks``
    doc_chunk: int | None  # position among its document's chunks
    page_start: int | None
    page_end: int | None
    page_label: str | None  # the printed page label, when the PDF has labels
    doc_id: str | None
    # Added by compare(): the row's rank in each of the three lists, and its move.
    tfidf_list_rank: NotRequired[int | None]
    hybrid_list_rank: NotRequired[int | None]
    exact_list_rank: NotRequired[int | None]
    movement: NotRequired[Movement]


class LexicalRow(RankedRow):
    """A TF-IDF row (``score_type`` "cosine", ``score == cosine``) or a BM25 row ("bm25")."""


class DenseRow(RankedRow):
    """A bi-encoder row: ``score_type`` "dense_cosine", ``score == dense_cosine``."""

    dense_cosine: float
    query_encoder: str  # what embedded the query (model, query head)


class HybridRow(RankedRow):
    """A hybrid row: ``score_type`` "rerank" (cross-encoder) or "fused" / "rrf" (fusion)."""

    dense_cosine: float | None  # None when the index has no embeddings
    bm25_score: float | None  # None when BM25 was not in the pool
    found_by: FoundBy
    first_stage_ranks: dict[str, int | None]  # list name -> rank in its top ``pool``
    tfidf_rank: int | None
    bm25_rank: int | None
    dense_rank: int | None
    pool_size: int  # candidates in the union of the first-stage lists
    reranker: str  # the cross-encoder's name, or the fusion's score type
    reranker_detail: str  # which reranker ran, or what was used instead and why
    query_encoder: str | None  # what embedded the query (model, query head); None: no dense list
    truncated: bool | None  # the cross-encoder read a cut passage; None without one


class ExactHit(TypedDict):
    """One exact-search hit (the first match in its chunk)."""

    source: str
    chunk_index: int
    match: str  # == index.chunks[chunk_index]["text"][start:end]
    snippet: str  # the match with context, "..." on a side that was cut
    start: int
    end: int
    truncated: bool  # True on the last hit when ``max_hits`` stopped the scan
    mode: ExactMode
    page: int | None
    page_start: int | None
    page_end: int | None
    page_label: str | None
    doc_chunk: int | None
    doc_start: int | None  # offsets in the document's text, when the chunk knows its start
    doc_end: int | None
    # Added by compare() (and the CLI adds ``rank``).
    rank: NotRequired[int]
    score: NotRequired[float]
    score_type: NotRequired[ScoreType]
    cosine: NotRequired[float]
    doc_id: NotRequired[str | None]
    tfidf_list_rank: NotRequired[int | None]
    hybrid_list_rank: NotRequired[int | None]


__all__ = [
    "DenseRow",
    "ExactHit",
    "ExactMode",
    "FoundBy",
    "HybridRow",
    "LexicalRow",
    "Movement",
    "RankedRow",
    "ScoreType",
]
