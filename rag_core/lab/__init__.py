"""The relevance lab: judgments, the figures of a query set, snapshots and the hybrid optimiser.

No Streamlit here; the app's pages and the CLI call these functions. The lab builds on
:mod:`rag_core.evaluation` (the method registry and the metrics) and describes hybrid search
with :class:`rag_core.retrieval.search_spec.SearchSpec`.

* :mod:`.judgments` — graded judgments keyed by document content and character span, kept
  as the collection's committed, checksummed side data;
* :mod:`.statistics` — bootstrap intervals, paired tests, overlap@k and rank-biased overlap;
* :mod:`.queryset` — a collection's judged queries, every method's list and figures;
  :mod:`.snapshots` — runs kept and compared; :mod:`.optimiser` — a grid with
  leave-one-query-out; :mod:`.transfer` — CSV and BEIR export; :mod:`.importing` — CSV and
  BEIR import, every row validated and every file read within its limits.
"""

from __future__ import annotations

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
    "GRADES", "Judgment", "JudgmentError", "Judgments", "PassageKey", "load_judgments", "make_judgment",
    "passages_of", "set_grade",
]
