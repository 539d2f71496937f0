"""A collection's judged queries, every method's list for each, and the metrics over them.

:func:`evaluate_collection` is what the app's Relevance lab page, ``rag-core eval
--collection`` and snapshots all use, so the three show the same figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rag_core.evaluation.methods import (
    METHODS,
    available_methods,
    method_label,
    parse_methods,
    run_method,
    unavailable_reason,
)
from rag_core.evaluation.metrics import JUDGED_METRICS, METRIC_LABELS, has_relevant, query_metrics
from rag_core.lab.judgments import Judgments, Passages, load_judgments, passages_of, query_id
from rag_core.lab.statistics import Estimate, mean_ci, paired_test
from rag_core.output.render import page_label
from rag_core.retrieval.ranking import QueryScores
from rag_core.retrieval.search_spec import SearchSpec
from rag_core.text.query import check_query

Progress = Callable[[str], None]
BINARY_AND_GRADED = ("ndcg@10", "p@5", "success@5", "mrr@10", "recall@10")


def score_query(ranking: Sequence[str], grades: Mapping[str, int]) -> dict[str, float | None]:
    """The metrics of one list; a query with no passage graded relevant gets None for all but
    ``unjudged@10`` (it cannot be scored yet)."""
    values = query_metrics(ranking, grades)
    if not has_relevant(grades):
        values.update(dict.fromkeys(BINARY_AND_GRADED))
    return values


@dataclass
class QuerySetRun:
    """Every method's top 10 for each judged query, and their metrics."""

    collection: str
    version: str | None
    spec: SearchSpec  # the hybrid methods' choices (kept as "config" in snapshots)
    methods: list[str]
    queries: dict[str, str]  # query id -> text
    rankings: dict[str, dict[str, list[str]]]  # method -> query id -> passage ids, best first
    grades: dict[str, dict[str, int]]  # query id -> passage id -> grade (mapped ones included)
    mapped: dict[str, list[str]]  # query id -> passage ids whose grade was mapped
    per_query: dict[str, dict[str, dict[str, float | None]]]  # method -> query id -> metric -> value
    passages: dict[str, dict] = field(default_factory=dict)  # passage id -> source, page, title
    skipped: dict[str, str] = field(default_factory=dict)  # method -> why it did not run
    created: float = field(default_factory=time.time)
    seconds: float = 0.0

    @property
    def scored_queries(self) -> list[str]:
        return [q for q in self.queries if has_relevant(self.grades.get(q, {}))]

    def estimate(self, method: str, metric: str) -> Estimate:
        values = self.per_query.get(method, {})
        return mean_ci([values[q][metric] for q in self.queries if q in values])

    def summary(self) -> dict[str, dict[str, Estimate]]:
        return {m: {metric: self.estimate(m, metric) for metric in JUDGED_METRICS} for m in self.methods}

    def compare(self, a: str, b: str, metric: str = "ndcg@10"):
        """The paired test of method ``a`` against ``b`` over the scored queries."""
        values_a = {q: v[metric] for q, v in self.per_query.get(a, {}).items()}
        values_b = {q: v[metric] for q, v in self.per_query.get(b, {}).items()}
        return paired_test(values_a, values_b, names=(method_label(a), method_label(b)), metric=metric)

    def to_dict(self) -> dict:
        return {
            "collection": self.collection, "version": self.version, "config": self.spec.to_dict(),
            "methods": self.methods, "queries": self.queries, "rankings": self.rankings, "grades": self.grades,
            "mapped": self.mapped, "per_query": self.per_query, "passages": self.passages,
            "skipped": self.skipped, "created": self.created, "seconds": round(self.seconds, 3),
            "summary": {m: {k: e.to_dict() for k, e in row.items()} for m, row in self.summary().items()},
        }


def evaluate_judged(
    index,
    documents: Sequence[Mapping],
    judgments: Judgments,
    *,
    collection: str = "",
    version: str | None = None,
    spec: SearchSpec | None = None,
    methods: str | Sequence[str] | None = None,
    queries: Sequence[str] | None = None,
    progress: Progress | None = None,
    titles: Mapping[str, str] | None = None,
) -> QuerySetRun:
    """Run ``methods`` (default: every one that can run) for each judged query of ``index``; the
    hybrid methods with ``spec``'s choices (default: the package's)."""
    started = time.perf_counter()
    spec = spec or SearchSpec()
    wanted = parse_methods(methods)
    skipped = {m: why for m in wanted if (why := unavailable_reason(m, index, spec))}
    runnable = available_methods(index, spec, wanted)
    passages: Passages = passages_of(index, documents)
    texts = list(queries) if queries is not None else judgments.queries()
    qids = {query_id(q): q for q in texts}
    rankings: dict[str, dict[str, list[str]]] = {m: {} for m in runnable}
    per_query: dict[str, dict[str, dict]] = {m: {} for m in runnable}
    grades_by_q: dict[str, dict[str, int]] = {}
    mapped: dict[str, list[str]] = {}
    info: dict[str, dict] = {}
    for n, (qid, text) in enumerate(qids.items(), start=1):
        if progress:
            progress(f"query {n}/{len(qids)}: {text[:60]}")
        graded = judgments.grades(text, passages)
        grades = {passages.keys[i].id: g.grade for i, g in graded.items()}
        grades_by_q[qid] = grades
        mapped[qid] = sorted(passages.keys[i].id for i, g in graded.items() if g.mapped)
        scores = QueryScores(index, check_query(text))  # every method's first stage computed once
        for method in runnable:
            rows = run_method(method, scores, index, spec, top=10)
            ids = []
            for row in rows:
                pid = passages.keys[row["chunk_index"]].id
                ids.append(pid)
                if pid not in info:
                    info[pid] = {"source": row["source"], "page": page_label(row), "doc_id": row.get("doc_id"),
                                 "title": (titles or {}).get(row.get("doc_id") or "", "")}
            rankings[method][qid] = ids
            per_query[method][qid] = score_query(ids, grades)
    return QuerySetRun(collection, version, spec, runnable, qids, rankings, grades_by_q, mapped, per_query,
                       info, skipped, seconds=time.perf_counter() - started)


def evaluate_collection(
    library,
    name: str,
    *,
    spec: SearchSpec | None = None,
    methods: str | Sequence[str] | None = None,
    progress: Progress | None = None,
    index=None,
) -> QuerySetRun:
    """Evaluate the collection's own judgments (``spec``: default the spec the collection searches
    with). ``library``: a :class:`~rag_core.collections.library.Library`."""
    from rag_core.output.render import short_title

    if index is None:
        index = library.load_index(name)
    if index is None:
        raise ValueError(f"Collection {name!r} has no documents yet; add PDFs before evaluating it.")
    judgments = load_judgments(library, name)
    if not len(judgments):
        raise ValueError(f"Collection {name!r} has no judgments yet: judge passages in the app, or import them "
                         "with `rag-core judgments import`.")
    documents = library.documents(name)
    titles = {d["doc_id"]: short_title(d) for d in documents}
    spec = spec or SearchSpec.for_collection(library.settings(name))
    return evaluate_judged(index, documents, judgments, collection=name, version=library.version(name),
                           spec=spec, methods=methods, progress=progress, titles=titles)


def format_summary(run: QuerySetRun) -> str:
    """A plain-text table of the means (95% bootstrap intervals for nDCG@10)."""
    lines = [f"collection {run.collection!r}: {len(run.queries)} judged queries, {len(run.scored_queries)} with a "
             f"relevant passage (grade 2 or 3); hybrid settings: {run.spec.describe()}"]
    header = (f"{'method':<14} {'nDCG@10 [95% CI]':>24} {'P@5':>7} {'S@5':>7} {'MRR@10':>7} {'R@10':>7} "
              f"{'unjudged':>9} {'queries':>8}")
    lines += [header, "-" * len(header)]
    for method, row in run.summary().items():
        lines.append(f"{method_label(method):<14} {row['ndcg@10'].text():>24} {_num(row['p@5'].mean):>7} "
                     f"{_num(row['success@5'].mean):>7} {_num(row['mrr@10'].mean):>7} {_num(row['recall@10'].mean):>7} "
                     f"{_num(row['unjudged@10'].mean):>9} {row['ndcg@10'].n:>8}")
    for method, why in run.skipped.items():
        lines.append(f"{method_label(method):<14} skipped: {why}")
    lines.append("Unjudged passages count as not relevant: while 'unjudged' is above 0 the figures are lower bounds.")
    return "\n".join(lines)


def summary_json(run: QuerySetRun) -> dict:
    """Means (with intervals) per method, the per-query values and what was skipped."""
    return {
        "collection": run.collection, "version": run.version, "config": run.spec.to_dict(),
        "queries": len(run.queries), "scored_queries": len(run.scored_queries),
        "methods": {m: {metric: e.to_dict() for metric, e in row.items()} for m, row in run.summary().items()},
        "per_query": {m: {run.queries[q]: v for q, v in rows.items()} for m, rows in run.per_query.items()},
        "skipped": run.skipped,
    }


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


__all__ = ["JUDGED_METRICS", "METHODS", "METRIC_LABELS", "QuerySetRun", "evaluate_collection", "evaluate_judged",
           "format_summary", "score_query", "summary_json"]
