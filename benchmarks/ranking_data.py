"""The data of the query-head benchmarks: texts of every set, their embeddings cached once.

Shared by ``benchmarks/bench_ranking.py`` and ``benchmarks/train_query_head.py``. Embeddings go
to the evaluation cache (``$RAG_CORE_EVAL_CACHE``, default ``~/.cache/rag_core/eval``), keyed by
the texts' hash, so a second run only reads them:

    nice -n 10 python benchmarks/ranking_data.py   # embed everything once (~30-40 min on 2 busy cores)
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
SCIFACT = SHARED / "scifact"
ARGUANA = SHARED / "arguana"
PDFS = SHARED / "pdfs"
QUESTIONS = REPO / "benchmarks" / "data" / "pdf_questions.csv"
# Questions of our own over the same PDFs, for choosing among candidates (never the held-out 50).
DEV_QUESTIONS = REPO / "benchmarks" / "data" / "pdf_questions_dev.csv"


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def embed(texts: list[str], tag: str = "") -> np.ndarray:
    """Unit vectors of ``texts`` by the product's default encoder (cached)."""
    from rag_core.evaluation import cached_embeddings

    return cached_embeddings([{"text": t} for t in texts], tag=tag, progress=lambda m: say(f"{tag}: {m}"))


def beir_chunks(folder: Path):
    """(dataset of every split's queries, chunks) as the evaluation chunks a BEIR corpus."""
    from rag_core.evaluation import document_chunks, load_beir

    ds = load_beir(folder, "test")
    return ds, document_chunks(ds.corpus)


def beir_queries(folder: Path, split: str):
    from rag_core.evaluation import load_beir

    return load_beir(folder, split)


def pdf_documents():
    """(source, sha256, pages) of every shared PDF with text, as ingest extracts them."""
    from rag_core.pdf.extraction import extract_pdf

    out = []
    for path in sorted(PDFS.glob("*.pdf")):
        extraction = extract_pdf(path)
        if extraction.ok:
            out.append((path.name, hashlib.sha256(path.read_bytes()).hexdigest(), extraction.pages))
    return out


def pdf_chunks(documents):
    """The default chunking of ingest (fixed strides, no context), each chunk's doc_id its sha."""
    from rag_core.settings import CHUNK_OVERLAP_CHARS, CHUNK_SIZE_CHARS
    from rag_core.text.passage_context import chunk_pdf

    chunks, records = [], []
    for source, sha, pages in documents:
        pieces = chunk_pdf(pages, source, CHUNK_SIZE_CHARS, CHUNK_OVERLAP_CHARS, word_boundaries=False, context=False)
        for piece in pieces:
            piece["doc_id"] = sha[:16]
        chunks.extend(pieces)
        records.append({"doc_id": sha[:16], "sha256": sha, "source": source})
    return chunks, records


def pdf_question_texts() -> list[str]:
    from rag_core.lab.transfer import parse_csv

    rows = parse_csv(QUESTIONS.read_bytes())
    return list(dict.fromkeys(r["query"] for r in rows))


def all_query_texts() -> list[str]:
    """Every query embedded under the tag ``queries``, in the fixed order the cache is keyed by."""
    from benchmarks.head_data import claim_training_texts

    queries = []
    for split in ("train", "test"):
        queries += list(beir_queries(SCIFACT, split).queries.values())
    queries += pdf_question_texts()
    return list(dict.fromkeys(queries + claim_training_texts()[0]))


def vector_table(texts: list[str], tag: str) -> dict[str, np.ndarray]:
    vectors = embed(texts, tag)
    return dict(zip(texts, vectors, strict=True))


def query_table() -> dict[str, np.ndarray]:
    return vector_table(all_query_texts(), "queries")


def claim_doc_table() -> dict[str, np.ndarray]:
    from benchmarks.head_data import claim_training_texts

    return vector_table(claim_training_texts()[1], "claims-docs")


def sentence_windows(text: str, size: int) -> list[str]:
    """``text`` cut at sentence ends into pieces of at most ``size`` characters (a longer
    sentence is a piece of its own); [] when the whole text is one piece."""
    from rag_core.text.sentences import split_sentences

    pieces, current = [], None
    for a, b in split_sentences(text):
        if current is not None and b - current[0] <= size:
            current[1] = b
            continue
        if current is not None:
            pieces.append(text[current[0]:current[1]])
        current = [a, b]
    if current is not None:
        pieces.append(text[current[0]:current[1]])
    return pieces if len(pieces) > 1 else []


class WindowVectors:
    """Sentence-window vectors of an index's chunks (each with the chunk's context line, as the
    chunk was embedded), cached like the chunks' own: a candidate for long passages, where the
    bi-encoder reads one vector per 1,200 characters."""

    def __init__(self, index, size: int):
        from rag_core.evaluation import cached_embeddings

        texts, owner = [], []
        for row, chunk in enumerate(index.chunks):
            for piece in sentence_windows(chunk["text"], size):
                texts.append(f"{chunk['context']}\n{piece}" if chunk.get("context") else piece)
                owner.append(row)
        self.size, self.owner = size, np.asarray(owner, dtype=np.int64)
        say(f"windows of {size} characters: {len(texts):,} of {len(set(owner)):,} chunks")
        self.vectors = (cached_embeddings([{"text": t} for t in texts], progress=lambda m: say(f"windows: {m}"))
                        if texts else np.zeros((0, index.embeddings.shape[1]), np.float32)).astype(np.float32)

    def best(self, dense: np.ndarray, vector: np.ndarray) -> np.ndarray:
        out = np.array(dense, dtype=np.float32, copy=True)
        if len(self.owner):
            np.maximum.at(out, self.owner, self.vectors @ np.asarray(vector, dtype=np.float32))
        return out

    @property
    def megabytes(self) -> float:
        return (self.vectors.nbytes + self.owner.nbytes) / 1e6


def feedback_vectors(rs: RankingSet, vectors: dict[str, np.ndarray], *, k: int, beta: float) -> dict:
    """Dense pseudo-relevance feedback (Rocchio): each query's vector plus ``beta`` times the mean
    of its first ``k`` hybrid chunks' vectors, normalised."""
    out = dict(vectors)
    orders = rs.chunk_orders(vectors, "hybrid", k)
    for q in rs.query_ids:
        text = rs.texts[q]
        moved = vectors[text] + beta * np.asarray(rs.index.embeddings[orders[q][:k]], dtype=np.float32).mean(axis=0)
        out[text] = moved / np.linalg.norm(moved)
    return out


class RankingSet:
    """One evaluation set on the product's index: each query's lexical scores computed once, dense
    scores from the query vectors handed in, ranked by the product's hybrid (no cross-encoder).

    ``qrels``: query id -> {item: grade}; an item is a document id (BEIR: a document scores as its
    best chunk) or a chunk's position as a string (``per_chunk``: the PDF questions).
    """

    def __init__(self, name, index, query_ids, texts, qrels, *, doc_ids=None, exclude_self=False, relevant=1):
        from rag_core.retrieval.ranking import QueryScores
        from rag_core.text.query import check_query

        self.name, self.index, self.query_ids, self.texts = name, index, list(query_ids), dict(texts)
        self.qrels = {q: qrels[q] for q in self.query_ids}
        self.doc_ids, self.exclude_self, self.relevant = doc_ids, exclude_self, relevant
        self.scores = {q: QueryScores(index, check_query(self.texts[q])) for q in self.query_ids}
        for s in self.scores.values():  # lexical first stages, once
            _ = s.tfidf, s.bm25

    def chunk_orders(self, vectors: dict[str, np.ndarray], method: str = "hybrid", top: int = 100,
                     windows: WindowVectors | None = None) -> dict[str, list[int]]:
        """Each query's ranked chunk rows (``windows``: a chunk's dense score is its best window's
        or its own cosine, whichever is higher)."""
        from rag_core.evaluation.methods import run_method
        from rag_core.index.lexical import top_k
        from rag_core.index.products import matvec
        from rag_core.retrieval.search_spec import SearchSpec

        spec = SearchSpec(cross_encoder_model=None)
        key = f"dense:{self.index.embedding_model}"
        out = {}
        for q in self.query_ids:
            s = self.scores[q]
            vector = vectors[self.texts[q]]
            dense = matvec(self.index.embeddings, vector)
            if windows is not None:
                dense = windows.best(dense, vector)
            if method == "dense":  # what search_dense orders (cosine, ties by row), without its row dicts
                out[q] = top_k(dense, top).tolist()
            else:
                s._cache[key] = dense
                out[q] = [r["chunk_index"] for r in run_method(method, s, self.index, spec, top=top)]
        return out

    def rankings(self, vectors: dict[str, np.ndarray], method: str = "hybrid", depth: int = 100,
                 windows: WindowVectors | None = None) -> dict:
        from rag_core.evaluation import CHUNK_DEPTH, docs_from_chunks

        top = CHUNK_DEPTH if self.doc_ids is not None else depth
        orders = self.chunk_orders(vectors, method, top, windows)
        out = {}
        for q in self.query_ids:
            order = orders[q]
            if self.doc_ids is not None:
                out[q] = docs_from_chunks(order, self.doc_ids, depth, exclude=q if self.exclude_self else None)
            else:
                out[q] = [str(i) for i in order[:depth]]
        return out

    def per_query(self, ranked: dict) -> dict[str, dict[str, float]]:
        """nDCG@10 (gain = grade) and Recall@100 (relevant from ``relevant``) by ir-measures."""
        import ir_measures
        from ir_measures import R, nDCG

        qrels = [ir_measures.Qrel(q, d, int(g)) for q, rel in self.qrels.items() for d, g in rel.items()]
        run = [ir_measures.ScoredDoc(q, d, float(len(docs) - r)) for q, docs in ranked.items()
               for r, d in enumerate(docs)]
        out = {q: {"ndcg@10": 0.0, "recall@100": 0.0} for q in self.query_ids}
        measures = {nDCG @ 10: "ndcg@10", R(rel=self.relevant) @ 100: "recall@100"}
        for m in ir_measures.iter_calc(list(measures), qrels, run):
            out[m.query_id][measures[m.measure]] = float(m.value)
        return out


def scifact_index(progress=None):
    """The evaluation index of SciFact (every chunk, cached vectors) and its chunks' document ids."""
    from rag_core.evaluation import Evaluator, load_beir

    ev = Evaluator(load_beir(SCIFACT, "test"), progress=progress)
    return ev


def beir_set(folder: Path, split: str, name: str, query_vectors, *, keep=None, evaluator=None) -> RankingSet:
    from rag_core.evaluation import Evaluator, load_beir

    ds = load_beir(folder, split)
    ev = evaluator or Evaluator(load_beir(folder, "test"))
    qids = [q for q in ds.queries if q in ds.qrels and any(g > 0 for g in ds.qrels[q].values())]
    if keep is not None:
        qids = [q for q in qids if keep(q)]
    return RankingSet(name, ev.index, qids, ds.queries, ds.qrels, doc_ids=ev.doc_ids,
                      exclude_self=folder == ARGUANA)


def pdf_set(name: str = "pdf questions", questions: Path = QUESTIONS) -> RankingSet:
    """The judged PDF questions of ``questions`` (the held-out 50 by default) on the default PDF
    chunking (grades 0-3, relevant from 2)."""
    from rag_core.evaluation import cached_embeddings
    from rag_core.index.build import build_index_from_chunks, index_text
    from rag_core.lab.judgments import Judgments, passages_of
    from rag_core.lab.transfer import judgments_from_rows, parse_csv

    documents = pdf_documents()
    chunks, records = pdf_chunks(documents)
    vectors = cached_embeddings([{"text": index_text(c)} for c in chunks])
    index = build_index_from_chunks(chunks, embeddings=vectors, compute_embeddings=False)
    rows = parse_csv(questions.read_bytes())
    found, report = judgments_from_rows(rows, index, records)
    if report.problems:
        say(f"pdf questions: {len(report.problems)} rows not placed: {report.problems[:3]}")
    judgments = Judgments(found)
    passages = passages_of(index, records)
    texts = judgments.queries()
    qrels = {}
    for t in texts:
        graded = judgments.grades(t, passages)
        qrels[t] = {str(i): int(g.grade) for i, g in graded.items() if g.grade is not None}
    qids = [t for t in texts if any(g >= 2 for g in qrels[t].values())]
    return RankingSet(name, index, qids, {t: t for t in texts}, qrels, relevant=2)


def paired(a: dict[str, float], b: dict[str, float], *, resamples: int = 10000, seed: int = 0) -> dict:
    """Mean of b - a over the queries, its 95% paired bootstrap interval, and the two-sided
    paired randomisation (sign-flip) test's p."""
    qs = sorted(a)
    d = np.array([b[q] - a[q] for q in qs])
    rng = np.random.default_rng(seed)
    boots = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    flips = rng.choice((-1.0, 1.0), size=(resamples, len(d)))
    p = float((np.abs((flips * d).mean(axis=1)) >= abs(d.mean()) - 1e-12).mean())
    return {"delta": float(d.mean()), "low": float(np.percentile(boots, 2.5)),
            "high": float(np.percentile(boots, 97.5)), "p": p,
            "better": int((d > 1e-9).sum()), "worse": int((d < -1e-9).sum())}


def main() -> int:
    from benchmarks.head_data import claim_training_texts
    from rag_core.evaluation import cached_embeddings

    started = time.perf_counter()
    _, chunks = beir_chunks(SCIFACT)
    say(f"scifact: {len(chunks):,} chunks")
    cached_embeddings(chunks, progress=lambda m: say(f"scifact chunks: {m}"))
    embed(all_query_texts(), "queries")
    claim_docs = claim_training_texts()[1]
    say(f"claims: {len(claim_docs):,} evidence texts")
    embed(claim_docs, "claims-docs")
    documents = pdf_documents()
    pchunks, _ = pdf_chunks(documents)
    say(f"pdfs: {len(pchunks):,} chunks")
    from rag_core.index.build import index_text

    cached_embeddings([{"text": index_text(c)} for c in pchunks], progress=lambda m: say(f"pdf chunks: {m}"))
    ads, achunks = beir_chunks(ARGUANA)
    embed(list(ads.queries.values()), "queries-arguana")
    say(f"arguana: {len(achunks):,} chunks")
    cached_embeddings(achunks, progress=lambda m: say(f"arguana chunks: {m}"))
    say(f"all cached in {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
