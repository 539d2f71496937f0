"""Run retrieval methods over a BEIR dataset and score them: nDCG@10, MRR@10 and Recall@100.

Every document goes through the same chunking as a PDF's text
(:func:`rag_core.text.chunking.chunk_text`, 1,200 characters with 200 of overlap; the title is
put in front of the text), all chunks go into one :class:`~rag_core.index.build.RagIndex`, and
each method ranks chunks exactly as the product does. A document scores as its best
chunk: documents are ordered by the first (best) of their chunks in the method's chunk
ranking. Where a query id is also a document id (ArguAna), that document is dropped from
the query's ranking, as BEIR does (``ignore_identical_ids``).

Methods (:mod:`rag_core.evaluation.methods`; by default ``tfidf``, ``bm25``, ``dense`` and
``hybrid``): each runs through :func:`rag_core.evaluation.methods.run_method`, as the relevance
lab's do, with the package's :class:`~rag_core.retrieval.search_spec.SearchSpec` (``pool`` and
the cross-encoder as given). ``hybrid_ce`` is skipped with a message when no cross-encoder can
be loaded.

Dense embeddings of a dataset's chunks are cached (:mod:`rag_core.evaluation.cache`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag_core.evaluation.beir import DEFAULT_TITLE_MODE, BeirDataset, document_chunks, load_beir
from rag_core.evaluation.cache import cached_embeddings
from rag_core.evaluation.methods import METHODS, get_method, parse_methods, run_method, why_no_cross_encoder
from rag_core.evaluation.metrics import as_run, compute_metrics, docs_from_chunks
from rag_core.index.products import matvec
from rag_core.retrieval.search_spec import SearchSpec
from rag_core.settings import (
    DEFAULT_CROSS_ENCODER_MODEL,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_LONG_TEXT,
    DEFAULT_POOL,
    EVAL_CHUNK_DEPTH,
    EVAL_CROSS_ENCODER_ENV,
)

DEFAULT_METHODS = ("tfidf", "bm25", "dense", "hybrid")
# Chunks read from each method's chunk ranking to fill ``top_k`` documents.
CHUNK_DEPTH = EVAL_CHUNK_DEPTH

Progress = Callable[[str], None]


@dataclass
class Evaluator:
    """One dataset, its chunks and index, and each method's document rankings.

    ``encoder``: a loaded bi-encoder that embeds the chunks instead of ``embedding_model``'s
    default variant; the methods then embed each query with that same variant of
    ``embedding_model``, as the product's index does.
    """

    dataset: BeirDataset
    title_mode: str = DEFAULT_TITLE_MODE
    long_text: str = DEFAULT_LONG_TEXT
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    with_embeddings: bool = True
    progress: Progress | None = None
    encoder: object | None = None
    encoder_tag: str = ""
    chunks: list[dict] = field(init=False)
    index: object = field(init=False, default=None)
    index_seconds: float = field(init=False, default=0.0)

    def __post_init__(self):
        self.chunks = document_chunks(self.dataset.corpus, title_mode=self.title_mode)
        self.doc_ids = [c["doc_id"] for c in self.chunks]
        self.query_ids = list(self.dataset.queries)
        self._say(f"{self.dataset.name}/{self.dataset.split}: {len(self.dataset.corpus):,} documents, "
                  f"{len(self.chunks):,} chunks, {len(self.query_ids):,} queries")
        from rag_core.index.build import build_index_from_chunks

        embeddings = None
        if self.with_embeddings:
            embeddings = cached_embeddings(
                self.chunks, self.embedding_model, long_text=self.long_text,
                tag=self.encoder_tag, encoder=self.encoder, progress=self.progress,
            )
        started = time.perf_counter()
        self.index = build_index_from_chunks(
            self.chunks, embedding_model=self.embedding_model, compute_embeddings=False,
            embeddings=embeddings, long_text=self.long_text, with_bm25=True,
        )
        if self.encoder is not None:
            from rag_core.models.loading import encoder_variant

            self.index.encoder = encoder_variant(self.encoder)  # queries embedded as the chunks were
        self.index_seconds = time.perf_counter() - started
        self._query_vectors: np.ndarray | None = None

    def _say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)

    # Per-query chunk scores of the first-stage methods (used for tuning too).
    def query_vectors(self) -> np.ndarray:
        if self._query_vectors is None:
            from rag_core.models.loading import load_bi_encoder

            model = self.encoder if self.encoder is not None else load_bi_encoder(self.embedding_model)
            texts = [self.dataset.queries[q] for q in self.query_ids]
            self._query_vectors = np.asarray(
                model.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=True,
                             show_progress_bar=False), dtype=np.float32)
            from rag_core.models.query_head import active_query_head

            head = active_query_head(self.embedding_model)  # as the index embeds queries
            if head is not None:
                self._query_vectors = head.apply(self._query_vectors)
        return self._query_vectors

    def chunk_scores(self, method: str, qi: int) -> np.ndarray:
        query = self.dataset.queries[self.query_ids[qi]]
        if method == "tfidf":
            return self.index.tfidf_scores(query)
        if method == "bm25":
            return self.index.bm25_scores(query)
        if method == "dense":
            if self.index.embeddings is None:
                raise ValueError("this evaluation was set up without embeddings")
            return matvec(self.index.embeddings, self.query_vectors()[qi])
        raise ValueError(f"no first-stage scores for method {method!r}")

    def _docs(self, qi: int, chunk_order: Iterable[int], top_k: int) -> list[str]:
        return docs_from_chunks(chunk_order, self.doc_ids, top_k, exclude=self.query_ids[qi])

    def spec(self, *, cross_encoder_model: str | None = None, pool: int | None = None) -> SearchSpec:
        """The hybrid methods' search: the package's, with this pool and cross-encoder."""
        return SearchSpec(pool=DEFAULT_POOL if pool is None else pool,
                          cross_encoder_model=cross_encoder_model or DEFAULT_CROSS_ENCODER_MODEL)

    def rankings(self, method: str, top_k: int = 100, *, cross_encoder_model: str | None = None,
                 pool: int | None = None) -> dict[str, list[str]]:
        """Each query's documents, best first, as ``method`` ranks them (its first
        ``CHUNK_DEPTH`` chunks, each document at its best chunk)."""
        found = get_method(method)
        if found.uses_vectors and self.index.embeddings is None:
            raise ValueError(f"method {method!r} needs embeddings; this evaluation was set up without them")
        spec = self.spec(cross_encoder_model=cross_encoder_model, pool=pool)
        out: dict[str, list[str]] = {}
        for qi, qid in enumerate(self.query_ids):
            rows = run_method(method, self.dataset.queries[qid], self.index, spec, top=CHUNK_DEPTH)
            out[qid] = self._docs(qi, (r["chunk_index"] for r in rows), top_k)
        return out


def cross_encoder_model_for_eval(model: str | None = None) -> str:
    """``model``, else ``$RAG_CORE_EVAL_CROSS_ENCODER``, else the default cross-encoder."""
    return model or os.environ.get(EVAL_CROSS_ENCODER_ENV) or DEFAULT_CROSS_ENCODER_MODEL


def cross_encoder_unavailable(model: str | None = None) -> str | None:
    """Why no cross-encoder can be loaded for evaluation (``model``, else the eval default), or None."""
    return why_no_cross_encoder(cross_encoder_model_for_eval(model))


def evaluate(
    folder: str | Path,
    methods: Sequence[str] = DEFAULT_METHODS,
    split: str = "test",
    *,
    top_k: int = 100,
    progress: Progress | None = None,
    title_mode: str = DEFAULT_TITLE_MODE,
    long_text: str = DEFAULT_LONG_TEXT,
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    cross_encoder_model: str | None = None,
    pool: int | None = None,
) -> dict[str, dict]:
    """Evaluate ``methods`` on the BEIR folder; method -> {"ndcg@10", "mrr@10",
    "recall@100", "queries", "seconds"} (or {"skipped": why} for a method that cannot run
    here, such as ``hybrid_ce`` without a cross-encoder). ``progress(message)`` is told
    what is happening (embedding can take minutes the first time)."""
    methods = parse_methods(methods)
    dataset = load_beir(folder, split)
    results: dict[str, dict] = {}
    ce_model = cross_encoder_model_for_eval(cross_encoder_model)
    runnable = []
    for method in methods:
        if get_method(method).needs_cross_encoder:
            why = cross_encoder_unavailable(ce_model)
            if why:
                why = f"no cross-encoder: {why}"
                results[method] = {"skipped": why}
                if progress:
                    progress(f"{method} skipped: {why}")
                continue
        runnable.append(method)
    needs_dense = any(get_method(m).uses_vectors for m in runnable)
    evaluator = Evaluator(dataset, title_mode=title_mode, long_text=long_text,
                          embedding_model=embedding_model, with_embeddings=needs_dense, progress=progress)
    for method in runnable:
        if progress:
            progress(f"running {method} on {len(dataset.queries):,} queries")
        started = time.perf_counter()
        ranked = evaluator.rankings(method, top_k, cross_encoder_model=ce_model, pool=pool)
        seconds = time.perf_counter() - started
        metrics = compute_metrics(as_run(ranked), dataset.qrels)
        metrics["seconds"] = round(seconds, 2)
        results[method] = metrics
    ordered = {m: results[m] for m in methods if m in results}
    return ordered


def format_table(results: Mapping[str, Mapping]) -> str:
    """A plain-text table of :func:`evaluate`'s results."""
    header = f"{'method':<12} {'nDCG@10':>8} {'MRR@10':>8} {'R@100':>8} {'queries':>8} {'seconds':>8}"
    lines = [header, "-" * len(header)]
    for method, row in results.items():
        if "skipped" in row:
            lines.append(f"{method:<12} skipped: {row['skipped']}")
            continue
        lines.append(
            f"{method:<12} {row['ndcg@10']:>8.4f} {row['mrr@10']:>8.4f} {row['recall@100']:>8.4f} "
            f"{row['queries']:>8} {row.get('seconds', float('nan')):>8.1f}"
        )
    return "\n".join(lines)


__all__ = [
    "CHUNK_DEPTH",
    "DEFAULT_METHODS",
    "METHODS",
    "Evaluator",
    "cross_encoder_model_for_eval",
    "cross_encoder_unavailable",
    "evaluate",
    "format_table",
]
