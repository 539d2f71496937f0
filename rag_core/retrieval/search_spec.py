"""One value that describes a hybrid search: :class:`SearchSpec`.

A spec names everything that decides a hybrid list: what orders the candidate pool (a
cross-encoder when one can be loaded, a cross-encoder, score fusion then maximal marginal
relevance with its lambda, or score fusion alone), which cross-encoder, how the first-stage
lists are fused (kind, dense weight, RRF ``k``), how many candidates each list gives (the
pool) and which lexical lists feed it. :func:`rag_core.retrieval.ranking.search_with_spec`
runs one; the contract's :func:`rag_core.search` builds one from its keyword arguments. The
app, the command line, the relevance lab and the evaluation all pass one of these.

Three things are called "settings" in this package; a spec is none of them by name:

* :mod:`rag_core.settings` -- the package's tunables (a spec's defaults come from there);
* a collection's settings (``Library.settings(name)``: chunk sizes, and under ``"search"``
  the spec the collection searches with by default: :meth:`SearchSpec.for_collection`,
  :func:`save_collection_spec`);
* the app's *Hybrid search settings* panel, whose knobs are a spec's fields.
"""

from __future__ import annotations

import logging
import math
import numbers
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from rag_core.errors import RagCoreError
from rag_core.retrieval.fusion import FUSIONS
from rag_core.settings import (
    DEFAULT_CROSS_ENCODER_MODEL,
    DEFAULT_FUSION,
    DEFAULT_FUSION_WEIGHTS,
    DEFAULT_POOL,
    DEFAULT_RRF_K,
    DEFAULT_WITH_BM25,
    MMR_LAMBDA,
)

log = logging.getLogger(__name__)

RERANKERS = ("auto", "cross_encoder", "mmr", "none")
RERANKER_LABELS = {
    "auto": "cross-encoder when available, else fusion",
    "cross_encoder": "cross-encoder",
    "mmr": "fusion, then MMR (diversity)",
    "none": "none: fusion only",
}
LEXICAL_POOLS = ("both", "bm25", "tfidf")
LEXICAL_LABELS = {"both": "BM25 + TF-IDF", "bm25": "BM25 only", "tfidf": "TF-IDF only"}
FUSION_LABELS = {"minmax": "min-max score fusion", "zscore": "z-score score fusion", "rrf": "reciprocal rank fusion"}
# The name of each field for people: the app's settings panel and the optimiser's table use these.
FIELD_LABELS = {"reranker": "Reranker", "mmr_lambda": "MMR λ", "fusion": "Fusion", "rrf_k": "RRF k",
                "dense_weight": "Dense weight α", "pool": "Pool size", "lexical": "Lexical lists in the pool"}
COLLECTION_KEY = "search"  # where a collection's default spec lives in its settings
# What a collection keeps as its default (the reranker and the cross-encoder are chosen per search).
SAVED_FIELDS = ("fusion", "dense_weight", "rrf_k", "pool", "lexical")
# The package's lexical lists: the contract's TF-IDF, and BM25 when settings.DEFAULT_WITH_BM25.
DEFAULT_LEXICAL = "both" if DEFAULT_WITH_BM25 else "tfidf"


class SearchSpecError(RagCoreError):
    """A search spec with a value out of its range."""


def _alpha(weights: Mapping[str, float]) -> float:
    lexical, dense = weights.get("bm25", 1.0), weights.get("dense", 1.0)
    return dense / (lexical + dense) if lexical + dense else 0.5


# The dense weight that gives settings.DEFAULT_FUSION_WEIGHTS (BM25 1 : dense 1 -> 0.5).
DEFAULT_DENSE_WEIGHT = _alpha(DEFAULT_FUSION_WEIGHTS)


def _number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))


def _whole(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class SearchSpec:
    """How one hybrid search runs; the defaults are the package's measured ones.

    ``reranker``: "auto" (the cross-encoder ``cross_encoder_model`` when it can be loaded,
    else fusion, and each row's ``reranker_detail`` says why), "cross_encoder" (the same for
    a search; a method that asks for it is not run without one), "mmr" (fusion, then maximal
    marginal relevance with ``mmr_lambda``: lower favours variety) or "none" (fusion only).
    ``cross_encoder_model``: a hub name or local folder; None: none is named, so the pool is
    ordered by fusion.

    ``fusion`` ("minmax", "zscore", "rrf") merges the first-stage lists when no cross-encoder
    orders the pool. ``dense_weight`` is the contract's ``alpha``: the dense list's share of
    the fused score; the lexical list (BM25, or TF-IDF when BM25 is out of the pool) gets
    ``1 - alpha``, scaled so that 0.5 gives the package's 1 : 1. ``fusion_weights`` (per list,
    for the contract's ``search(fusion_weights=...)``) replaces that mapping when given.
    ``rrf_k``: reciprocal rank fusion's ``k``. ``pool``: candidates from each first-stage
    list. ``lexical``: the lexical lists in the pool ("both", "bm25", "tfidf").
    ``mmr_after_cross_encoder``: MMR after the cross-encoder too (the contract's
    ``search(mmr_lambda=...)`` with a cross-encoder; the app does not offer it).
    """

    fusion: str = DEFAULT_FUSION
    dense_weight: float = DEFAULT_DENSE_WEIGHT
    rrf_k: int | float = DEFAULT_RRF_K
    pool: int = DEFAULT_POOL
    lexical: str = DEFAULT_LEXICAL
    reranker: str = "auto"
    mmr_lambda: float = MMR_LAMBDA
    cross_encoder_model: str | None = DEFAULT_CROSS_ENCODER_MODEL
    fusion_weights: tuple[tuple[str, float], ...] | None = None
    mmr_after_cross_encoder: bool = False

    def __post_init__(self):
        problems = []
        if self.reranker not in RERANKERS:
            problems.append(f"the reranker must be one of {', '.join(RERANKERS)} (got {self.reranker!r})")
        model = self.cross_encoder_model
        if model is not None and not isinstance(model, str):
            problems.append(f"the cross-encoder must be a model name or folder, or None (got {model!r})")
        elif isinstance(model, str) and not model.strip():
            object.__setattr__(self, "cross_encoder_model", None)  # "" names none, as None does
        if not _number(self.mmr_lambda) or not 0.0 <= float(self.mmr_lambda) <= 1.0:
            problems.append(f"the MMR lambda must be between 0 and 1 (got {self.mmr_lambda!r})")
        if self.fusion not in FUSIONS:
            problems.append(f"fusion must be one of {', '.join(FUSIONS)} (got {self.fusion!r})")
        if not _number(self.dense_weight) or not 0.0 <= float(self.dense_weight) <= 1.0:
            problems.append(f"the dense weight must be between 0 and 1 (got {self.dense_weight!r})")
        if not _number(self.rrf_k) or float(self.rrf_k) <= 0:
            problems.append(f"RRF k must be a number above 0 (got {self.rrf_k!r})")
        if not _whole(self.pool) or self.pool < 1:
            problems.append(f"the pool must be a whole number of at least 1 (got {self.pool!r})")
        if self.lexical not in LEXICAL_POOLS:
            problems.append(f"lexical must be one of {', '.join(LEXICAL_POOLS)} (got {self.lexical!r}): the pool "
                            "needs a lexical list")
        weights = self.fusion_weights
        if weights is not None:
            pairs = weights.items() if isinstance(weights, Mapping) else weights
            try:
                weights = tuple(sorted((str(k), float(v)) for k, v in pairs))
            except (TypeError, ValueError):
                problems.append("fusion weights must map the lists (tfidf, bm25, dense) to numbers "
                                f"(got {self.fusion_weights!r})")
            else:
                object.__setattr__(self, "fusion_weights", weights)
        if self.mmr_after_cross_encoder and self.reranker not in ("auto", "cross_encoder"):
            problems.append("MMR after the cross-encoder needs the reranker 'auto' or 'cross_encoder'; "
                            "for MMR after fusion choose the reranker 'mmr'")
        if problems:
            raise SearchSpecError("; ".join(problems) + ".")
        if _whole(self.pool):
            object.__setattr__(self, "pool", int(self.pool))
        for name in ("mmr_lambda", "dense_weight"):
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "mmr_after_cross_encoder", bool(self.mmr_after_cross_encoder))

    # ------------------------------------------------------------------ what it asks for
    @property
    def asks_cross_encoder(self) -> str | None:
        """The cross-encoder this search tries first, or None (fusion orders the pool)."""
        return self.cross_encoder_model if self.reranker in ("auto", "cross_encoder") else None

    @property
    def mmr(self) -> float | None:
        """The MMR lambda when the ordered pool is reordered by MMR, else None."""
        return self.mmr_lambda if self.reranker == "mmr" or self.mmr_after_cross_encoder else None

    @property
    def with_tfidf(self) -> bool:
        return self.lexical in ("both", "tfidf")

    @property
    def with_bm25(self) -> bool:
        return self.lexical in ("both", "bm25")

    def weights(self) -> dict[str, float]:
        """Each first-stage list's weight in the fused score."""
        if self.fusion_weights is not None:
            return dict(self.fusion_weights)
        alpha = float(self.dense_weight)
        lexical = 2.0 * (1.0 - alpha)
        if self.lexical == "tfidf":
            return {"tfidf": lexical, "bm25": 0.0, "dense": 2.0 * alpha}
        return {"tfidf": 0.0, "bm25": lexical, "dense": 2.0 * alpha}

    # ------------------------------------------------------------------ conversions
    def with_changes(self, **changes) -> SearchSpec:
        return replace(self, **changes)

    def search_kwargs(self) -> dict:
        """Keyword arguments of the contract's :func:`rag_core.search` (with ``rerank=True``) for this
        spec's pool and fusion: ``pool``, ``fusion``, ``fusion_weights``, ``rrf_k``, ``with_bm25``,
        ``with_tfidf``. What orders the pool is ``search``'s ``cross_encoder_model`` ("" for none)
        and ``mmr_lambda``."""
        return {"pool": self.pool, "fusion": self.fusion, "fusion_weights": self.weights(), "rrf_k": self.rrf_k,
                "with_bm25": self.with_bm25, "with_tfidf": self.with_tfidf}

    def to_dict(self) -> dict:
        """Every field, for snapshots, exports and the app's session (``fusion_weights`` and
        ``mmr_after_cross_encoder`` only when set)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.fusion_weights is None:
            del out["fusion_weights"]
        else:
            out["fusion_weights"] = dict(self.fusion_weights)
        if not self.mmr_after_cross_encoder:
            del out["mmr_after_cross_encoder"]
        return out

    def saved(self) -> dict:
        """The fields a collection keeps as its default."""
        return {key: getattr(self, key) for key in SAVED_FIELDS}

    @classmethod
    def from_dict(cls, raw: Mapping | None, *, strict: bool = True) -> SearchSpec:
        """A spec from a mapping (a snapshot's or a session's; unknown keys ignored, missing ones
        the defaults). ``strict=False`` drops bad values (each logged) instead of raising, for
        what is read back from a store."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in dict(raw or {}).items() if k in known}
        if strict:
            return cls(**values)
        spec = cls()
        for key, value in values.items():
            try:
                spec = replace(spec, **{key: value})
            except SearchSpecError as exc:
                log.warning("ignoring a saved search setting: %s", exc)
        return spec

    @classmethod
    def for_collection(cls, collection_settings: Mapping | None) -> SearchSpec:
        """The spec a collection searches with: its saved default (``Library.settings(name)``),
        else the package's."""
        saved = (collection_settings or {}).get(COLLECTION_KEY)
        if not isinstance(saved, Mapping):
            return DEFAULT_SPEC
        return cls.from_dict({k: saved[k] for k in SAVED_FIELDS if k in saved}, strict=False)

    def describe(self) -> str:
        """One line for people: "min-max score fusion, dense weight 0.50, pool 30, BM25 + TF-IDF"."""
        weights = (f"dense weight {float(self.dense_weight):.2f}" if self.fusion_weights is None else
                   "weights " + ", ".join(f"{k} {v:g}" for k, v in self.fusion_weights))
        parts = [FUSION_LABELS[self.fusion] + (f" (k={self.rrf_k})" if self.fusion == "rrf" else ""),
                 weights, f"pool {self.pool}", LEXICAL_LABELS[self.lexical]]
        return ", ".join(parts)


DEFAULT_SPEC = SearchSpec()


def settings_for_people(values: Mapping) -> dict[str, str]:
    """A spec's saved fields (:data:`SAVED_FIELDS`, as :meth:`SearchSpec.saved` gives them) under the
    names of :data:`FIELD_LABELS`, their values in words ("min-max score fusion", "BM25 + TF-IDF");
    RRF k is "–" unless the fusion is RRF (it changes nothing then)."""
    fusion = values.get("fusion")
    out = {}
    for key in SAVED_FIELDS:
        if key not in values:
            continue
        value = values[key]
        if key == "fusion":
            shown = FUSION_LABELS.get(value, str(value))
        elif key == "lexical":
            shown = LEXICAL_LABELS.get(value, str(value))
        elif key == "rrf_k":
            shown = f"{value:g}" if fusion == "rrf" and _number(value) else "–"
        elif key == "dense_weight" and _number(value):
            shown = f"{float(value):.2f}"
        else:
            shown = str(value)
        out[FIELD_LABELS[key]] = shown
    return out


def saved_collection_spec(collection_settings: Mapping | None) -> dict | None:
    """What the collection saved as its default (with when and why), or None."""
    saved = (collection_settings or {}).get(COLLECTION_KEY)
    return dict(saved) if isinstance(saved, Mapping) else None


def save_collection_spec(store, name: str, spec: SearchSpec | None, *, note: str = "") -> dict:
    """Make ``spec`` the collection's default for every search of it (None: back to the package's).

    ``store``: a :class:`~rag_core.collections.store.CollectionStore` or a
    :class:`~rag_core.collections.library.Library`. Written under the collection's writer
    lock. Returns the collection's settings as saved.
    """
    store = getattr(store, "store", store)
    with store.writing(name):
        settings = dict(store.read_settings(name))
        if spec is None:
            settings.pop(COLLECTION_KEY, None)
        else:
            settings[COLLECTION_KEY] = {**spec.saved(), "saved_at": time.time(), "note": str(note)[:500]}
        store.write_settings(name, settings)
    return settings
