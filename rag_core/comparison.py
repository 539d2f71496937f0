"""One call for the side-by-side view: TF-IDF, hybrid and exact lists with cross-ranks."""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field

from .exact import search_exact
from .index import RagIndex
from .retrieval import check_query, cross_encoder_status, search
from .settings import DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_POOL


@dataclass
class Comparison:
    """The three lists for one query; each row knows its rank in the other lists.

    Rows of ``tfidf`` and ``hybrid`` carry ``tfidf_list_rank``, ``hybrid_list_rank``,
    ``exact_list_rank`` (None when absent) and ``movement`` against the TF-IDF list:
    "up", "down", "same" or "new". Exact rows carry the ranked lists' ranks of their chunk.
    """

    query: str
    tfidf: list[dict]
    hybrid: list[dict]
    exact: list[dict]
    reranker: str
    reranker_kind: str
    reranker_detail: str
    exact_mode: str
    exact_error: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "query": self.query, "tfidf": self.tfidf, "hybrid": self.hybrid, "exact": self.exact,
            "reranker": self.reranker, "reranker_kind": self.reranker_kind,
            "reranker_detail": self.reranker_detail, "exact_mode": self.exact_mode,
            "exact_error": self.exact_error, "timings_ms": self.timings_ms,
        }


def movement(rank: int, tfidf_rank: int | None) -> str:
    """A row's move against the TF-IDF list: "up", "down", "same" or "new"."""
    if tfidf_rank is None:
        return "new"
    if rank < tfidf_rank:
        return "up"
    if rank > tfidf_rank:
        return "down"
    return "same"


def compare(
    query: str,
    index: RagIndex,
    *,
    top: int = 10,
    pool: int = DEFAULT_POOL,
    cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL,
    exact_mode: str = "normalized",
    exact_query: str | None = None,
    max_exact_hits: int = 10,
    context: int = 200,
    sources: Collection[str] | None = None,
) -> Comparison:
    """Run TF-IDF, hybrid and exact search for one query and cross-reference the lists."""
    query = check_query(query)
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    tfidf = search(query, index, top=top, rerank=False, sources=sources)
    timings["tfidf"] = (time.perf_counter() - t0) * 1000

    t0 = time.perf_counter()
    hybrid = search(query, index, top=top, rerank=True, pool=pool, cross_encoder_model=cross_encoder_model,
                    sources=sources)
    timings["hybrid"] = (time.perf_counter() - t0) * 1000
    status = cross_encoder_status(cross_encoder_model)

    t0 = time.perf_counter()
    exact_error = None
    try:
        exact = search_exact(exact_query or query, index, max_hits=max_exact_hits, context=context,
                             mode=exact_mode, sources=sources)
    except ValueError as exc:  # an invalid regular expression, say: the other two lists still stand
        exact, exact_error = [], str(exc)
    timings["exact"] = (time.perf_counter() - t0) * 1000
    cosines = index.tfidf_scores(query) if exact else None
    for rank, hit in enumerate(exact, start=1):
        chunk = index.chunks[hit["chunk_index"]]
        # Exact search has no ranking score: a hit is a match. Its cosine is the chunk's
        # TF-IDF cosine to the query, as in the other two lists.
        hit.update(rank=rank, score=1.0, score_type="exact", cosine=float(cosines[hit["chunk_index"]]),
                   doc_id=chunk.get("doc_id"))

    tfidf_ranks = {r["chunk_index"]: r["rank"] for r in tfidf}
    hybrid_ranks = {r["chunk_index"]: r["rank"] for r in hybrid}
    exact_ranks = {h["chunk_index"]: h["rank"] for h in exact}
    for rows in (tfidf, hybrid):
        for row in rows:
            i = row["chunk_index"]
            row["tfidf_list_rank"] = tfidf_ranks.get(i)
            row["hybrid_list_rank"] = hybrid_ranks.get(i)
            row["exact_list_rank"] = exact_ranks.get(i)
            row["movement"] = movement(row["rank"], tfidf_ranks.get(i))
    for hit in exact:
        hit["tfidf_list_rank"] = tfidf_ranks.get(hit["chunk_index"])
        hit["hybrid_list_rank"] = hybrid_ranks.get(hit["chunk_index"])
    return Comparison(
        query=query, tfidf=tfidf, hybrid=hybrid, exact=exact, reranker=status.name,
        reranker_kind=status.kind, reranker_detail=status.detail, exact_mode=exact_mode,
        exact_error=exact_error, timings_ms={k: round(v, 2) for k, v in timings.items()},
    )


# verify_quote moved to rag_core.citations (graded verdicts); re-exported here so
# ``from rag_core.comparison import verify_quote`` keeps working.
from .citations import CitationCheck, verify_quote  # noqa: E402,F401

QuoteCheck = CitationCheck  # the old name of the result type
