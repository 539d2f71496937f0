"""The relevance lab: judgments, per-query metrics, snapshots and the hybrid optimiser.

No Streamlit here; the app's pages and the CLI call these functions.

* :mod:`.config` — :class:`SearchConfig` (the hybrid knobs) and a collection's saved defaults
  (:func:`collection_search_kwargs`, used by every search of the collection);
* :mod:`.judgments` — graded judgments keyed by document content and character span;
* :mod:`.metrics` — nDCG@10, P@5, MRR@10, Recall@10, unjudged share, bootstrap intervals,
  paired tests, overlap@k and rank-biased overlap;
* :mod:`.methods` — every method's list for a query; :mod:`.queryset` — a collection's judged
  queries evaluated; :mod:`.snapshots` — runs kept and compared; :mod:`.optimiser` — a grid
  with leave-one-query-out; :mod:`.transfer` — CSV and BEIR import and export.
"""

from __future__ import annotations

from rag_core.lab.config import (
    DEFAULT_CONFIG,
    SearchConfig,
    SearchConfigError,
    collection_config,
    collection_search_kwargs,
    save_collection_search,
)
from rag_core.lab.judgments import (
    GRADES,
    Judgment,
    JudgmentError,
    Judgments,
    PassageKey,
    load_judgments,
    make_judgment,
    passages_of,
    set_grade,
)

__all__ = [
    "DEFAULT_CONFIG", "GRADES", "Judgment", "JudgmentError", "Judgments", "PassageKey", "SearchConfig",
    "SearchConfigError", "collection_config", "collection_search_kwargs", "load_judgments", "make_judgment",
    "passages_of", "save_collection_search", "set_grade",
]
