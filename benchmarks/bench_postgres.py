"""PostgreSQL store against the folder store (not a test): ingest, load and query latency, and
the recall@10 of pgvector's HNSW index against exact search.

    HF_HUB_OFFLINE=1 python benchmarks/bench_postgres.py --sizes 10000,100000
    HF_HUB_OFFLINE=1 python benchmarks/bench_postgres.py --recall        # real MiniLM vectors

Without ``--url`` a throw-away PostgreSQL 16 with pgvector is started with pgserver.

Latency, per size and backend, each in a fresh process: chunks are real text (SciFact and
ArguAna chunks, rotated copies past ~20k, as bench_speed.py makes them) in documents of 50
chunks, with random unit vectors (dim 384) as embeddings.

* bulk load: one commit of every chunk with its vector (what ``rag-core copy`` does);
* add one document (50 chunks) the way an ingest commits it (lock, read documents, load the
  index, commit), then write its vectors and fold them in;
* load_index: cold (a new process), warm (same version again), and after the add;
* index_token (what the app asks on every page run);
* query p50/p95 of TF-IDF, BM25, dense (matmul of a query vector) and exact, in-process;
  for PostgreSQL also ``dense_search`` through SQL: an exact scan, and with ``--ann`` the
  HNSW index (build time, latency, recall@10 against exact search).

``--recall``: the SciFact corpus chunked and embedded with all-MiniLM-L6-v2 (cached in
``--cache``), stored in PostgreSQL, HNSW-indexed; recall@10 of the HNSW index against exact
inner product for the SciFact test queries, at several ``hnsw.ef_search``; then the same at
100k vectors made of the real ones plus noisy copies (cosine ~0.9 to their original).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"

import numpy as np  # noqa: E402 (after the environment it reads)

DIM = 384
DOC_CHUNKS = 50
N_QUERIES = 40


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def percentiles(values: list[float]) -> dict:
    ms = sorted(v * 1000 for v in values)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(p95, 2), "n": len(ms)}


def timed(fn, items, warmup: int = 3) -> dict:
    for item in items[:warmup]:
        fn(item)
    times = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        times.append(time.perf_counter() - t)
    return percentiles(times)


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def collection_data(n: int, seed: int = 0) -> tuple[list[dict], list[dict], np.ndarray]:
    from bench_speed import make_chunks

    chunks = make_chunks(n)
    documents = []
    for d in range(0, n, DOC_CHUNKS):
        doc_id = f"{d // DOC_CHUNKS:016x}"
        part = chunks[d:d + DOC_CHUNKS]
        for i, chunk in enumerate(part):
            chunk.update(doc_id=doc_id, source=f"{doc_id}.pdf", doc_chunk=i, page_start=1 + i // 3,
                         page_end=1 + i // 3, page_label=None, page_breaks=[[0, 1 + i // 3]])
        documents.append({"doc_id": doc_id, "source": f"{doc_id}.pdf", "sha256": f"{d:064x}", "pages": 17,
                          "chunks": len(part), "bytes": 1000, "added": 0.0})
    vectors = unit(np.random.default_rng(seed).standard_normal((n, DIM)))
    return documents, chunks, vectors


def queries() -> list[str]:
    from rag_core.evaluation import load_beir

    data = load_beir(DATA / "scifact")
    return list(data.queries.values())[:N_QUERIES]


def store_size(store) -> int:
    if store.kind == "folder":
        return sum(p.stat().st_size for p in Path(store.location).rglob("*") if p.is_file())
    import psycopg

    with psycopg.connect(store.url) as conn:
        return int(conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'rag_core' AND c.relkind = 'r'").fetchone()[0])


def one(n: int, location: str, ann: bool) -> dict:
    """Everything measured for one size and backend (in its own process)."""
    from rag_core.collections.store import open_store
    from rag_core.retrieval.exact import search_exact
    from rag_core.retrieval.ranking import search_lexical

    documents, chunks, vectors = collection_data(n)
    store = open_store(location)
    store.create("bench", {"chunk_size": 1200, "overlap": 200})
    out: dict = {"chunks": n, "backend": store.kind}
    t = time.perf_counter()
    with store.writing("bench"):
        store.commit("bench", documents=documents[:-1], chunks=chunks[:-DOC_CHUNKS],
                     embeddings=vectors[:-DOC_CHUNKS], dense_mask=None, new_files={})
    out["bulk_load_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    index = store.load_index("bench")
    out["load_cold_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    store.load_index("bench")
    out["load_warm_s"] = round(time.perf_counter() - t, 3)
    out["index_token"] = timed(lambda _: store.index_token("bench"), list(range(30)))
    # one more document, as an ingest commits it
    new_doc, new_chunks = documents[-1], chunks[-DOC_CHUNKS:]
    t = time.perf_counter()
    with store.writing("bench"):
        docs = store.read_documents("bench")
        index = store.load_index("bench")
        old = list(index.chunks)
        embeddings = np.vstack([index.embeddings, np.zeros((len(new_chunks), DIM), np.float32)])
        mask = np.concatenate([np.ones(len(old), bool), np.zeros(len(new_chunks), bool)])
        store.commit("bench", documents=[*docs, new_doc], chunks=old + new_chunks, embeddings=embeddings,
                     dense_mask=mask, new_files={})
    out["add_document_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    for pending in store.pending_vectors("bench"):
        store.write_vectors("bench", pending.key, vectors[-DOC_CHUNKS:])
    store.fold_in_vectors("bench")
    out["write_and_fold_vectors_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    index = store.load_index("bench")
    out["load_after_add_s"] = round(time.perf_counter() - t, 2)
    assert len(index.chunks) == n and index.dense_mask is None
    texts = queries()
    rng = np.random.default_rng(1)
    qvecs = list(unit(rng.standard_normal((len(texts), DIM))))
    out["tfidf"] = timed(lambda q: search_lexical(q, index, 10, method="tfidf"), texts)
    out["bm25"] = timed(lambda q: search_lexical(q, index, 10, method="bm25"), texts)
    out["dense_matmul"] = timed(lambda v: np.argpartition(-(index.embeddings @ v), 10)[:10], qvecs)
    out["exact"] = timed(lambda q: search_exact(" ".join(q.split()[:2]), index, max_hits=10), texts)
    if store.kind == "postgresql":
        truth = [{int(i) for i in np.argsort(-(index.embeddings @ v))[:10]} for v in qvecs]
        out["dense_sql_exact_scan"] = timed(lambda v: store.dense_search("bench", v, 10, exact=True), qvecs[:10], 1)
        if ann:
            t = time.perf_counter()
            store.ensure_ann_index("bench", min_chunks=0)
            out["hnsw_build_s"] = round(time.perf_counter() - t, 1)
            for ef in (40, 100, 200):
                out[f"dense_hnsw_ef{ef}"] = timed(lambda v, ef=ef: store.dense_search("bench", v, 10, ef_search=ef),
                                                  qvecs)
                hits = [len(truth[i] & {j for j, _ in store.dense_search("bench", v, 10, ef_search=ef)})
                        for i, v in enumerate(qvecs)]
                out[f"recall@10_random_ef{ef}"] = round(sum(hits) / (10 * len(hits)), 3)
    out["store_mib"] = round(store_size(store) / 2**20, 1)
    out["peak_rss_mib"] = round(rss_mib(), 0)
    store.delete("bench")
    return out


def start_server(folder: Path):
    from rag_core.collections.store.local_server import start_local_server

    return start_local_server(folder)


def new_database(url: str, name: str) -> str:
    """A fresh database ``name`` (a fixed benchmark name, never user text) on the server of ``url``."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    target = urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return target


def recall(url: str, cache: Path) -> dict:
    """HNSW recall@10 against exact search on real MiniLM vectors of SciFact, and on 100k
    made of them plus noisy copies."""
    from rag_core.collections.store import open_store
    from rag_core.evaluation import document_chunks, load_beir
    from rag_core.models.embedding import encode_passages, encode_query
    from rag_core.models.loading import load_bi_encoder

    data = load_beir(DATA / "scifact")
    chunks = document_chunks(data.corpus)
    model = load_bi_encoder("sentence-transformers/all-MiniLM-L6-v2")
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"scifact_minilm_{len(chunks)}.npy"
    if path.is_file():
        vectors = np.load(path)
    else:
        log(f"embedding {len(chunks)} SciFact chunks (cached in {path})")
        t = time.perf_counter()
        vectors = encode_passages(model, [c["text"] for c in chunks])
        log(f"  {time.perf_counter() - t:.0f} s")
        np.save(path, vectors)
    qtexts = list(data.queries.values())[:300]
    qvecs = np.stack([encode_query(model, q) for q in qtexts]).astype(np.float32)
    out = {"queries": len(qtexts)}
    rng = np.random.default_rng(3)
    sets = {"scifact_real": vectors}
    copies = [vectors]
    while sum(len(c) for c in copies) < 100_000:
        noisy = vectors + rng.standard_normal(vectors.shape).astype(np.float32) * 0.025
        copies.append(unit(noisy))
    sets["realistic_100k"] = np.vstack(copies)[:100_000]
    store = open_store(url)
    for label, matrix in sets.items():
        out[label] = hnsw_recall(store, label, matrix, qvecs)
    return out


def hnsw_recall(store, label: str, vectors: np.ndarray, qvecs: np.ndarray) -> dict:
    """Commit ``vectors`` as a collection, build its HNSW index and measure recall@10 of
    ``dense_search`` against the exact product at three ``ef_search`` values; then delete it."""
    n = len(vectors)
    docs, rows = [], []
    for d in range(0, n, DOC_CHUNKS):
        doc_id = f"{d // DOC_CHUNKS:016x}"
        docs.append({"doc_id": doc_id, "source": f"{doc_id}.pdf", "sha256": f"{d:064x}", "pages": 1,
                     "chunks": min(DOC_CHUNKS, n - d)})
        rows += [{"text": f"c{i}", "source": f"{doc_id}.pdf", "doc_id": doc_id}
                 for i in range(d, min(n, d + DOC_CHUNKS))]
    store.create(label, {"chunk_size": 1200, "overlap": 200})
    with store.writing(label):
        store.commit(label, documents=docs, chunks=rows, embeddings=vectors, dense_mask=None, new_files={})
    t = time.perf_counter()
    store.ensure_ann_index(label, min_chunks=0)
    result = {"vectors": n, "hnsw_build_s": round(time.perf_counter() - t, 1)}
    store.load_index(label)
    truth = [{int(i) for i in np.argsort(-(vectors @ q))[:10]} for q in qvecs]
    for ef in (40, 100, 200):
        times, hits = [], 0
        for i, q in enumerate(qvecs):
            t = time.perf_counter()
            found = store.dense_search(label, q, 10, ef_search=ef)
            times.append(time.perf_counter() - t)
            hits += len(truth[i] & {j for j, _ in found})
        result[f"ef{ef}"] = {"recall@10": round(hits / (10 * len(qvecs)), 4), **percentiles(times)}
    log(f"{label}: {json.dumps(result)}")
    store.delete(label)
    return result


def text_vectors(texts: list[str]) -> np.ndarray:
    """Unit vectors with the neighbourhood structure of real text, at no model cost: hashed
    unigram+bigram TF vectors, randomly projected to 384 dimensions (a stand-in for MiniLM
    vectors where embedding a corpus takes hours)."""
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.random_projection import SparseRandomProjection

    hashed = HashingVectorizer(n_features=2**20, ngram_range=(1, 2), alternate_sign=False, norm="l2",
                               stop_words="english").transform(texts)
    projection = SparseRandomProjection(n_components=DIM, random_state=0).fit(hashed[:1])
    projected = projection.transform(hashed)
    return unit(np.asarray(projected.todense() if hasattr(projected, "todense") else projected))


def recall_text(url: str, sizes: list[int]) -> dict:
    """HNSW recall@10 against exact search on :func:`text_vectors` of real chunks and SciFact queries."""
    from bench_speed import make_chunks

    from rag_core.collections.store import open_store
    from rag_core.evaluation import load_beir

    qtexts = list(load_beir(DATA / "scifact").queries.values())[:300]
    out = {"queries": len(qtexts), "vectors": "hashed unigram+bigram TF of the chunk text, random projection to 384"}
    store = open_store(url)
    for n in sizes:
        chunks = make_chunks(n)
        matrix = text_vectors([c["text"] for c in chunks] + qtexts)
        vectors, qvecs = matrix[:n], matrix[n:]
        out[f"text_{n}"] = hnsw_recall(store, f"text_{n}", vectors, qvecs)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--url", help="a postgresql:// URL of a database to use (default: a throw-away pgserver)")
    parser.add_argument("--ann", action="store_true", help="also build and query the HNSW index")
    parser.add_argument("--recall", action="store_true", help="only the recall measurement on real vectors")
    parser.add_argument("--recall-text", action="store_true",
                        help="only the recall measurement on vectors made from real text without a model")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "rag-core-bench"))
    parser.add_argument("--one", nargs=3, metavar=("N", "LOCATION", "ANN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(int(args.one[0]), args.one[1], args.one[2] == "1")))
        return 0
    server = None
    url = args.url
    workdir = Path(tempfile.mkdtemp(prefix="rag-core-bench-"))
    if url is None:
        server, url = start_server(workdir / "pg")
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
              "loadavg_start": os.getloadavg()}
    if args.recall:
        report["recall"] = recall(new_database(url, "rag_core_bench"), Path(args.cache))
    elif args.recall_text:
        sizes = [int(s) for s in args.sizes.split(",")]
        report["recall_text"] = recall_text(new_database(url, "rag_core_bench"), sizes)
    else:
        report["runs"] = []
        for n in [int(s) for s in args.sizes.split(",")]:
            for backend in ("folder", "postgres"):
                location = str(workdir / f"folder-{n}") if backend == "folder" else new_database(url, "rag_core_bench")
                log(f"{backend} at {n:,} chunks ...")
                result = subprocess.run([sys.executable, __file__, "--one", str(n), location, "1" if args.ann else "0"],
                                        capture_output=True, text=True, cwd=REPO / "benchmarks", check=False)
                if result.returncode != 0:
                    log(result.stderr[-3000:])
                    raise SystemExit(1)
                run = json.loads(result.stdout.strip().splitlines()[-1])
                log(json.dumps(run))
                report["runs"].append(run)
    report["loadavg_end"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    if server is not None:
        server.cleanup()
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
