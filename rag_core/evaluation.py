"""Retrieval quality on BEIR-format datasets: nDCG@10, MRR@10 and Recall@100.

A BEIR folder holds ``corpus.jsonl`` (or ``corpus.jsonl.gz``), ``queries.jsonl`` and
``qrels/<split>.tsv``. Every document goes through the same chunking as a PDF's text
(:func:`rag_core.chunking.chunk_text`, 1,200 characters with 200 of overlap; the title
is put in front of the text), all chunks go into one :class:`~rag_core.index.RagIndex`,
and each method ranks chunks exactly as the product does. A document scores as its best
chunk: documents are ordered by the first (best) of their chunks in the method's chunk
ranking. Where a query id is also a document id (ArguAna), that document is dropped
from the query's ranking, as BEIR does (``ignore_identical_ids``).

Methods: ``tfidf``, ``bm25``, ``dense``, ``hybrid`` (``rag_core.retrieval.search`` with
``rerank=True`` and no cross-encoder: the fusion path, i.e. what the app does when no
cross-encoder can be loaded), ``hybrid_ce`` (the same pool read by the cross-encoder;
skipped with a message when none can be loaded) and ``mmr`` (maximal marginal relevance,
:class:`~rag_core.rerankers.DiversityReranker`, over the hybrid list).

Dense embeddings of a dataset's chunks are cached under ``~/.cache/rag_core/eval/``
(or ``$RAG_CORE_EVAL_CACHE``), keyed by a hash of the chunk texts, the model and the
long-text mode, stored with ``np.save(allow_pickle=False)``.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .chunking import chunk_text
from .dense import DEFAULT_LONG_TEXT, LONG_TEXT_STRATEGIES
from .settings import CHUNK_OVERLAP_CHARS, CHUNK_SIZE_CHARS, DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_EMBEDDING_MODEL

METHODS = ("tfidf", "bm25", "dense", "hybrid", "hybrid_ce", "mmr")
DEFAULT_METHODS = ("tfidf", "bm25", "dense", "hybrid")
METRICS = ("ndcg@10", "mrr@10", "recall@100")
TITLE_MODES = ("prefix", "every_chunk", "none")
DEFAULT_TITLE_MODE = "prefix"
# Chunks read from each method's chunk ranking to fill ``top_k`` documents.
CHUNK_DEPTH = 1000
CACHE_ENV = "RAG_CORE_EVAL_CACHE"
CROSS_ENCODER_ENV = "RAG_CORE_EVAL_CROSS_ENCODER"
MMR_LAMBDA = 0.7

Progress = Callable[[str], None]


# --------------------------------------------------------------------------- data


@dataclass
class BeirDataset:
    """A BEIR dataset: ``corpus`` id -> {"title", "text"}, ``queries`` id -> text (only
    the queries judged in ``qrels``), ``qrels`` query id -> {doc id: relevance}."""

    corpus: dict[str, dict]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    name: str = ""
    split: str = "test"
    folder: Path | None = None


def _open_text(path: Path):
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _read_jsonl(path: Path) -> Iterable[dict]:
    with _open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {number} is not valid JSON ({exc.msg})") from None


def _find(folder: Path, names: Sequence[str], what: str) -> Path:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(
        f"{folder} is not a complete BEIR folder: no {what} (looked for {', '.join(names)})."
    )


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """``query-id<TAB>corpus-id<TAB>score`` lines (a header line and CRLF endings are fine)."""
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            row = [cell.strip() for cell in row]
            if not row or not any(row):
                continue
            if len(row) == 4:  # TREC format: qid 0 docid rel
                row = [row[0], row[2], row[3]]
            if len(row) != 3:
                raise ValueError(f"{path}: line {number} has {len(row)} columns, expected 3 (query-id, corpus-id, score)")
            try:
                score = int(float(row[2]))
            except ValueError:
                if number == 1:  # the header line
                    continue
                raise ValueError(f"{path}: line {number}: score {row[2]!r} is not a number") from None
            qrels.setdefault(row[0], {})[row[1]] = score
    return qrels


def load_beir(folder: str | Path, split: str = "test") -> BeirDataset:
    """Read a BEIR folder; only queries judged in ``qrels/<split>.tsv`` are kept."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"BEIR dataset folder {folder} does not exist.")
    corpus_path = _find(folder, ("corpus.jsonl", "corpus.jsonl.gz"), "corpus")
    queries_path = _find(folder, ("queries.jsonl", "queries.jsonl.gz"), "queries file")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (folder / "qrels").glob("*.tsv")) if (folder / "qrels").is_dir() else []
        raise FileNotFoundError(
            f"{folder}: no qrels for split {split!r} ({qrels_path} is missing; "
            f"splits present: {', '.join(available) or 'none'})."
        )
    corpus = {
        str(doc["_id"]): {"title": doc.get("title") or "", "text": doc.get("text") or ""}
        for doc in _read_jsonl(corpus_path)
    }
    all_queries = {str(q["_id"]): q.get("text") or "" for q in _read_jsonl(queries_path)}
    qrels = read_qrels(qrels_path)
    queries = {qid: all_queries[qid] for qid in qrels if qid in all_queries}
    qrels = {qid: rels for qid, rels in qrels.items() if qid in queries}
    if not queries:
        raise ValueError(f"{folder}: none of the {split} qrels' query ids is in {queries_path.name}.")
    return BeirDataset(corpus, queries, qrels, name=folder.name, split=split, folder=folder)


def document_chunks(
    corpus: Mapping[str, dict],
    *,
    title_mode: str = DEFAULT_TITLE_MODE,
    chunk_size: int = CHUNK_SIZE_CHARS,
    overlap: int = CHUNK_OVERLAP_CHARS,
) -> list[dict]:
    """Chunks of every document, as for a PDF's text; each chunk knows its ``doc_id``.

    ``title_mode``: ``prefix`` (``title. text``, then chunking), ``every_chunk`` (the
    text is chunked, the title put in front of each chunk) or ``none``.
    """
    if title_mode not in TITLE_MODES:
        raise ValueError(f"title_mode must be one of {TITLE_MODES}, got {title_mode!r}")
    chunks: list[dict] = []
    for doc_id, doc in corpus.items():
        title = (doc.get("title") or "").strip()
        text = doc.get("text") or ""
        if title_mode == "prefix" and title:
            sep = " " if title[-1] in ".?!:" else ". "
            pieces = chunk_text(title + sep + text, doc_id, chunk_size, overlap)
        else:
            pieces = chunk_text(text, doc_id, chunk_size, overlap)
            if title_mode == "every_chunk" and title:
                sep = " " if title[-1] in ".?!:" else ". "
                for piece in pieces:
                    piece["text"] = title + sep + piece["text"]
            if not pieces and title:
                pieces = chunk_text(title, doc_id, chunk_size, overlap)
        for piece in pieces:
            piece["doc_id"] = doc_id
        chunks.extend(pieces)
    return chunks


# ------------------------------------------------------------------------ metrics


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
        gains = [rels.get(d, 0) for d in ranking[:10]]
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains) if g > 0)
        ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        rr = next((1.0 / (i + 1) for i, g in enumerate(gains) if g > 0), 0.0)
        relevant = {d for d, r in rels.items() if r > 0}
        recall = len(relevant.intersection(ranking[:100])) / len(relevant)
        out[qid] = {"ndcg@10": dcg / idcg if idcg else 0.0, "mrr@10": rr, "recall@100": recall}
    return out


def compute_metrics(run: Mapping, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """Mean nDCG@10, MRR@10 and Recall@100 over the queries that have a relevant document."""
    per_query = per_query_metrics(run, qrels)
    n = len(per_query)
    means = {m: (sum(v[m] for v in per_query.values()) / n if n else 0.0) for m in METRICS}
    means["queries"] = n
    return means


# ----------------------------------------------------------------------- rankings


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


def _cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "rag_core" / "eval"


def _chunks_hash(chunks: Sequence[dict]) -> str:
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk["text"].encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


def cached_embeddings(
    chunks: Sequence[dict],
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    *,
    long_text: str = DEFAULT_LONG_TEXT,
    tag: str = "",
    encoder=None,
    progress: Progress | None = None,
) -> np.ndarray:
    """Embeddings of the chunks, computed once and then read from the eval cache.

    ``encoder``: a bi-encoder object to use instead of loading ``embedding_model`` (give
    it a distinct ``tag``, e.g. "int8", so its vectors are cached apart).
    """
    if long_text not in LONG_TEXT_STRATEGIES:
        raise ValueError(f"long_text must be one of {LONG_TEXT_STRATEGIES}, got {long_text!r}")
    from .models import encoder_variant, load_bi_encoder, planned_encoder

    def cache_path(variant: str, mode: str = long_text) -> Path:
        # Vectors of different encoder variants (torch fp32, ONNX int8, ...) never share a file;
        # torch keeps the key it had before variants existed.
        full_tag = "|".join(part for part in (tag, "" if variant == "torch" else variant) if part)
        key = hashlib.sha256(f"{_chunks_hash(chunks)}|{embedding_model}|{mode}|{full_tag}".encode()).hexdigest()[:24]
        return _cache_dir() / f"emb-{key}.npy"

    def cached(path: Path) -> np.ndarray | None:
        if path.is_file():
            vectors = np.load(path, allow_pickle=False)
            if vectors.shape[0] == len(chunks):
                return vectors
        return None

    planned = encoder_variant(encoder) if encoder is not None else planned_encoder()
    vectors = cached(cache_path(planned))
    if vectors is not None:
        return vectors
    from .dense import encode_passages

    model = encoder if encoder is not None else load_bi_encoder(embedding_model)
    variant = encoder_variant(model)
    path = cache_path(variant)
    if variant != planned:  # the planned encoder fell back to another one
        vectors = cached(path)
        if vectors is not None:
            return vectors
    started = time.perf_counter()

    def report(done: int, total: int) -> None:
        if progress is not None:
            rate = done / max(time.perf_counter() - started, 1e-9)
            progress(f"embedding chunks ({variant}): {done:,}/{total:,} ({rate:.0f} chunks/s)")

    texts = [c["text"] for c in chunks]
    # "windows" and "truncate" differ only for chunks longer than the model's window:
    # when the other mode is cached, encode just those.
    other = "truncate" if long_text == "windows" else "windows"
    other_path = cache_path(variant, other)
    tokenizer = getattr(model, "tokenizer", None)
    if other_path.is_file() and tokenizer is not None:
        from .dense import _token_limit

        vectors = np.load(other_path, allow_pickle=False).copy()
        limit = _token_limit(model)
        lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]]
        long_idx = [i for i, n in enumerate(lengths) if n > limit]
        if progress is not None:
            progress(f"reusing {other} embeddings; re-encoding the {len(long_idx):,} chunks over {limit} word pieces")
        if long_idx:
            vectors[long_idx] = encode_passages(model, [texts[i] for i in long_idx], long_text=long_text,
                                                progress=report)
    else:
        vectors = encode_passages(model, texts, long_text=long_text, progress=report)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors, allow_pickle=False)
    os.replace(tmp, path)
    return vectors


@dataclass
class Evaluator:
    """One dataset, its chunks and index, and each method's document rankings."""

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
        from .index import build_index_from_chunks

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
        self.index_seconds = time.perf_counter() - started
        self._query_vectors: np.ndarray | None = None

    def _say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)

    # Per-query chunk scores of the first-stage methods (used for tuning too).
    def query_vectors(self) -> np.ndarray:
        if self._query_vectors is None:
            from .models import load_bi_encoder

            model = self.encoder if self.encoder is not None else load_bi_encoder(self.embedding_model)
            texts = [self.dataset.queries[q] for q in self.query_ids]
            self._query_vectors = np.asarray(
                model.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=True,
                             show_progress_bar=False), dtype=np.float32)
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
            return self.index.embeddings @ self.query_vectors()[qi]
        raise ValueError(f"no first-stage scores for method {method!r}")

    def _docs(self, qi: int, chunk_order: Iterable[int], top_k: int) -> list[str]:
        return docs_from_chunks(chunk_order, self.doc_ids, top_k, exclude=self.query_ids[qi])

    def rankings(self, method: str, top_k: int = 100, *, cross_encoder_model: str | None = None,
                 pool: int | None = None) -> dict[str, list[str]]:
        """Each query's documents, best first, as ``method`` ranks them."""
        from .lexical import top_k as best
        from .retrieval import search
        from .settings import DEFAULT_POOL

        pool = DEFAULT_POOL if pool is None else pool
        out: dict[str, list[str]] = {}
        if method in ("tfidf", "bm25", "dense"):
            for qi, qid in enumerate(self.query_ids):
                scores = self.chunk_scores(method, qi)
                order = best(scores, CHUNK_DEPTH, positive_only=(method != "dense"))
                out[qid] = self._docs(qi, order, top_k)
            return out
        if method in ("hybrid", "hybrid_ce", "mmr"):
            if self.index.embeddings is None:
                raise ValueError(f"method {method!r} needs embeddings")
            ce = (cross_encoder_model or DEFAULT_CROSS_ENCODER_MODEL) if method == "hybrid_ce" else ""
            reranker = None
            if method == "mmr":
                from .rerankers import DiversityReranker

                reranker = DiversityReranker(MMR_LAMBDA)
            for qi, qid in enumerate(self.query_ids):
                rows = search(self.dataset.queries[qid], self.index, top=CHUNK_DEPTH, rerank=True,
                              pool=pool, cross_encoder_model=ce)
                if reranker is not None and rows:
                    for row in rows:
                        row["embedding"] = self.index.embeddings[row["chunk_index"]]
                    rows = reranker.rerank(self.dataset.queries[qid], rows)
                out[qid] = self._docs(qi, (r["chunk_index"] for r in rows), top_k)
            return out
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")


def cross_encoder_unavailable(model: str | None = None) -> str | None:
    """Why no cross-encoder can be loaded, or None when one can."""
    from .retrieval import cross_encoder_status

    status = cross_encoder_status(model or os.environ.get(CROSS_ENCODER_ENV) or DEFAULT_CROSS_ENCODER_MODEL)
    return None if status.reranker is not None else status.detail


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
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    methods = list(dict.fromkeys(methods))
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    if not methods:
        raise ValueError(f"no method given; choose from {', '.join(METHODS)}")
    dataset = load_beir(folder, split)
    results: dict[str, dict] = {}
    ce_model = cross_encoder_model or os.environ.get(CROSS_ENCODER_ENV) or DEFAULT_CROSS_ENCODER_MODEL
    runnable = []
    for method in methods:
        if method == "hybrid_ce":
            why = cross_encoder_unavailable(ce_model)
            if why:
                why = why.split(" Ordered by ")[0]
                results[method] = {"skipped": why}
                if progress:
                    progress(f"hybrid_ce skipped: {why}")
                continue
        runnable.append(method)
    needs_dense = any(m in ("dense", "hybrid", "hybrid_ce", "mmr") for m in runnable)
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
    "BeirDataset", "Evaluator", "METHODS", "METRICS", "as_run", "cached_embeddings", "compute_metrics",
    "docs_from_chunks", "document_chunks", "evaluate", "format_table", "load_beir", "per_query_metrics",
    "read_qrels",
]
