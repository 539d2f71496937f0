"""The ranked searches: TF-IDF, BM25, dense, and hybrid (pool union, then rerank or fuse).

A hybrid search is described by one :class:`~rag_core.retrieval.search_spec.SearchSpec` and run by
:func:`search_with_spec`; the contract's :func:`search` builds the spec from its arguments.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass, field, replace

import numpy as np

from rag_core.index.build import RagIndex
from rag_core.index.chunk_table import chunk_sources_mask
from rag_core.index.lexical import top_k
from rag_core.models.loading import ModelUnavailableError, resolve_model
from rag_core.models.query_head import active_query_head, query_encoding
from rag_core.retrieval.fusion import FUSION_DESCRIPTIONS, fuse_candidates, fusion_score_type
from rag_core.retrieval.rerankers.cross_encoder import CrossEncoderReranker
from rag_core.retrieval.search_spec import DEFAULT_SPEC, SearchSpec
from rag_core.settings import (
    DEFAULT_CROSS_ENCODER_MODEL,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_FUSION,
    DEFAULT_FUSION_WEIGHTS,
    DEFAULT_POOL,
    DEFAULT_RRF_K,
    DEFAULT_WITH_BM25,
    MMR_LAMBDA,
)
from rag_core.text.back_matter import back_matter_mask
from rag_core.text.query import check_query
from rag_core.types import DenseRow, HybridRow, LexicalRow

LEXICAL_METHODS = ("tfidf", "bm25")

__all__ = [
    "LEXICAL_METHODS",
    "QueryScores",
    "RerankerStatus",
    "check_query",
    "cross_encoder_status",
    "forget_rerankers",
    "pool_candidates",
    "search",
    "search_dense",
    "search_lexical",
    "search_with_spec",
    "spec_status",
]


@dataclass
class QueryScores:
    """One query's first-stage scores over every chunk of one index, each computed at most once.

    :func:`rag_core.compare` runs three searches of the same query; they share one of these,
    so the TF-IDF cosines (needed by every row) are computed once, not once per list.
    """

    index: RagIndex
    query: str
    _cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def tfidf(self) -> np.ndarray:
        if "tfidf" not in self._cache:
            self._cache["tfidf"] = self.index.tfidf_scores(self.query)
        return self._cache["tfidf"]

    @property
    def bm25(self) -> np.ndarray:
        if "bm25" not in self._cache:
            self._cache["bm25"] = self.index.bm25_scores(self.query)
        return self._cache["bm25"]

    def tfidf_at(self, rows: np.ndarray) -> np.ndarray:
        """TF-IDF cosines of ``rows``: from the whole list when it was computed, else of those rows only."""
        rows = np.asarray(rows, dtype=np.int64)
        if "tfidf" in self._cache or not hasattr(self.index, "tfidf_at"):
            return self.tfidf[rows]
        return self.index.tfidf_at(self.query, rows)

    def dense(self, embedding_model: str | None = None) -> np.ndarray:
        key = f"dense:{embedding_model or self.index.embedding_model}"
        if key not in self._cache:
            self._cache[key] = self.index.dense_scores(self.query, embedding_model)
        return self._cache[key]


def _scores(query: str | QueryScores, index: RagIndex) -> QueryScores:
    if not isinstance(query, QueryScores):
        return QueryScores(index, check_query(query))
    if query.index is not index:
        raise ValueError("these query scores belong to another index; pass the query text instead")
    return query


def _source_mask(index: RagIndex, sources: Collection[str] | None, back_matter: bool = True) -> np.ndarray | None:
    """The chunks a search may return: those of ``sources`` (all when None), less the back
    matter when ``back_matter`` is False (:mod:`rag_core.text.back_matter`); None: every chunk."""
    mask = chunk_sources_mask(index.chunks, set(sources)) if sources else None
    if not back_matter:
        back = back_matter_mask(index.chunks)
        if back is not None:
            mask = ~back if mask is None else mask & ~back
    return mask


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
        **({"ocr": True} if chunk.get("ocr") else {}),  # text read by OCR from a scan
        **({"back_matter": chunk["back_matter"]} if chunk.get("back_matter") else {}),  # e.g. "references"
    }


def _ranked_order(scores: np.ndarray, top: int, mask: np.ndarray | None) -> np.ndarray:
    order = top_k(_masked(scores, mask), top)
    return order if mask is None else order[mask[order]]


def _lexical(scores: QueryScores, top: int, method: str, sources: Collection[str] | None,
             back_matter: bool = True) -> list[LexicalRow]:
    if method not in LEXICAL_METHODS:
        raise ValueError(f"method must be one of {LEXICAL_METHODS}, got {method!r}")
    index = scores.index
    values = scores.tfidf if method == "tfidf" else scores.bm25
    order = _ranked_order(values, top, _source_mask(index, sources, back_matter))
    score_type = "cosine" if method == "tfidf" else "bm25"
    cos = scores.tfidf_at(order)  # a BM25 list needs the cosines of its rows only
    ranked = enumerate(zip(order, cos, strict=True), start=1)
    return [_row(index, i, r, values[i], score_type, c) for r, (i, c) in ranked]


def search_lexical(query: str | QueryScores, index: RagIndex, top: int = 10, *, method: str = "tfidf",
                   sources: Collection[str] | None = None, back_matter: bool = True) -> list[LexicalRow]:
    """TF-IDF (``score_type`` "cosine") or BM25 (``score_type`` "bm25") ranking (``query``: the
    text, or the :class:`QueryScores` other lists of the same query share). ``back_matter=False``
    leaves reference lists and other back matter out."""
    return _lexical(_scores(query, index), top, method, sources, back_matter)


def search_dense(query: str | QueryScores, index: RagIndex, top: int = 10, *, embedding_model: str | None = None,
                 sources: Collection[str] | None = None, back_matter: bool = True) -> list[DenseRow]:
    """Bi-encoder cosine ranking (``score_type`` "dense_cosine"; ``query``: the text, or the
    :class:`QueryScores` other lists of the same query share). ``back_matter=False`` leaves
    reference lists and other back matter out."""
    scores = _scores(query, index)
    mask = _source_mask(index, sources, back_matter)
    if getattr(index, "ann", None) is not None and not sources and embedding_model in (None, index.embedding_model):
        # a large index: through its HNSW graph (asked for more when back matter is left out)
        order, values = index.dense_top(scores.query, _graph_depth(top, mask))
        if mask is not None:
            keep = mask[order]
            order, values = order[keep][:top], values[keep][:top]
        dense = dict(zip(order.tolist(), values.tolist(), strict=True))
    else:
        dense = scores.dense(embedding_model)
        order = _ranked_order(dense, top, _with_vectors(index, mask))
    cos = scores.tfidf_at(order)
    ranked = enumerate(zip(order, cos, strict=True), start=1)
    rows = [_row(index, i, r, dense[i], "dense_cosine", c) for r, (i, c) in ranked]
    coverage = list(index.dense_coverage)
    encoding = query_encoding(embedding_model or index.embedding_model)
    for row in rows:
        row["dense_cosine"] = row["score"]
        row["dense_coverage"] = coverage
        row["query_encoder"] = encoding
    return rows


def _graph_depth(k: int, mask: np.ndarray | None) -> int:
    """How many rows to ask an HNSW graph for so that ``k`` are likely left after ``mask``."""
    if mask is None:
        return k
    left_out = len(mask) - int(mask.sum())
    return min(len(mask), k + min(left_out, 4 * k))


def covered_fusion_weights(index: RagIndex, weights: dict[str, float] | None) -> dict[str, float] | None:
    """The fusion weights, the dense list's scaled by the share of chunks that have a vector.

    While vectors are still being computed the dense list ranks only those chunks (at first a
    few of one document), and min-max scaling puts the best of them level with the best
    lexical find: right after an upload an unrelated passage (TF-IDF cosine 0, dense cosine
    0.11, the closest of 16 embedded ones) came first. Its say now grows with its coverage.
    """
    if not index.has_vectors or index.dense_mask is None:
        return weights
    done, total = index.dense_coverage
    merged = {**DEFAULT_FUSION_WEIGHTS, **(weights or {})}
    return {**merged, "dense": merged.get("dense", 0.0) * done / max(total, 1)}


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
        order = order[np.isfinite(values[order])]  # rows without a score (no vector yet) are not in the list
        lists[name] = [int(i) for i in order]
    ranks = {name: {i: r for r, i in enumerate(order, start=1)} for name, order in lists.items()}
    candidates = list(dict.fromkeys(i for order in lists.values() for i in order))
    return ranks, candidates


@dataclass(frozen=True)
class RerankerStatus:
    """Which reranker a hybrid search uses, and, when it is not a cross-encoder, why and what instead.

    ``kind`` is "cross_encoder" or "fusion". With a cross-encoder, ``name`` is the model and
    ``source`` where it loaded from; ``reason`` and ``fallback`` are None. Without one,
    ``name`` is the fusion's score type ("fused" or "rrf"), ``fusion`` its kind ("minmax",
    "zscore", "rrf"), ``reason`` why no cross-encoder is used and ``fallback`` what orders
    the pool instead. ``detail`` is the one-line message for people; read the fields, not it.
    """

    name: str
    kind: str
    detail: str
    reranker: CrossEncoderReranker | None = None
    reason: str | None = None
    fallback: str | None = None
    fusion: str | None = None
    source: str | None = None
    advice: str | None = None

    @property
    def uses_cross_encoder(self) -> bool:
        return self.reranker is not None

    @property
    def explanation(self) -> str:
        """``detail`` without its "No cross-encoder" lead-in (for a page whose heading says so)."""
        if self.reason is None:
            return self.detail
        text = f"{_sentence(self.reason)} Ordered by {self.fallback} instead."
        return f"{text} {self.advice}" if self.advice else text


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


_reranker_cache: dict[str, RerankerStatus] = {}
_reranker_lock = threading.Lock()


def _fusion_status(reason: str, detail: str, advice: str | None = None) -> RerankerStatus:
    return RerankerStatus(fusion_score_type(), "fusion", detail, reason=reason,
                          fallback=FUSION_DESCRIPTIONS[DEFAULT_FUSION], fusion=DEFAULT_FUSION, advice=advice)


def cross_encoder_status(cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL) -> RerankerStatus:
    """Load the cross-encoder once per process, or say what hybrid search uses instead."""
    with _reranker_lock:
        cached = _reranker_cache.get(cross_encoder_model)
        if cached is not None:
            return cached
        fallback = FUSION_DESCRIPTIONS[DEFAULT_FUSION]
        if not cross_encoder_model:
            reason = "no cross-encoder was asked for"
            status = _fusion_status(reason, f"No cross-encoder was asked for; ordered by {fallback}.")
        else:
            source = resolve_model(cross_encoder_model)
            try:
                if not source.available:
                    raise ModelUnavailableError(source.detail)
                reranker = CrossEncoderReranker(cross_encoder_model).load()
                status = RerankerStatus(cross_encoder_model, "cross_encoder",
                                        f"Cross-encoder {cross_encoder_model}, loaded from {source.detail}.",
                                        reranker, source=source.detail)
            except (ModelUnavailableError, OSError, ValueError, ImportError) as exc:
                advice = "To use one, give a local cross-encoder folder."
                status = _fusion_status(
                    str(exc), f"No cross-encoder: {exc}. Ordered by {fallback} instead. {advice}", advice
                )
        _reranker_cache[cross_encoder_model] = status
        return status


def forget_rerankers() -> None:
    """Drop cached cross-encoder lookups (after a model was added, say)."""
    with _reranker_lock:
        _reranker_cache.clear()


def _check_top(top: int) -> int:
    top = int(top)
    if top <= 0:
        raise ValueError(f"top must be at least 1, got {top}")
    return top


def spec_status(spec: SearchSpec) -> RerankerStatus:
    """The reranker status a search with ``spec`` starts from: its cross-encoder, or fusion and why."""
    return cross_encoder_status(spec.asks_cross_encoder or "")


def search_with_spec(
    query: str | QueryScores,
    index: RagIndex,
    spec: SearchSpec = DEFAULT_SPEC,
    *,
    top: int = 10,
    sources: Collection[str] | None = None,
    back_matter: bool = True,
) -> list[HybridRow]:
    """The hybrid search ``spec`` describes; rows best first, at most ``top``.

    The pool is each first-stage list's top ``spec.pool`` (TF-IDF and/or BM25 as
    ``spec.lexical`` says, and the dense list when the index has vectors), in union. A
    cross-encoder orders it when the spec asks for one and it can be loaded (``score_type``
    "rerank"); otherwise the lists are fused (``spec.fusion``: "fused" for min-max or z-score,
    "rrf"), and with MMR the ordered pool is then reordered for variety (each row gets
    ``pre_mmr_rank``). A row re-read by a cross-encoder gets ``pre_rerank_rank``, its rank in the
    fused order the re-reading stage was handed. Each row's ``reranker`` and ``reranker_detail`` say what ordered it;
    ``cosine`` is always the TF-IDF cosine. ``query``: the text, or the
    :class:`QueryScores` other lists of the same query share. ``sources``: only these documents.
    ``back_matter=False``: no reference lists or other back matter (:mod:`rag_core.text.back_matter`).
    """
    scores = _scores(query, index)
    query = scores.query
    top = _check_top(top)
    pool = spec.pool
    mask = _source_mask(index, sources, back_matter)
    cos = scores.tfidf
    first_stage = {"tfidf": cos} if spec.with_tfidf else {}
    if spec.with_bm25:
        first_stage["bm25"] = scores.bm25
    vectors = index.dense_mask  # None: every chunk has its vector
    graph = getattr(index, "ann", None) is not None and not sources
    if index.has_vectors:
        if graph:
            # a large index: its HNSW graph gives the dense top `pool`; no product over every vector
            rows, cosines = index.dense_top(query, _graph_depth(pool, mask))
            dense = np.full(len(index.chunks), -np.inf, dtype=np.float32)
            dense[rows] = cosines
        else:
            dense = scores.dense()
            # while vectors are still being computed, only chunks that have one are ranked by meaning
            dense = dense if vectors is None else np.where(vectors, dense, -np.inf).astype(np.float32)
        first_stage["dense"] = dense
    ranks, candidates = pool_candidates(first_stage, pool, mask)
    if not candidates:
        return []
    if "dense" in first_stage:
        dense = first_stage["dense"]
        unknown = [i for i in candidates if not np.isfinite(dense[i])]
        if graph and unknown:  # fusion reads every candidate's dense score: exact ones for the lexical finds
            dense[unknown] = index.dense_at(query, np.asarray(unknown))
            unknown = [i for i in candidates if not np.isfinite(dense[i])]
        if unknown:
            # a candidate without a vector counts as the pool's least similar in score fusion
            known = [dense[i] for i in candidates if np.isfinite(dense[i])]
            dense = np.array(dense, dtype=np.float32)  # not the shared QueryScores' array
            dense[unknown] = min(known, default=0.0)
            first_stage["dense"] = dense

    status = spec_status(spec)
    fusion = spec.fusion
    pre_rerank = None
    if status.reranker is not None:
        ce_scores, truncated = status.reranker.score(query, [index.chunks[i]["text"] for i in candidates])
        ordered = sorted(zip(candidates, ce_scores, truncated, strict=True), key=lambda t: (-t[1], t[0]))
        score_type = "rerank"
        # the list the re-reading stage was handed, as fusion orders it (Compare shows each row's move)
        fused = fuse_candidates(first_stage, ranks, candidates, weights=covered_fusion_weights(index, spec.weights()),
                                rrf_k=spec.rrf_k, kind=fusion)
        pre_rerank = {i: r for r, i in enumerate(sorted(candidates, key=lambda i: (-fused[i], i)), start=1)}
    else:
        fused = fuse_candidates(first_stage, ranks, candidates, weights=covered_fusion_weights(index, spec.weights()),
                                rrf_k=spec.rrf_k, kind=fusion)
        ordered = sorted(((i, fused[i], None) for i in candidates), key=lambda t: (-t[1], t[0]))
        score_type = fusion_score_type(fusion)
        if fusion != DEFAULT_FUSION:  # the cached status names the default fusion
            status = replace(status, name=score_type, fusion=fusion, fallback=FUSION_DESCRIPTIONS[fusion],
                             detail=status.detail.replace(FUSION_DESCRIPTIONS[DEFAULT_FUSION],
                                                          FUSION_DESCRIPTIONS[fusion]))

    pre_mmr = None
    if spec.mmr is not None:
        pre_mmr = {i: r for r, (i, _, _) in enumerate(ordered, start=1)}
        ordered = _mmr_order(index, ordered, spec.mmr)
        status = replace(status, name="mmr", detail=f"{status.detail} Then maximal marginal relevance "
                         f"(λ={spec.mmr:g}) reordered the pool for diversity.")

    encoding, detail = None, status.detail
    if "dense" in first_stage:
        encoding = query_encoding(index.embedding_model)
        if active_query_head(index.embedding_model) is not None:
            detail = f"{detail} Dense scores by {encoding}."
    results = []
    for rank, (i, score, cut) in enumerate(ordered[:top], start=1):
        row = _row(index, i, rank, score, score_type, cos[i])
        found = {name: ranks[name].get(i) for name in ranks}
        lexical_hit = any(found.get(n) for n in ("tfidf", "bm25"))
        dense_hit = bool(found.get("dense"))
        has_vector = "dense" in first_stage and (vectors is None or bool(vectors[i]))
        row.update(
            dense_cosine=float(first_stage["dense"][i]) if has_vector else None,
            dense_coverage=list(index.dense_coverage),
            bm25_score=float(first_stage["bm25"][i]) if "bm25" in first_stage else None,
            found_by="both" if lexical_hit and dense_hit else ("dense" if dense_hit else
                      "+".join(n for n in ("tfidf", "bm25") if found.get(n))),
            first_stage_ranks=found,
            tfidf_rank=found.get("tfidf"),
            bm25_rank=found.get("bm25"),
            dense_rank=found.get("dense"),
            pool_size=len(candidates),
            reranker=status.name,
            reranker_detail=detail,
            query_encoder=encoding,
            truncated=bool(cut) if cut is not None else None,
        )
        if pre_rerank is not None:
            row["pre_rerank_rank"] = pre_rerank[i]
        if pre_mmr is not None:
            row["pre_mmr_rank"] = pre_mmr[i]
        results.append(row)
    return results


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
    back_matter: bool = True,
) -> list[LexicalRow] | list[HybridRow]:
    """Search ``index`` for ``query``; results best first (the contract's function).

    ``rerank=False``: TF-IDF cosine ranking, no model loaded. ``rerank=True``: the hybrid
    search of :func:`search_with_spec`, with a :class:`~rag_core.retrieval.search_spec.SearchSpec`
    made of these arguments: the pool is the TF-IDF top ``pool`` (plus the BM25 top ``pool``
    when ``with_bm25``) UNION the dense top ``pool``, ordered by the cross-encoder
    ``cross_encoder_model`` (``score_type`` "rerank"; "" asks for none), or, when no
    cross-encoder can be had, by fusing the first-stage lists (``fusion``, default
    ``DEFAULT_FUSION``: BM25 and dense scores min-max normalised over the pool and summed with
    ``fusion_weights``, ``score_type`` "fused"; "rrf": reciprocal rank fusion with ``rrf_k``).
    Each row's ``reranker`` and ``reranker_detail`` say which. ``cosine`` is always the
    TF-IDF cosine. ``with_tfidf=False`` leaves the TF-IDF list out of the pool (BM25 must then
    be in it). ``mmr_lambda`` (0 to 1) reorders the ordered pool by maximal marginal relevance
    (:class:`~rag_core.retrieval.rerankers.DiversityReranker`: lower favours diversity); each
    row then has ``pre_mmr_rank``. ``back_matter=False`` leaves reference lists and other back
    matter out (:mod:`rag_core.text.back_matter`). A query that is empty, too long or not valid Unicode raises
    :class:`rag_core.errors.QueryError`.
    """
    scores = QueryScores(index, check_query(query))
    top = _check_top(top)
    if not rerank:
        return _lexical(scores, top, "tfidf", sources, back_matter)
    if not with_tfidf and not with_bm25:
        raise ValueError("the pool needs a lexical list: keep TF-IDF (with_tfidf) or BM25 (with_bm25) in it")
    lexical = "both" if with_tfidf and with_bm25 else ("tfidf" if with_tfidf else "bm25")
    if cross_encoder_model:
        reranker = "auto"
    else:
        reranker = "none" if mmr_lambda is None else "mmr"
    spec = SearchSpec(
        fusion=fusion or DEFAULT_FUSION, rrf_k=rrf_k, pool=int(pool), lexical=lexical, reranker=reranker,
        mmr_lambda=MMR_LAMBDA if mmr_lambda is None else mmr_lambda, cross_encoder_model=cross_encoder_model or None,
        # the weights exactly as given (the package's when none): the dense weight alone cannot say all of them
        fusion_weights=fusion_weights or DEFAULT_FUSION_WEIGHTS,
        mmr_after_cross_encoder=bool(cross_encoder_model) and mmr_lambda is not None,
    )
    if index.has_vectors and embedding_model not in (DEFAULT_EMBEDDING_MODEL, index.embedding_model):
        raise ValueError(
            f"This index was embedded with {index.embedding_model!r}; query it with the same model, "
            f"not {embedding_model!r}."
        )
    return search_with_spec(scores, index, spec, top=top, sources=sources, back_matter=back_matter)


def _mmr_order(index: RagIndex, ordered: list[tuple], lambda_param: float) -> list[tuple]:
    """``ordered`` (candidate, score, cut) reordered by maximal marginal relevance."""
    from rag_core.retrieval.rerankers.diversity import DiversityReranker

    rows = np.fromiter((i for i, _, _ in ordered), dtype=np.int64, count=len(ordered))
    vectors = None  # the pool's vectors read at once (a memory-mapped row each was ~20 ms a query)
    found = index.vectors_at(rows) if len(rows) else None
    if found is not None and found[1].all():
        vectors = found[0]
    items = [{"text": "" if vectors is not None else index.chunks[i]["text"], "score": float(score),
              "embedding": None if vectors is None else vectors[n], "item": (i, score, cut)}
             for n, (i, score, cut) in enumerate(ordered)]
    return [r["item"] for r in DiversityReranker(lambda_param).rerank("", items)]
