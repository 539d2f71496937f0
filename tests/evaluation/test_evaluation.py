"""Evaluation: metrics against ir_measures, the BEIR loader, doc scoring, a real SciFact slice."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest

from rag_core.evaluation import (
    Evaluator,
    as_run,
    compute_metrics,
    docs_from_chunks,
    document_chunks,
    evaluate,
    format_table,
    load_beir,
    per_query_metrics,
)
from tests.support import SHARED_DATA

DATA = SHARED_DATA


def _hand_made():
    qrels = {
        "q1": {"d1": 1, "d5": 1, "d9": 2},
        "q2": {"d3": 1},
        "q3": {"d7": 1, "d8": 0},  # d8 judged non-relevant
        "q4": {"dzzz": 1},  # never retrieved
    }
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(1, 130)]
    run = {}
    for qid in ("q1", "q2", "q3", "q4"):
        picked = rng.sample(docs, 120)
        # distinct scores so tie-breaking conventions cannot matter
        run[qid] = {d: float(1000 - r) + rng.random() * 0.5 for r, d in enumerate(picked)}
    run["q2"]["d3"] = 999.9  # rank 2
    return run, qrels


def test_metrics_match_ir_measures():
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import RR, R, nDCG

    run, qrels = _hand_made()
    ours = compute_metrics(run, qrels)
    theirs = ir_measures.calc_aggregate([nDCG @ 10, RR @ 10, R @ 100], qrels, run)
    assert ours["queries"] == 4
    assert ours["ndcg@10"] == pytest.approx(theirs[nDCG @ 10], abs=1e-9)
    assert ours["mrr@10"] == pytest.approx(theirs[RR @ 10], abs=1e-9)
    assert ours["recall@100"] == pytest.approx(theirs[R @ 100], abs=1e-9)
    per_query = per_query_metrics(run, qrels)
    for m in ir_measures.iter_calc([nDCG @ 10], qrels, run):
        assert per_query[m.query_id]["ndcg@10"] == pytest.approx(m.value, abs=1e-9)
    assert per_query["q2"]["mrr@10"] == pytest.approx(0.5)
    assert per_query["q4"] == {"ndcg@10": 0.0, "mrr@10": 0.0, "recall@100": 0.0}


def test_metrics_graded_and_perfect():
    qrels = {"q": {"a": 2, "b": 1}}
    assert compute_metrics({"q": ["a", "b", "c"]}, qrels)["ndcg@10"] == pytest.approx(1.0)
    swapped = compute_metrics({"q": ["b", "a"]}, qrels)["ndcg@10"]
    import math

    ideal = 2 + 1 / math.log2(3)
    assert swapped == pytest.approx((1 + 2 / math.log2(3)) / ideal)
    assert compute_metrics({}, qrels)["ndcg@10"] == 0.0


def _write_beir(folder: Path, *, gz: bool, crlf: bool) -> None:
    docs = [
        {"_id": "d1", "title": "Wormholes", "text": "A traversable wormhole in an eternal BTZ black hole."},
        {"_id": "d2", "title": "", "text": "Zero-noise extrapolation mitigates errors of short-depth circuits."},
        {"_id": "q1", "title": "Query as doc", "text": "Cross-encoders read query and passage together."},
    ]
    lines = "".join(json.dumps(d) + "\n" for d in docs)
    if gz:
        with gzip.open(folder / "corpus.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.write(lines)
    else:
        (folder / "corpus.jsonl").write_text(lines, encoding="utf-8")
    queries = [{"_id": "q1", "text": "wormhole black hole"}, {"_id": "q2", "text": "zero-noise extrapolation circuits"},
               {"_id": "q3", "text": "not judged"}]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (folder / "qrels").mkdir()
    nl = "\r\n" if crlf else "\n"
    (folder / "qrels" / "test.tsv").write_bytes(
        nl.join(["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td2\t1", ""]).encode()
    )


@pytest.mark.parametrize("gz,crlf", [(True, True), (False, False), (False, True)])
def test_load_beir(tmp_path, gz, crlf):
    _write_beir(tmp_path, gz=gz, crlf=crlf)
    ds = load_beir(tmp_path)
    assert set(ds.corpus) == {"d1", "d2", "q1"}
    assert ds.corpus["d1"] == {"title": "Wormholes", "text": "A traversable wormhole in an eternal BTZ black hole."}
    assert ds.queries == {"q1": "wormhole black hole", "q2": "zero-noise extrapolation circuits"}  # q3 not judged
    assert ds.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1}}


def test_load_beir_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_beir(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="corpus"):
        load_beir(tmp_path)
    _write_beir(tmp_path, gz=False, crlf=False)
    with pytest.raises(FileNotFoundError, match="train"):
        load_beir(tmp_path, split="train")


def test_query_id_removal_and_tiny_evaluation(tmp_path):
    _write_beir(tmp_path, gz=True, crlf=True)
    ds = load_beir(tmp_path)
    ev = Evaluator(ds, with_embeddings=False)
    for method in ("tfidf", "bm25"):
        ranked = ev.rankings(method)
        assert "q1" not in ranked["q1"]  # the query's own document is dropped
        assert ranked["q1"][0] == "d1"
        assert ranked["q2"][0] == "d2"
    results = evaluate(tmp_path, methods=["tfidf", "bm25"])
    assert results["bm25"]["ndcg@10"] == pytest.approx(1.0)
    assert results["tfidf"]["queries"] == 2
    table = format_table(results)
    assert "tfidf" in table and "bm25" in table
    with pytest.raises(ValueError, match="unknown method"):
        evaluate(tmp_path, methods=["nope"])


def test_best_chunk_document_scoring():
    chunk_docs = ["a", "b", "a", "c", "b", "q"]
    # chunk 5 (doc q) ranks first but is the query's own id; doc a's best chunk is 2nd.
    assert docs_from_chunks([5, 2, 1, 0, 3, 4], chunk_docs, exclude="q") == ["a", "b", "c"]
    assert docs_from_chunks([5, 2, 1, 0, 3, 4], chunk_docs, top_k=2) == ["q", "a"]
    run = as_run({"x": ["a", "b", "c"]})
    assert sorted(run["x"], key=run["x"].get, reverse=True) == ["a", "b", "c"]


def test_document_chunks_titles():
    corpus = {"d": {"title": "Title", "text": "x" * 2500}, "e": {"title": "", "text": "short"}}
    chunks = document_chunks(corpus)
    assert chunks[0]["text"].startswith("Title. xxx")
    assert [c["doc_id"] for c in chunks] == ["d", "d", "d", "e"]
    assert all(len(c["text"]) <= 1200 for c in chunks)
    every = document_chunks(corpus, title_mode="every_chunk")
    assert all(c["text"].startswith("Title. ") for c in every if c["doc_id"] == "d")


@pytest.mark.skipif(not (DATA / "scifact" / "qrels" / "test.tsv").is_file(), reason="shared SciFact data absent")
def test_scifact_slice_lexical():
    full = load_beir(DATA / "scifact")
    qids = sorted(full.queries)[:20]
    relevant = {d for q in qids for d in full.qrels[q]}
    others = [d for d in sorted(full.corpus) if d not in relevant]
    keep = relevant | set(random.Random(0).sample(others, 200 - len(relevant)))
    from rag_core.evaluation import BeirDataset

    ds = BeirDataset({d: full.corpus[d] for d in full.corpus if d in keep},
                     {q: full.queries[q] for q in qids}, {q: full.qrels[q] for q in qids}, name="slice")
    ev = Evaluator(ds, with_embeddings=False)
    scores = {m: compute_metrics(as_run(ev.rankings(m)), ds.qrels) for m in ("tfidf", "bm25")}
    # On 200 documents both methods find most relevant abstracts; a broken scorer does not.
    assert 0.6 <= scores["bm25"]["ndcg@10"] <= 1.0
    assert 0.5 <= scores["tfidf"]["ndcg@10"] <= 1.0
    assert scores["bm25"]["recall@100"] >= 0.9


class CountingEncoder:
    """A stand-in bi-encoder: one vector per text (its length, and 1), counting the texts it encoded."""

    def __init__(self):
        self.encoded = 0

    def get_sentence_embedding_dimension(self) -> int:
        return 2

    def encode(self, texts, **kwargs):
        self.encoded += len(texts)
        vectors = np.asarray([[len(t), 1.0] for t in texts], dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_embedding_cache_is_written_once_atomically_and_reused(tmp_path, monkeypatch):
    from rag_core.evaluation import cached_embeddings

    monkeypatch.setenv("RAG_CORE_EVAL_CACHE", str(tmp_path / "cache"))
    chunks = [{"text": "first chunk"}, {"text": "a second, longer chunk"}, {"text": "third"}]
    encoder = CountingEncoder()
    first = cached_embeddings(chunks, "fake-model", encoder=encoder, tag="t")
    assert encoder.encoded == 3 and first.shape == (3, 2)
    files = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(files) == 1 and files[0].startswith("emb-") and files[0].endswith(".npy")  # no temporary left
    again = cached_embeddings(chunks, "fake-model", encoder=encoder, tag="t")
    assert encoder.encoded == 3 and (again == first).all()  # read, not encoded again
    (tmp_path / "cache" / files[0]).write_bytes(b"half a file")  # damaged: computed again and replaced
    assert (cached_embeddings(chunks, "fake-model", encoder=encoder, tag="t") == first).all()
    assert encoder.encoded == 6
    cached_embeddings(chunks[:2], "fake-model", encoder=encoder, tag="t")  # other chunks, other file
    assert encoder.encoded == 8 and len(list((tmp_path / "cache").iterdir())) == 2


def test_hybrid_ce_is_skipped_with_the_reason(tmp_path):
    _write_beir(tmp_path, gz=False, crlf=False)
    missing = tmp_path / "no-such-cross-encoder"
    results = evaluate(tmp_path, methods=["tfidf", "hybrid_ce"], cross_encoder_model=str(missing))
    assert results["tfidf"]["queries"] == 2
    why = results["hybrid_ce"]["skipped"]
    assert why.startswith("no cross-encoder: ") and "does not exist" in why
    assert "Ordered by" not in why  # the reason alone, not the fallback message
    assert f"hybrid_ce    skipped: {why}" in format_table(results)
