"""Every retrieval method, by one name: what it is called, what it needs, and how it runs.

A method is one first-stage list or one hybrid search:

* ``tfidf`` (the contract's TF-IDF cosine; passages sharing no term are not listed), ``bm25``
  (likewise) and ``dense`` (bi-encoder cosine; needs vectors);
* ``hybrid`` (the pool fused as the :class:`~rag_core.retrieval.search_spec.SearchSpec` says,
  no cross-encoder), ``hybrid_mmr`` (the same, then maximal marginal relevance) and
  ``hybrid_ce`` (the pool re-read by the cross-encoder; only where one can be loaded). Their
  other choices (fusion, weights, pool, lexical lists, the cross-encoder) come from the spec
  they are run with.

:func:`run_method` runs each through the functions users search with
(:mod:`rag_core.retrieval.ranking`): BEIR evaluation (:mod:`.runner`), the relevance lab and
the app's Compare page all call it, so a figure is a figure of what users see. Earlier names
(``mmr``, ``cross_encoder``, ``ce``) are accepted where people type method names
(:func:`parse_methods`: ``rag-core eval --methods``) and in saved snapshots (:func:`current_name`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from rag_core.retrieval.ranking import (
    QueryScores,
    cross_encoder_status,
    search_dense,
    search_lexical,
    search_with_spec,
)
from rag_core.retrieval.search_spec import DEFAULT_SPEC, SearchSpec


@dataclass(frozen=True)
class Method:
    """One retrieval method: a first-stage list (``first_stage``) or a hybrid search (``reranker``:
    the spec's reranker it runs with)."""

    name: str
    label: str
    first_stage: str | None = None
    reranker: str | None = None
    needs_vectors: bool = False  # cannot run on an index without dense vectors
    needs_cross_encoder: bool = False  # cannot run where no cross-encoder can be loaded

    @property
    def hybrid(self) -> bool:
        return self.reranker is not None

    @property
    def uses_vectors(self) -> bool:
        """Reads dense vectors when the index has them (a hybrid pool without them is lexical only)."""
        return self.needs_vectors or self.hybrid

    def spec(self, base: SearchSpec = DEFAULT_SPEC) -> SearchSpec | None:
        """The search this method runs with ``base``'s other choices (None for a first-stage list)."""
        if self.reranker is None:
            return None
        return base.with_changes(reranker=self.reranker, mmr_after_cross_encoder=False)


REGISTRY: dict[str, Method] = {m.name: m for m in (
    Method("tfidf", "TF-IDF", first_stage="tfidf"),
    Method("bm25", "BM25", first_stage="bm25"),
    Method("dense", "dense", first_stage="dense", needs_vectors=True),
    Method("hybrid", "hybrid", reranker="none"),
    Method("hybrid_mmr", "hybrid + MMR", reranker="mmr"),
    Method("hybrid_ce", "cross-encoder", reranker="cross_encoder", needs_cross_encoder=True),
)}
METHODS = tuple(REGISTRY)
# Names of earlier versions: `rag-core eval` called MMR "mmr", the lab called the cross-encoder
# "cross_encoder" (and accepted "ce"). Accepted where typed, and in saved snapshots.
EARLIER_NAMES = {"mmr": "hybrid_mmr", "cross_encoder": "hybrid_ce", "ce": "hybrid_ce"}


class MethodUnavailable(ValueError):
    """A method that cannot run here (no dense vectors, no cross-encoder)."""


def current_name(name: str) -> str:
    """``name``, or the method's name now when it is an earlier one."""
    return EARLIER_NAMES.get(name, name)


def method_label(name: str) -> str:
    method = REGISTRY.get(current_name(name))
    return method.label if method is not None else name


def get_method(name: str) -> Method:
    method = REGISTRY.get(name)
    if method is None:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    return method


def parse_methods(methods: str | Sequence[str] | None, *, default: Sequence[str] = METHODS) -> list[str]:
    """Method names from "tfidf,bm25" or a list, earlier names mapped to today's; None: ``default``."""
    if methods is None:
        return list(default)
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    out = [current_name(m) for m in methods]
    unknown = [m for m in out if m not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    if not out:
        raise ValueError(f"no method given; choose from {', '.join(METHODS)}")
    return list(dict.fromkeys(out))


def why_no_cross_encoder(model: str | None) -> str | None:
    """Why no cross-encoder ``model`` can be loaded, or None when it can."""
    status = cross_encoder_status(model or "")
    return None if status.uses_cross_encoder else (status.reason or status.detail)


def unavailable_reason(name: str, index, spec: SearchSpec = DEFAULT_SPEC) -> str | None:
    """Why method ``name`` cannot run on ``index`` here, or None when it can (``index`` None: only
    what does not depend on it is checked)."""
    method = get_method(name)
    if method.needs_vectors and index is not None and index.embeddings is None:
        return "the collection has no dense vectors yet"
    if method.needs_cross_encoder:
        return why_no_cross_encoder(spec.cross_encoder_model)
    return None


def available_methods(index, spec: SearchSpec = DEFAULT_SPEC, methods: Sequence[str] = METHODS) -> list[str]:
    return [m for m in methods if unavailable_reason(m, index, spec) is None]


def method_for_spec(spec: SearchSpec) -> str:
    """The method whose list a search with ``spec`` gives (the app's hybrid list under that spec)."""
    if spec.reranker == "mmr":
        return "hybrid_mmr"
    if spec.reranker == "none":
        return "hybrid"
    if spec.reranker == "cross_encoder":
        return "hybrid_ce"
    return "hybrid_ce" if why_no_cross_encoder(spec.cross_encoder_model) is None else "hybrid"


def run_method(name: str, query: str | QueryScores, index, spec: SearchSpec = DEFAULT_SPEC, *, top: int = 10,
               sources: Collection[str] | None = None, whole_pool: bool = False,
               back_matter: bool = True) -> list[dict]:
    """Method ``name``'s rows for ``query`` (best first, at most ``top``), its hybrid choices from
    ``spec``; ``whole_pool``: a hybrid method returns every pool candidate, in order (the slope chart);
    ``back_matter=False``: no reference lists or other back matter.
    ``query`` may be the :class:`~rag_core.retrieval.ranking.QueryScores` several methods share."""
    method = get_method(name)
    why = unavailable_reason(name, index, spec)
    if why:
        raise MethodUnavailable(f"{method.label} cannot run: {why}.")
    if method.first_stage == "tfidf":
        rows = search_lexical(query, index, top, method="tfidf", sources=sources, back_matter=back_matter)
        return [r for r in rows if r["cosine"] > 0]
    if method.first_stage == "bm25":
        rows = search_lexical(query, index, top, method="bm25", sources=sources, back_matter=back_matter)
        return [r for r in rows if r["score"] > 0]
    if method.first_stage == "dense":
        return search_dense(query, index, top, sources=sources, back_matter=back_matter)
    depth = max(top, 3 * spec.pool) if whole_pool else top
    return search_with_spec(query, index, method.spec(spec), top=depth, sources=sources, back_matter=back_matter)


def run_methods(query: str, index, spec: SearchSpec = DEFAULT_SPEC, *, methods: Sequence[str] | None = None,
                top: int = 10, sources: Collection[str] | None = None,
                back_matter: bool = True) -> dict[str, list[dict]]:
    """Every available method's rows for one query (methods that cannot run are left out)."""
    wanted = parse_methods(methods)
    return {m: run_method(m, query, index, spec, top=top, sources=sources, back_matter=back_matter)
            for m in available_methods(index, spec, wanted)}
