"""Every method's ranked list for a query, with the settings of a :class:`SearchConfig`.

Methods: ``tfidf`` (the contract's TF-IDF cosine; passages sharing no term are not listed),
``bm25``, ``dense`` (bi-encoder cosine), ``hybrid`` (the pool fused as the config says, no
cross-encoder), ``hybrid_mmr`` (the same, then maximal marginal relevance) and
``cross_encoder`` (the pool re-read by the cross-encoder; only when one can be loaded).
Each list comes from the same functions the app and the CLI search with
(:mod:`rag_core.retrieval.ranking`), so a figure here is a figure of what users see.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from rag_core.lab.config import DEFAULT_CONFIG, SearchConfig
from rag_core.retrieval.ranking import cross_encoder_status, search, search_dense, search_lexical
from rag_core.settings import DEFAULT_CROSS_ENCODER_MODEL

METHODS = ("tfidf", "bm25", "dense", "hybrid", "hybrid_mmr", "cross_encoder")
METHOD_LABELS = {"tfidf": "TF-IDF", "bm25": "BM25", "dense": "dense", "hybrid": "hybrid",
                 "hybrid_mmr": "hybrid + MMR", "cross_encoder": "cross-encoder"}
# hybrid methods run on a collection without vectors too (their pool is then lexical only)
NEEDS_EMBEDDINGS = ("dense",)


class MethodUnavailable(ValueError):
    """A method that cannot run here (no embeddings, no cross-encoder)."""


def method_label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


def parse_methods(methods: str | Sequence[str] | None) -> list[str]:
    """Method names from "tfidf,bm25" or a list; None: every method."""
    if methods is None:
        return list(METHODS)
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    aliases = {"mmr": "hybrid_mmr", "hybrid_ce": "cross_encoder", "ce": "cross_encoder"}
    out = [aliases.get(m, m) for m in methods]
    unknown = [m for m in out if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    if not out:
        raise ValueError(f"no method given; choose from {', '.join(METHODS)}")
    return list(dict.fromkeys(out))


def unavailable_reason(method: str, index, cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL) -> str | None:
    """Why ``method`` cannot run on ``index`` here, or None when it can."""
    if method in NEEDS_EMBEDDINGS and index.embeddings is None:
        return "the collection has no dense vectors yet"
    if method == "cross_encoder":
        status = cross_encoder_status(cross_encoder_model)
        if status.reranker is None:
            return status.reason or status.detail
    return None


def available_methods(index, cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL,
                      methods: Sequence[str] = METHODS) -> list[str]:
    return [m for m in methods if unavailable_reason(m, index, cross_encoder_model) is None]


def hybrid_method(config: SearchConfig, cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL) -> str:
    """The method the app's hybrid list shows under ``config.reranker``."""
    if config.reranker == "mmr":
        return "hybrid_mmr"
    if config.reranker == "none":
        return "hybrid"
    has_ce = cross_encoder_status(cross_encoder_model).reranker is not None if cross_encoder_model else False
    if config.reranker == "cross_encoder":
        return "cross_encoder"
    return "cross_encoder" if has_ce else "hybrid"


def run_method(method: str, query: str, index, config: SearchConfig = DEFAULT_CONFIG, *, top: int = 10,
               cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL, sources: Collection[str] | None = None,
               whole_pool: bool = False) -> list[dict]:
    """``method``'s rows for ``query`` (best first, at most ``top``; ``whole_pool``: the hybrid
    methods return every pool candidate, in order, for the slope chart)."""
    why = unavailable_reason(method, index, cross_encoder_model)
    if why:
        raise MethodUnavailable(f"{method_label(method)} cannot run: {why}.")
    if method == "tfidf":
        rows = search_lexical(query, index, top, method="tfidf", sources=sources)
        return [r for r in rows if r["cosine"] > 0]
    if method == "bm25":
        rows = search_lexical(query, index, top, method="bm25", sources=sources)
        return [r for r in rows if r["score"] > 0]
    if method == "dense":
        return search_dense(query, index, top, sources=sources)
    kwargs = config.search_kwargs()
    depth = max(top, 3 * kwargs["pool"]) if whole_pool else top
    if method == "hybrid":
        return search(query, index, top=depth, rerank=True, cross_encoder_model="", sources=sources, **kwargs)
    if method == "hybrid_mmr":
        return search(query, index, top=depth, rerank=True, cross_encoder_model="", sources=sources,
                      mmr_lambda=float(config.mmr_lambda), **kwargs)
    if method == "cross_encoder":
        return search(query, index, top=depth, rerank=True, cross_encoder_model=cross_encoder_model,
                      sources=sources, **kwargs)
    raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")


def run_methods(query: str, index, config: SearchConfig = DEFAULT_CONFIG, *, methods: Sequence[str] | None = None,
                top: int = 10, cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL,
                sources: Collection[str] | None = None) -> dict[str, list[dict]]:
    """Every available method's rows for one query (methods that cannot run are left out)."""
    wanted = parse_methods(methods)
    return {m: run_method(m, query, index, config, top=top, cross_encoder_model=cross_encoder_model,
                          sources=sources)
            for m in available_methods(index, cross_encoder_model, wanted)}


# --------------------------------------------------------------------------- movement


def movement(rank: int, before: int | None) -> str:
    """A row's move against an earlier list: "up", "down", "same" or "new"."""
    if before is None:
        return "new"
    return "up" if rank < before else ("down" if rank > before else "same")


def mark_movement(rows: list[dict], previous: Sequence[dict] | None, *, key: str = "chunk_index") -> list[dict]:
    """Give each row ``previous_rank`` and ``movement_vs_previous`` against ``previous`` (the same
    list under the settings before); returns the rows of ``previous`` that fell out."""
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
    """ "tfidf 3 · bm25 1 · dense –": the row's ranks in the first-stage lists (why it is here)."""
    ranks = row.get("first_stage_ranks") or {}
    if not ranks:
        return ""
    return " · ".join(f"{name} {ranks[name] or '–'}" for name in ("tfidf", "bm25", "dense") if name in ranks)
