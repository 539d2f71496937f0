"""Ranking metrics, one implementation for BEIR evaluation and the relevance lab.

The same DCG, reciprocal rank, precision, success, recall and unjudged share score

* a BEIR run against its qrels (:func:`per_query_metrics`: a document is relevant with a
  grade above 0; nDCG@10, MRR@10, Recall@100, as BEIR reports them), and
* one ranked list of passages against the lab's graded judgments (:func:`query_metrics`,
  grades 0..3, relevant from 2):

  - ``ndcg@10``: DCG with gain = grade and discount log2(rank + 1), over the ideal DCG of all
    judged grades (trec_eval's ``ndcg_cut_10``; None when no passage has a grade above 0);
  - ``p@5``: share of the top 5 graded relevant, out of 5 (trec_eval's ``P_5``);
  - ``success@5``: 1 when a relevant passage is in the top 5, else 0 (the right passage found);
  - ``mrr@10``: 1 / rank of the first relevant passage in the top 10, else 0;
  - ``recall@10``: share of the judged-relevant passages that are in the top 10 (None when
    none is judged relevant);
  - ``unjudged@10``: share of the top 10 that has no grade. Unjudged passages count as not
    relevant, so every other figure is a lower bound while this is above 0.

The figures agree with ``ir_measures`` (``nDCG@10``, ``RR@10``, ``R@100`` for BEIR;
``nDCG@10``, ``P(rel=2)@5``, ``Success(rel=2)@5``, ``RR(rel=2)@10``, ``R(rel=2)@10``,
``1 - Judged@10`` for the lab): ``tests/evaluation/test_evaluation.py`` and
``tests/lab/test_lab.py`` check it. The lab's statistics over many queries are in
:mod:`rag_core.lab.statistics`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence

Grades = Mapping[Hashable, int | None]

# ---------------------------------------------------------------- one implementation


def _gain(grade: int | None) -> int:
    return grade if grade is not None and grade > 0 else 0


def dcg(ranking: Sequence[Hashable], grades: Grades, k: int) -> float:
    """Discounted cumulative gain of the top ``k``: gain = grade, discount log2(rank + 1)."""
    gains = [_gain(grades.get(p)) for p in ranking[:k]]
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains) if g > 0)


def ideal_dcg(grades: Grades, k: int) -> float:
    """The DCG of the best possible top ``k``: every grade above 0, highest first."""
    ideal = sorted((g for g in grades.values() if _gain(g) > 0), reverse=True)[:k]
    return sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


def ndcg(ranking: Sequence[Hashable], grades: Grades, k: int) -> float | None:
    """DCG over the ideal DCG at ``k``; None when no item has a grade above 0."""
    ideal = ideal_dcg(grades, k)
    return dcg(ranking, grades, k) / ideal if ideal > 0 else None


def relevant_items(grades: Grades, threshold: int) -> set:
    """The items graded ``threshold`` or higher."""
    return {p for p, g in grades.items() if g is not None and g >= threshold}


def reciprocal_rank(ranking: Sequence[Hashable], relevant: set, k: int) -> float:
    """1 / rank of the first relevant item in the top ``k``, else 0."""
    return next((1.0 / (i + 1) for i, p in enumerate(ranking[:k]) if p in relevant), 0.0)


def precision(ranking: Sequence[Hashable], relevant: set, k: int) -> float:
    """Relevant items in the top ``k``, out of ``k``."""
    return sum(1 for p in ranking[:k] if p in relevant) / float(k)


def success(ranking: Sequence[Hashable], relevant: set, k: int) -> float:
    """1 when a relevant item is in the top ``k``, else 0."""
    return 1.0 if relevant.intersection(ranking[:k]) else 0.0


def recall(ranking: Sequence[Hashable], relevant: set, k: int) -> float | None:
    """Share of the relevant items that are in the top ``k``; None when none is relevant."""
    return len(relevant.intersection(ranking[:k])) / len(relevant) if relevant else None


def unjudged_share(ranking: Sequence[Hashable], grades: Grades, k: int) -> float | None:
    """Share of the top ``k`` that has no grade; None for an empty list."""
    top = ranking[:k]
    judged = sum(1 for p in top if p in grades)
    return (len(top) - judged) / len(top) if top else None


# ---------------------------------------------------------------- BEIR: qrels, relevant above 0

BEIR_METRICS = ("ndcg@10", "mrr@10", "recall@100")
BEIR_RELEVANT = 1  # a qrel grade from which a document counts as relevant


def _evaluated(qrels: Mapping[str, Mapping[str, int]]) -> list[str]:
    return [qid for qid, rels in qrels.items() if any(r > 0 for r in rels.values())]


def _ranked(docs: Mapping[str, float] | Sequence[str]) -> list[str]:
    if isinstance(docs, Mapping):
        return [d for d, _ in sorted(docs.items(), key=lambda t: (-t[1], t[0]))]
    return list(docs)


def per_query_metrics(run: Mapping, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, float]]:
    """nDCG@10 (gain = relevance), RR@10 and Recall@100 of each query with a relevant document.

    ``run`` maps query id -> {doc id: score} (higher is better; ties by doc id) or a list
    of doc ids best first. A query missing from ``run`` scores 0 everywhere.
    """
    out = {}
    for qid in _evaluated(qrels):
        rels = qrels[qid]
        ranking = _ranked(run.get(qid, {}))
        relevant = relevant_items(rels, BEIR_RELEVANT)
        out[qid] = {"ndcg@10": ndcg(ranking, rels, 10) or 0.0, "mrr@10": reciprocal_rank(ranking, relevant, 10),
                    "recall@100": recall(ranking, relevant, 100)}
    return out


def compute_metrics(run: Mapping, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """Mean nDCG@10, MRR@10 and Recall@100 over the queries that have a relevant document."""
    per_query = per_query_metrics(run, qrels)
    n = len(per_query)
    means = {m: (sum(v[m] for v in per_query.values()) / n if n else 0.0) for m in BEIR_METRICS}
    means["queries"] = n
    return means


def docs_from_chunks(
    chunk_order: Iterable[int],
    chunk_doc_ids: Sequence[str],
    top_k: int = 100,
    *,
    exclude: str | None = None,
) -> list[str]:
    """Documents in the order of their best chunk; ``exclude`` (the query id) is dropped."""
    seen: dict[str, None] = {}
    for i in chunk_order:
        doc = chunk_doc_ids[int(i)]
        if doc == exclude or doc in seen:
            continue
        seen[doc] = None
        if len(seen) >= top_k:
            break
    return list(seen)


def as_run(rankings: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """Ranked doc lists -> {qid: {doc: score}} with scores that keep the order exactly."""
    return {qid: {d: float(len(docs) - r) for r, d in enumerate(docs)} for qid, docs in rankings.items()}


# ---------------------------------------------------------------- the lab: graded passages, relevant from 2

JUDGED_RELEVANT = 2  # grade from which a passage counts as relevant for P, success, MRR and recall
DEPTH = 10
JUDGED_METRICS = ("ndcg@10", "p@5", "success@5", "mrr@10", "recall@10", "unjudged@10")
METRIC_LABELS = {"ndcg@10": "nDCG@10", "p@5": "P@5", "success@5": "Success@5", "mrr@10": "MRR@10",
                 "recall@10": "Recall@10", "unjudged@10": "unjudged@10", "recall@100": "Recall@100"}
# What each figure means, for a reader who has not met it (the app's help texts).
METRIC_HELP = {
    "ndcg@10": "nDCG@10: how good the top 10 is, using the grades as gains and counting a passage less the lower "
               "it is ranked; 1 = the best passages judged, best first; 0 = none of them in the top 10.",
    "p@5": "P@5 (precision at 5): the share of the top 5 graded relevant (2 or 3).",
    "success@5": "Success@5: 1 when at least one of the top 5 is graded relevant (2 or 3), else 0.",
    "mrr@10": "MRR@10 (reciprocal rank): 1 / the rank of the first relevant passage (1 at rank 1, 0.5 at rank 2, "
              "…), 0 when none is in the top 10.",
    "recall@10": "Recall@10: the share of all passages graded relevant for the question that are in the top 10.",
    "unjudged@10": "unjudged@10: the share of the top 10 not judged yet; while above 0, the other figures are "
                   "lower bounds.",
    "recall@100": "Recall@100: the share of all relevant passages that are in the top 100.",
    "overlap@10": "Overlap@10: the share of the top 10 two lists have in common, whatever the order (1 = the same "
                  "ten passages).",
    "rbo": "Rank-biased overlap (p = 0.9): how much two lists agree, weighting the top ranks most (1 = the same "
           "order, 0 = nothing in common).",
}
LOWER_BOUND_NOTE = ("Unjudged passages count as not relevant, so nDCG, P, MRR and recall are lower bounds "
                    "while a list's unjudged share is above 0: judge its unjudged passages to make them exact.")


def query_metrics(ranking: Sequence[Hashable], grades: Grades) -> dict[str, float | None]:
    """The six figures of one ranked list of passages against graded judgments (module docstring)."""
    ranking = list(dict.fromkeys(ranking))
    relevant = relevant_items(grades, JUDGED_RELEVANT)
    return {
        "ndcg@10": ndcg(ranking, grades, DEPTH),
        "p@5": precision(ranking, relevant, 5),
        "success@5": success(ranking, relevant, 5),
        "mrr@10": reciprocal_rank(ranking, relevant, DEPTH),
        "recall@10": recall(ranking, relevant, DEPTH),
        "unjudged@10": unjudged_share(ranking, grades, DEPTH),
    }


def has_relevant(grades: Grades) -> bool:
    """Whether a query can be scored: at least one passage graded relevant (2 or 3)."""
    return any(g is not None and g >= JUDGED_RELEVANT for g in grades.values())
