"""Hybrid-search settings as one value: the lab's knobs and a collection's saved defaults.

A :class:`SearchConfig` names the choices hybrid search offers (fusion kind, lexical vs dense
weight, RRF ``k``, pool size, which lexical lists feed the pool, reranker, MMR lambda) and
turns them into keyword arguments of :func:`rag_core.retrieval.ranking.search`. A collection may keep
its own defaults in its settings (``settings["search"]``, written by
:func:`save_collection_search`); :func:`collection_search_kwargs` is what the app, the CLI's
``search`` and ``eval --collection`` all call, so every search of that collection uses them.

Import-light on purpose (no numpy, no models): the CLI reads it before every search.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace

from rag_core.errors import RagCoreError
from rag_core.retrieval.fusion import DEFAULT_FUSION, DEFAULT_FUSION_WEIGHTS, DEFAULT_RRF_K, FUSIONS
from rag_core.settings import DEFAULT_POOL

log = logging.getLogger(__name__)

SETTINGS_KEY = "search"  # where a collection's saved defaults live in its settings
LEXICAL_POOLS = ("both", "bm25", "tfidf")
LEXICAL_LABELS = {"both": "BM25 + TF-IDF", "bm25": "BM25 only", "tfidf": "TF-IDF only"}
RERANKERS = ("auto", "cross_encoder", "mmr", "none")
RERANKER_LABELS = {
    "auto": "cross-encoder when available, else fusion",
    "cross_encoder": "cross-encoder",
    "mmr": "fusion, then MMR (diversity)",
    "none": "none: fusion only",
}
FUSION_LABELS = {"minmax": "min-max score fusion", "zscore": "z-score score fusion", "rrf": "reciprocal rank fusion"}
MAX_POOL = 1000
DEFAULT_MMR_LAMBDA = 0.7
# The saved fields (the reranker is a per-search choice; a collection keeps what fusion does).
SAVED_FIELDS = ("fusion", "dense_weight", "rrf_k", "pool", "lexical")


class SearchConfigError(RagCoreError):
    """A search setting out of its range."""


def _default_dense_weight() -> float:
    lexical, dense = DEFAULT_FUSION_WEIGHTS.get("bm25", 1.0), DEFAULT_FUSION_WEIGHTS.get("dense", 1.0)
    return dense / (lexical + dense) if lexical + dense else 0.5


@dataclass(frozen=True)
class SearchConfig:
    """The hybrid-search choices; the defaults are the package's measured ones.

    ``dense_weight`` is the contract's ``alpha``: the dense list's share of the fused score,
    the lexical list (BM25, or TF-IDF when BM25 is out of the pool) gets ``1 - alpha``.
    Weights are scaled so that 0.5 gives the package's 1 : 1.
    """

    fusion: str = DEFAULT_FUSION
    dense_weight: float = _default_dense_weight()
    rrf_k: int = DEFAULT_RRF_K
    pool: int = DEFAULT_POOL
    lexical: str = "both"
    reranker: str = "auto"
    mmr_lambda: float = DEFAULT_MMR_LAMBDA

    def __post_init__(self):
        problems = []
        if self.fusion not in FUSIONS:
            problems.append(f"fusion must be one of {', '.join(FUSIONS)} (got {self.fusion!r})")
        if not isinstance(self.dense_weight, (int, float)) or not 0.0 <= float(self.dense_weight) <= 1.0:
            problems.append(f"the dense weight must be between 0 and 1 (got {self.dense_weight!r})")
        if isinstance(self.rrf_k, bool) or not isinstance(self.rrf_k, int) or not 1 <= self.rrf_k <= 10_000:
            problems.append(f"RRF k must be a whole number from 1 to 10000 (got {self.rrf_k!r})")
        if isinstance(self.pool, bool) or not isinstance(self.pool, int) or not 1 <= self.pool <= MAX_POOL:
            problems.append(f"the pool must be a whole number from 1 to {MAX_POOL} (got {self.pool!r})")
        if self.lexical not in LEXICAL_POOLS:
            problems.append(f"lexical must be one of {', '.join(LEXICAL_POOLS)} (got {self.lexical!r})")
        if self.reranker not in RERANKERS:
            problems.append(f"reranker must be one of {', '.join(RERANKERS)} (got {self.reranker!r})")
        if not isinstance(self.mmr_lambda, (int, float)) or not 0.0 <= float(self.mmr_lambda) <= 1.0:
            problems.append(f"the MMR lambda must be between 0 and 1 (got {self.mmr_lambda!r})")
        if problems:
            raise SearchConfigError("; ".join(problems) + ".")

    # ------------------------------------------------------------------ conversions
    def fusion_weights(self) -> dict[str, float]:
        alpha = float(self.dense_weight)
        lexical = 2.0 * (1.0 - alpha)
        if self.lexical == "tfidf":
            return {"tfidf": lexical, "bm25": 0.0, "dense": 2.0 * alpha}
        return {"tfidf": 0.0, "bm25": lexical, "dense": 2.0 * alpha}

    def search_kwargs(self) -> dict:
        """Keyword arguments of :func:`rag_core.retrieval.ranking.search` for the fused hybrid list
        (``pool``, ``fusion``, ``fusion_weights``, ``rrf_k``, ``with_bm25``, ``with_tfidf``)."""
        return {
            "pool": int(self.pool),
            "fusion": self.fusion,
            "fusion_weights": self.fusion_weights(),
            "rrf_k": int(self.rrf_k),
            "with_bm25": self.lexical in ("both", "bm25"),
            "with_tfidf": self.lexical in ("both", "tfidf"),
        }

    def saved(self) -> dict:
        """The fields a collection keeps as its defaults."""
        return {key: getattr(self, key) for key in SAVED_FIELDS}

    def to_dict(self) -> dict:
        return asdict(self)

    def with_changes(self, **changes) -> SearchConfig:
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, raw: Mapping | None, *, strict: bool = True) -> SearchConfig:
        """A config from a mapping (unknown keys ignored). ``strict=False`` drops bad values
        (each logged) instead of raising, for settings read back from a store."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in dict(raw or {}).items() if k in known}
        if isinstance(values.get("dense_weight"), int) and not isinstance(values["dense_weight"], bool):
            values["dense_weight"] = float(values["dense_weight"])
        if strict:
            return cls(**values)
        config = cls()
        for key, value in values.items():
            try:
                config = replace(config, **{key: value})
            except SearchConfigError as exc:
                log.warning("ignoring a saved search setting: %s", exc)
        return config

    def describe(self) -> str:
        """One line for people: "min-max score fusion, dense weight 0.50, pool 30, BM25 + TF-IDF"."""
        parts = [FUSION_LABELS[self.fusion] + (f" (k={self.rrf_k})" if self.fusion == "rrf" else ""),
                 f"dense weight {float(self.dense_weight):.2f}", f"pool {self.pool}", LEXICAL_LABELS[self.lexical]]
        return ", ".join(parts)


DEFAULT_CONFIG = SearchConfig()


def collection_config(settings: Mapping | None) -> SearchConfig:
    """The collection's saved search defaults (the package defaults where it saved none)."""
    saved = (settings or {}).get(SETTINGS_KEY)
    if not isinstance(saved, Mapping):
        return DEFAULT_CONFIG
    return SearchConfig.from_dict({k: saved[k] for k in SAVED_FIELDS if k in saved}, strict=False)


def collection_search_kwargs(settings: Mapping | None) -> dict:
    """Keyword arguments of :func:`rag_core.retrieval.ranking.search` from a collection's settings
    (``Library.settings(name)``): its saved defaults, else the package's."""
    return collection_config(settings).search_kwargs()


def saved_search(settings: Mapping | None) -> dict | None:
    """What the collection saved (with when and why), or None."""
    saved = (settings or {}).get(SETTINGS_KEY)
    return dict(saved) if isinstance(saved, Mapping) else None


def save_collection_search(store, name: str, config: SearchConfig | None, *, note: str = "") -> dict:
    """Make ``config`` the collection's default for every search (None: back to the package's).

    ``store``: a :class:`~rag_core.collections.store.CollectionStore` or a
    :class:`~rag_core.collections.library.Library`.
    Written under the collection's writer lock. Returns the settings as saved.
    """
    store = getattr(store, "store", store)
    with store.writing(name):
        settings = dict(store.read_settings(name))
        if config is None:
            settings.pop(SETTINGS_KEY, None)
        else:
            settings[SETTINGS_KEY] = {**config.saved(), "saved_at": time.time(), "note": str(note)[:500]}
        store.write_settings(name, settings)
    return settings
