"""The ranked searches: TF-IDF, BM25, dense, and hybrid (pool union, then rerank or fuse)."""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from .fusion import (  # noqa: F401  (re-exported: the hybrid defaults are read from here too)
    DEFAULT_FUSION,
    DEFAULT_FUSION_WEIGHTS,
    DEFAULT_RRF_K,
    DEFAULT_WITH_BM25,
    FUSION_DESCRIPTIONS,
    FUSIONS,
    fuse_candidates,
    fusion_score_type,
)
from .errors import QueryError
from .index import RagIndex
from .lexical import top_k
from .models import ModelUnavailableError, resolve_model
from .rerankers.cross_encoder import CrossEncoderReranker
from .settings import DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_EMBEDDING_MODEL, DEFAULT_POOL, MAX_QUERY_CHARS

LEXICAL_METHODS = ("tfidf", "bm25")


def check_query(query: str) -> str:
    """The stripped query, or ``ValueError`` with what to do instead."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    stripped = query.strip()
    if not stripped:
        raise QueryError("The query is empty: type a question, a claim or some key words.")
    if len(stripped) > MAX_QUERY_CHARS:
        raise QueryError(f"The query is {len(stripped):,} characters long; the limit is {MAX_QUERY_CHARS:,}.")
    return stripped


def _source_mask(index: RagIndex, sources: Collection[str] | None) -> np.ndarray | None:
    if not sources:
        return None
    wanted = set(sources)
    return np.fromiter((c["source"] in wanted for c in index.chunks), dtype=bool, count=len(index.chunks))


def _masked(scores: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    if mask is None:
        return scores
    out = np.array(scores, dtype=np.float32, copy=True)
    out[~mask] = -np.inf
    return out


def _row(index: RagIndex, i: int, rank: int, score: float, score_type: str, cosine: float) -> dict:
    chunk = index.chunks[i]
    return {
        "rank": rank,
        "source": chunk["source"],
        "text": chunk["text"],
        "score": float(score),
        "score_type": score_type,
        "cosine": float(cosine),
        "chunk_index": int(i),
        "doc_chunk": chunk.get("doc_chunk"),
        "page_start": chunk.get("page_start"),
        "page_end": chunk.get("page_end"),
        "page_label": chunk.get("page_label"),
        "doc_id": chunk.get("doc_id"),
    }


def search_lexical(query: str, index: RagIndex, top: int = 10, *, method: str = "tfidf",
                   sources: Collection[str] | None = None) -> list[dict]:
    """TF-IDF (``score_type`` "cosine") or BM25 (``score_type`` "bm25") ranking."""
    query = check_query(query)
    if method not in LEXICAL_METHODS:
        raise ValueError(f"method must be one of {LEXICAL_METHODS}, got {method!r}")
    mask = _source_mask(index, sources)
    cos = index.tfidf_scores(query)
    scores = cos if method == "tfidf" else index.bm25_scores(query)
    order = top_k(_masked(scores, mask), top)
    if mask is not None:
        order = order[mask[order]]
    score_type = "cosine" if method == "tfidf" else "bm25"
    return [_row(index, i, r, scores[i], score_type, cos[i]) for r, i in enumerate(order, start=1)]


def search_dense(query: str, index: RagIndex, top: int = 10, *, embedding_model: str | None = None,
                 sources: Collection[str] | None = None) -> list[dict]:
    """Bi-encoder cosine ranking (``score_type`` "dense_cosine")."""
    query = check_query(query)
    mask = _with_vectors(index, _source_mask(index, sources))
    dense = index.dense_scores(query, embedding_model)
    cos = index.tfidf_scores(query)
    order = top_k(_masked(dense, mask), top)
    if mask is not None:
        order = order[mask[order]]
    rows = [_row(index, i, r, dense[i], "dense_cosine", cos[i]) for r, i in enumerate(order, start=1)]
    coverage = list(index.dense_coverage)
    for row in rows:
        row["dense_cosine"] = row["score"]
        row["dense_coverage"] = coverage
    return rows


def _with_vectors(index: RagIndex, mask: np.ndarray | None) -> np.ndarray | None:
    """``mask`` narrowed to the chunks that have a dense vector (while vectors are still being computed)."""
    if index.dense_mask is None:
        return mask
    return index.dense_mask if mask is None else (mask & index.dense_mask)


def pool_candidates(
    scores: dict[str, np.ndarray], pool: int, mask: np.ndarray | None = None
) -> tuple[dict[str, dict[int, int]], list[int]]:
    """Each first-stage list's top ``pool`` (rank from 1) and their union, in list order.

    Lexical lists keep only chunks that share a term with the query (score > 0).
    """
    lists: dict[str, list[int]] = {}
    for name, values in scores.items():
        order = top_k(_masked(values, mask), pool, positive_only=(name != "dense"))
        if mask is not None:
            order = order[mask[order]]
        lists[name] = [int(i) for i in order]
    ranks = {name: {i: r for r, i in enumerate(order, start=1)} for name, order in lists.items()}
    candidates = list(dict.fromkeys(i for order in lists.values() for i in order))
    return ranks, candidates


@dataclass(frozen=True)
class RerankerStatus:
    """Which reranker a hybrid search used and why."""

    name: str
    kind: str  # "cross_encoder" or "fusion"
    detail: str
    reranker: CrossEncoderReranker | None = None


_reranker_cache: dict[str, RerankerStatus] = {}
_reranker_lock = threading.Lock()


def cross_encoder_status(cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL) -> RerankerStatus:
    """Load the cross-encoder once per process, or say what hybrid search uses instead."""
    with _reranker_lock:
        cached = _reranker_cache.get(cross_encoder_model)
        if cached is not None:
            return cached
        fallback = FUSION_DESCRIPTIONS[DEFAULT_FUSION]
        fused_name = fusion_score_type()
        if not cross_encoder_model:
            status = RerankerStatus(fused_name, "fusion", f"No cross-encoder was asked for; ordered by {fallback}.")
        else:
            source = resolve_model(cross_encoder_model)
            try:
                if not source.available:
                    raise ModelUnavailableError(source.detail)
                reranker = CrossEncoderReranker(cross_encoder_model).load()
                status = RerankerStatus(cross_encoder_model, "cross_encoder",
                                        f"Cross-encoder {cross_encoder_model}, loaded from {source.detail}.", reranker)
            except (ModelUnavailableError, OSError, ValueError, ImportError) as exc:
                status = RerankerStatus(
                    fused_name, "fusion",
                    f"No cross-encoder: {exc}. Ordered by {fallback} instead. "
                    "To use one, give a local cross-encoder folder.",
                )
        _reranker_cache[cross_encoder_model] = status
        return status


def forget_rerankers() -> None:
    """Drop cached cross-encoder lookups (after a model was added, say)."""
    with _reranker_lock:
        _reranker_cache.clear()


def search(
    query: str,
    index: RagIndex,
    top: int = 3,
    rerank: bool = True,
    pool: int = DEFAULT_POOL,
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL,
    *,
    with_bm25: bool = DEFAULT_WITH_BM25,
    fusion_weights: dict[str, float] | None = None,
    rrf_k: int = DEFAULT_RRF_K,
    sources: Collection[str] | None = None,
    fusion: str | None = None,
    with_tfidf: bool = True,
    mmr_lambda: float | None = None,
) -> list[dict]:
    """Search ``index`` for ``query``; results best first.

    ``rerank=False``: TF-IDF cosine ranking, no model loaded. ``rerank=True``: the pool
    is the TF-IDF top ``pool`` (plus the BM25 top ``pool`` when ``with_bm25``) UNION the dense top
    ``pool``, ordered by the cross-encoder (``score_type`` "rerank"), or, when no
    cross-encoder can be had, by fusing the first-stage lists (``DEFAULT_FUSION``: BM25 and
    dense scores min-max normalised over the pool and summed with ``fusion_weights``,
    ``score_type`` "fused"; with ``DEFAULT_FUSION = "rrf"``, reciprocal rank fusion with
    ``rrf_k``, ``score_type`` "rrf"). Each row's ``reranker`` and ``reranker_detail`` say
    which. ``cosine`` is always the TF-IDF cosine.

    ``fusion`` ("minmax", "zscore" or "rrf"; default ``DEFAULT_FUSION``) chooses how the
    lists are fused when no cross-encoder reorders them; ``with_tfidf=False`` leaves the
    TF-IDF list out of the pool (BM25 must then be in it). ``mmr_lambda`` (0 to 1) reorders
    the ordered pool by maximal marginal relevance (:class:`~rag_core.rerankers.DiversityReranker`:
    lower favours diversity); each row then has ``pre_mmr_rank``. A collection's saved choices
    become these arguments through :func:`rag_core.lab.config.collection_search_kwargs`.
    """
    query = check_query(query)
    top = int(top)
    if top <= 0:
        raise ValueError(f"top must be at least 1, got {top}")
    if not rerank:
        return search_lexical(query, index, top, method="tfidf", sources=sources)
    if int(pool) <= 0:
        raise ValueError(f"pool must be at least 1, got {pool}")
    fusion = fusion or DEFAULT_FUSION
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {FUSIONS}, got {fusion!r}")
    if mmr_lambda is not None and not 0.0 <= float(mmr_lambda) <= 1.0:
        raise ValueError(f"mmr_lambda must be between 0.0 and 1.0, got {mmr_lambda}")
    if not with_tfidf and not with_bm25:
        raise ValueError("the pool needs a lexical list: keep TF-IDF (with_tfidf) or BM25 (with_bm25) in it")
    if index.embeddings is not None and embedding_model not in (DEFAULT_EMBEDDING_MODEL, index.embedding_model):
        raise ValueError(
            f"This index was embedded with {index.embedding_model!r}; query it with the same model, "
            f"not {embedding_model!r}."
        )
    mask = _source_mask(index, sources)
    cos = index.tfidf_scores(query)
    scores = {"tfidf": cos} if with_tfidf else {}
    if with_bm25:
        scores["bm25"] = index.bm25_scores(query)
    if index.embeddings is not None:
        scores["dense"] = index.dense_scores(query)
    if "dense" in scores and index.dense_mask is not None:  # vectors still being computed: rank only those
        scores["dense"] = np.where(index.dense_mask, scores["dense"], -np.inf).astype(np.float32)
    ranks, candidates = pool_candidates(scores, pool, mask)
    if not candidates:
        return []
    if "dense" in scores and index.dense_mask is not None:
        # a candidate without a vector counts as the pool's least similar one in score fusion
        known = [scores["dense"][i] for i in candidates if index.dense_mask[i]]
        scores["dense"] = np.where(index.dense_mask, scores["dense"], min(known, default=0.0)).astype(np.float32)

    status = cross_encoder_status(cross_encoder_model)
    if status.reranker is not None:
        ce_scores, truncated = status.reranker.score(query, [index.chunks[i]["text"] for i in candidates])
        ordered = sorted(zip(candidates, ce_scores, truncated), key=lambda t: (-t[1], t[0]))
        score_type = "rerank"
    else:
        fused = fuse_candidates(scores, ranks, candidates, weights=fusion_weights, rrf_k=rrf_k, kind=fusion)
        ordered = sorted(((i, fused[i], None) for i in candidates), key=lambda t: (-t[1], t[0]))
        score_type = fusion_score_type(fusion)
        if fusion != DEFAULT_FUSION:  # the cached status names the default fusion
            status = RerankerStatus(score_type, status.kind, status.detail.replace(
                FUSION_DESCRIPTIONS[DEFAULT_FUSION], FUSION_DESCRIPTIONS[fusion]))

    pre_mmr = None
    if mmr_lambda is not None:
        pre_mmr = {i: r for r, (i, _, _) in enumerate(ordered, start=1)}
        ordered = _mmr_order(index, ordered, float(mmr_lambda))
        status = RerankerStatus("mmr", status.kind, f"{status.detail} Then maximal marginal relevance "
                                f"(λ={float(mmr_lambda):g}) reordered the pool for diversity.")
    results = []
    for rank, (i, score, cut) in enumerate(ordered[:top], start=1):
        row = _row(index, i, rank, score, score_type, cos[i])
        first_stage = {name: ranks[name].get(i) for name in ranks}
        lexical_hit = any(first_stage.get(n) for n in ("tfidf", "bm25"))
        dense_hit = bool(first_stage.get("dense"))
        has_vector = "dense" in scores and (index.dense_mask is None or bool(index.dense_mask[i]))
        row.update(
            dense_cosine=float(scores["dense"][i]) if has_vector else None,
            dense_coverage=list(index.dense_coverage),
            bm25_score=float(scores["bm25"][i]) if "bm25" in scores else None,
            found_by="both" if lexical_hit and dense_hit else ("dense" if dense_hit else
                      "+".join(n for n in ("tfidf", "bm25") if first_stage.get(n))),
            first_stage_ranks=first_stage,
            tfidf_rank=first_stage.get("tfidf"),
            bm25_rank=first_stage.get("bm25"),
            dense_rank=first_stage.get("dense"),
            pool_size=len(candidates),
            reranker=status.name,
            reranker_detail=status.detail,
            truncated=bool(cut) if cut is not None else None,
        )
        if pre_mmr is not None:
            row["pre_mmr_rank"] = pre_mmr[i]
        results.append(row)
    return results


def _mmr_order(index: RagIndex, ordered: list[tuple], lambda_param: float) -> list[tuple]:
    """``ordered`` (candidate, score, cut) reordered by maximal marginal relevance."""
    from .rerankers.diversity import DiversityReranker

    def vector(i: int):
        if index.embeddings is None or (index.dense_mask is not None and not index.dense_mask[i]):
            return None
        return index.embeddings[i]

    items = [{"text": index.chunks[i]["text"], "score": float(score), "embedding": vector(i), "item": (i, score, cut)}
             for i, score, cut in ordered]
    return [r["item"] for r in DiversityReranker(lambda_param).rerank("", items)]
