"""One call for the side-by-side view: TF-IDF, hybrid and exact lists with cross-ranks, how a
list's rows moved against another list (:func:`movement`, :func:`mark_movement`), and a hybrid list
before and after its last ordering stage (:func:`stage_view`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from rag_core.index.build import RagIndex
from rag_core.retrieval.exact import search_exact
from rag_core.retrieval.ranking import QueryScores, search_lexical, search_with_spec, spec_status
from rag_core.retrieval.search_spec import DEFAULT_SPEC, SearchSpec
from rag_core.settings import COMPARE_THREADS, EXACT_COUNT_LIMIT
from rag_core.text.back_matter import back_matter_mask
from rag_core.text.query import check_query
from rag_core.types import ExactHit, HybridRow, LexicalRow, Movement


@dataclass
class Comparison:
    """The three lists for one query; each row knows its rank in the other lists.

    Rows of ``tfidf`` and ``hybrid`` carry ``tfidf_list_rank``, ``hybrid_list_rank``,
    ``exact_list_rank`` (None when absent) and ``movement`` against the TF-IDF list:
    "up", "down", "same" or "new". Exact rows carry the ranked lists' ranks of their chunk.
    ``exact_total`` counts every place the exact search found (in ``exact_documents``
    documents; ``exact_capped`` when it stopped counting at ``EXACT_COUNT_LIMIT``); ``exact``
    keeps the ``max_exact_hits`` of them with the highest TF-IDF cosine to the query.
    ``lexical_match`` is False when no passage shares a term with the query: hybrid rows are
    then only close in meaning.
    """

    query: str
    tfidf: list[LexicalRow]
    hybrid: list[HybridRow]
    exact: list[ExactHit]
    reranker: str
    reranker_kind: str
    reranker_detail: str
    exact_mode: str
    exact_error: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    exact_total: int = 0
    exact_documents: int = 0
    exact_capped: bool = False
    lexical_match: bool = True

    def to_dict(self) -> dict:
        return {
            "query": self.query, "tfidf": self.tfidf, "hybrid": self.hybrid, "exact": self.exact,
            "reranker": self.reranker, "reranker_kind": self.reranker_kind,
            "reranker_detail": self.reranker_detail, "exact_mode": self.exact_mode,
            "exact_error": self.exact_error, "timings_ms": self.timings_ms,
            "exact_total": self.exact_total, "exact_documents": self.exact_documents,
            "exact_capped": self.exact_capped, "lexical_match": self.lexical_match,
        }


def movement(rank: int, before: int | None) -> Movement:
    """A row's move against its rank in another list (the TF-IDF list, or the same list under
    the search before): "up", "down", "same" or "new"."""
    if before is None:
        return "new"
    if rank < before:
        return "up"
    if rank > before:
        return "down"
    return "same"


def mark_movement(rows: list[dict], previous: Sequence[dict] | None, *, key: str = "chunk_index") -> list[dict]:
    """Give each row ``previous_rank`` and ``movement_vs_previous`` (as :func:`movement` says) against
    ``previous``, the same list under the search before; returns the rows of ``previous`` that fell out."""
    if previous is None:
        for row in rows:
            row["previous_rank"], row["movement_vs_previous"] = None, None
        return []
    before = {r[key]: r["rank"] for r in previous}
    now = {r[key] for r in rows}
    for row in rows:
        row["previous_rank"] = before.get(row[key])
        row["movement_vs_previous"] = movement(row["rank"], row["previous_rank"])
    return [r for r in previous if r[key] not in now]


def first_stage_text(row: dict) -> str:
    """ "tfidf 3 · bm25 1 · dense –": a hybrid row's ranks in the first-stage lists (why it is there)."""
    ranks = row.get("first_stage_ranks") or {}
    if not ranks:
        return ""
    return " · ".join(f"{name} {ranks[name] or '–'}" for name in ("tfidf", "bm25", "dense") if name in ranks)


STAGE_WORDS = {
    "rerank": ("fused order the re-reading stage was handed", "after {name} re-read the pool"),
    "mmr": ("fused order", "after MMR reordered it for variety"),
    "fusion": ("best rank in a first-stage list (TF-IDF, BM25, dense)", "fused order"),
}


@dataclass
class StageView:
    """A hybrid list before and after its last ordering stage, each row's move between the two.

    ``stage``: "rerank" when a re-reading stage (a cross-encoder, or any reranker that reports
    ``pre_rerank_rank``) ordered the pool, "mmr" when MMR reordered the fused list
    (``pre_mmr_rank``), else "fusion": the fused order against the first-stage lists (a row's
    best rank in any of them, ties by how many lists found it). ``rows``: every row of the pool
    with ``before`` and ``after`` (ranks from 1) and ``movement`` ("up", "down", "same")."""

    stage: str
    before_label: str
    after_label: str
    rows: list[dict]

    def before(self) -> list[dict]:
        return sorted(self.rows, key=lambda r: (r["before"], r["after"]))

    def after(self) -> list[dict]:
        return sorted(self.rows, key=lambda r: r["after"])

    def movers(self, n: int, *, top: int | None = None) -> list[dict]:
        """The ``n`` rows that moved most (ties: the better final rank first); ``top``: only rows in
        either top ``top``."""
        rows = [r for r in self.rows if r["before"] != r["after"]
                and (top is None or min(r["before"], r["after"]) <= top)]
        return sorted(rows, key=lambda r: (-abs(r["before"] - r["after"]), r["after"]))[:n]


def stage_view(rows: Sequence[dict]) -> StageView:
    """The hybrid rows (the whole pool, best first) before and after their last ordering stage,
    read from what each row reports about its stages (see :class:`StageView`)."""
    rows = sorted(rows, key=lambda r: r["rank"])
    if any(r.get("pre_rerank_rank") for r in rows):
        stage, key = "rerank", "pre_rerank_rank"
    elif any(r.get("pre_mmr_rank") for r in rows):
        stage, key = "mmr", "pre_mmr_rank"
    else:
        stage, key = "fusion", None
    if key is not None:
        before = {r["chunk_index"]: r.get(key) or len(rows) + 1 for r in rows}
    else:
        def first_stage(row: dict) -> tuple:
            ranks = [v for v in (row.get("first_stage_ranks") or {}).values() if v]
            return (min(ranks), -len(ranks), sum(ranks)) if ranks else (len(rows) + 1, 0, 0)
        order = sorted(rows, key=lambda r: (*first_stage(r), r["rank"]))
        before = {r["chunk_index"]: n for n, r in enumerate(order, start=1)}
    name = next((r.get("reranker") for r in rows if r.get("reranker")), "the reranker")
    before_label, after_label = STAGE_WORDS[stage]
    out = []
    for row in rows:
        b = before[row["chunk_index"]]
        out.append({**row, "before": b, "after": row["rank"], "movement": movement(row["rank"], b)})
    return StageView(stage, before_label, after_label.format(name=name), out)


_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """Threads for the exact search of a comparison (its own: the segment pool's threads may be
    waiting on the ranked lists of the same comparison)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=COMPARE_THREADS, thread_name_prefix="rag-core-compare")
        return _executor


def compare(
    query: str,
    index: RagIndex,
    *,
    top: int = 10,
    spec: SearchSpec = DEFAULT_SPEC,
    exact_mode: str = "normalized",
    exact_query: str | None = None,
    max_exact_hits: int = 10,
    context: int = 200,
    sources: Collection[str] | None = None,
    back_matter: bool = True,
) -> Comparison:
    """Run TF-IDF, hybrid and exact search for one query and cross-reference the lists.

    ``back_matter=False`` leaves reference lists and other back matter out of all three lists
    (:mod:`rag_core.text.back_matter`); a row of back matter has ``back_matter`` (its kind).

    The hybrid list is the search ``spec`` describes (default: the package's, with its
    cross-encoder when one can be loaded; a collection's own is
    :meth:`SearchSpec.for_collection <rag_core.retrieval.search_spec.SearchSpec.for_collection>`).
    The three lists share one :class:`~rag_core.retrieval.ranking.QueryScores`: each first-stage
    score (TF-IDF cosines above all) is computed once for the query, not once per list.
    """
    query = check_query(query)
    scores = QueryScores(index, query)
    timings: dict[str, float] = {}

    def exact_places():  # in another thread, beside the ranked lists (RE2 and NumPy release the GIL)
        t0 = time.perf_counter()
        try:  # every place, to count them; the list keeps those most about the question
            found = search_exact(exact_query or query, index, max_hits=EXACT_COUNT_LIMIT, context=context,
                                 mode=exact_mode, sources=sources, every_match=True, back_matter=back_matter)
            return found, None, time.perf_counter() - t0
        except ValueError as exc:  # an invalid regular expression, say: the other two lists still stand
            return [], str(exc), time.perf_counter() - t0

    exact_job = _pool().submit(exact_places)
    try:
        t0 = time.perf_counter()
        # A passage that shares no term with the query (cosine 0) is no TF-IDF match: not listed.
        tfidf = [r for r in search_lexical(scores, index, top, sources=sources, back_matter=back_matter)
                 if r["cosine"] > 0]
        timings["tfidf"] = (time.perf_counter() - t0) * 1000

        t0 = time.perf_counter()
        hybrid = search_with_spec(scores, index, spec, top=top, sources=sources, back_matter=back_matter)
        timings["hybrid"] = (time.perf_counter() - t0) * 1000
    finally:
        found, exact_error, seconds = exact_job.result()
    status = spec_status(spec)
    if hybrid and hybrid[0].get("reranker_detail") and status.reranker is None:  # the fusion actually used
        status = replace(status, name=hybrid[0]["reranker"], detail=hybrid[0]["reranker_detail"])

    t0 = time.perf_counter()
    back = back_matter_mask(index.chunks) if found and back_matter else None
    if back is not None:
        for hit in found:
            if back[hit["chunk_index"]]:
                hit["back_matter"] = index.chunks[hit["chunk_index"]]["back_matter"]
    for hit in found:
        # Exact search has no ranking score: a hit is a match. Its cosine is the chunk's
        # TF-IDF cosine to the query, as in the other two lists, and orders the list.
        hit.update(score=1.0, score_type="exact", cosine=float(scores.tfidf[hit["chunk_index"]]))
    exact = sorted(found, key=lambda h: (-h["cosine"], h["chunk_index"]))[:max_exact_hits]
    for rank, hit in enumerate(exact, start=1):
        hit["rank"] = rank
        hit["doc_id"] = index.chunks[hit["chunk_index"]].get("doc_id")
    timings["exact"] = (seconds + time.perf_counter() - t0) * 1000

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
        exact_total=len(found), exact_documents=len({h["source"] for h in found}),
        exact_capped=bool(found) and bool(found[-1].get("truncated")),
        lexical_match=bool(tfidf) or any(r.get("tfidf_rank") or r.get("bm25_rank") for r in hybrid),
    )
