"""The PostgreSQL store: the same results as the folder store, one-transaction commits, no lost
writes between processes, masked passwords, bound parameters, copying between stores.

(The library suite, tests/collections/test_library.py, runs against both backends as well.)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import psycopg
import pytest

from rag_core.cli import main
from rag_core.collections.library import Library
from rag_core.collections.store.postgres.connection import mask_url, redact
from rag_core.collections.store.postgres.store import PostgresStore
from rag_core.errors import CollectionError, StoreConnectionError
from rag_core.retrieval.exact import search_exact
from rag_core.retrieval.ranking import search, search_dense, search_lexical
from tests.support import REPO, SMALL_PDFS

SMALL = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"  # 4 pages
OTHER = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages
THIRD = "awkward_scanned_ocr_layer_zfn_a_1999_solitary_waves.pdf"  # 2 pages
ENV = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}


def rows_of(conn_url: str, query: str, params=()):
    with psycopg.connect(conn_url) as conn:
        return conn.execute(query, params).fetchall()


# ---------------------------------------------------------------- passwords never shown


@pytest.mark.parametrize(("url", "secret"), [
    ("postgresql://alice:s3cr%40t@db.example:5432/lab", "s3cr%40t"),
    ("postgresql://alice:hunter2@db.example/lab?sslmode=require", "hunter2"),
    ("postgresql://alice@db.example/lab?password=hunter2&sslmode=require", "hunter2"),
    ("postgres://alice:pw@/lab?host=/run/postgresql", "pw"),
])
def test_the_password_is_masked_everywhere(url, secret):
    masked = mask_url(url)
    assert secret not in masked and "***" in masked and "alice" in masked
    assert PostgresStore(url).location == masked  # no connection is made to say where it is
    assert secret not in redact(f"could not connect with {url}: bad password {secret}", url)
    assert repr(Library(store=url)).count("***") == 1


def test_an_unreachable_server_gives_a_message_without_the_password():
    store = PostgresStore("postgresql://alice:topsecret@127.0.0.1:1/lab?connect_timeout=2")
    with pytest.raises(StoreConnectionError) as caught:
        store.names()
    message = str(caught.value)
    assert "topsecret" not in message and "alice:***@127.0.0.1:1/lab" in message
    assert isinstance(caught.value, ValueError)  # a RagCoreError: the CLI and the app show it


def test_the_cli_never_prints_the_password(capsys):
    url = "postgresql://alice:topsecret@127.0.0.1:1/lab?connect_timeout=2"
    assert main(["--store", url, "list"]) == 1
    err = capsys.readouterr().err
    assert "topsecret" not in err and "***" in err and "Traceback" not in err


# ---------------------------------------------------------------- the same results on both backends


QUERIES = ["dense passage retrieval for open-domain question answering", "ultralight bosonic dark matter CMB",
           "negative sampling in-batch", "the", "recall@20 on natural questions"]


def test_both_backends_rank_the_same_pdfs_identically(paper_library, pg_url, pdf_dir, tiny_cross_encoder):
    """The same PDFs ingested into a folder and into PostgreSQL: TF-IDF, BM25, dense, hybrid
    (fused and cross-encoded) and exact results are identical, row for row."""
    folder = paper_library
    pg = Library(store=pg_url)
    report = pg.add_pdfs("papers", [pdf_dir / name for name in SMALL_PDFS])
    assert [f.status for f in report.files] == ["ok", "ok"]
    a, b = folder.load_index("papers"), pg.load_index("papers")
    assert a.chunks == b.chunks
    assert np.array_equal(a.embeddings, b.embeddings) and b.dense_mask is None
    assert (a.matrix != b.matrix).nnz == 0 and a.vectorizer.vocabulary_ == b.vectorizer.vocabulary_

    def strip(docs):
        return [{k: v for k, v in d.items() if k != "added"} for d in docs]

    assert strip(folder.documents("papers")) == strip(pg.documents("papers"))
    for query in QUERIES:
        for method in ("tfidf", "bm25"):
            assert search_lexical(query, a, 10, method=method) == search_lexical(query, b, 10, method=method)
        assert search_dense(query, a, 10) == search_dense(query, b, 10)
        assert search(query, a, top=10) == search(query, b, top=10)
        assert search(query, a, top=5, cross_encoder_model=str(tiny_cross_encoder)) == \
            search(query, b, top=5, cross_encoder_model=str(tiny_cross_encoder))
    for pattern, mode in (("dark matter", "literal"), (r"retriev\w+", "regex"), ("question answering", "normalized")):
        assert search_exact(pattern, a, mode=mode, max_hits=50) == search_exact(pattern, b, mode=mode, max_hits=50)
    # the HNSW path finds the exact top 10 on a collection this small
    hits = b.dense_search(QUERIES[0], 10)
    exact = search_dense(QUERIES[0], b, 10)
    assert [i for i, _ in hits] == [r["chunk_index"] for r in exact]


# ---------------------------------------------------------------- versions and transactions


def test_adding_documents_writes_only_their_rows(pg_url, pdf_dir):
    library = Library(store=pg_url)
    library.add_pdfs("c", [pdf_dir / SMALL], compute_embeddings=False)
    first = rows_of(pg_url, "SELECT document_id, seq FROM rag_core.chunks ORDER BY 1, 2")
    library.add_pdfs("c", [pdf_dir / OTHER], compute_embeddings=False)
    library.add_pdfs("c", [pdf_dir / THIRD], compute_embeddings=False)
    rows = rows_of(pg_url, "SELECT document_id, seq FROM rag_core.chunks ORDER BY 1, 2")
    assert set(first) <= set(rows) and len(rows) == library.info("c").chunks  # nothing copied
    library.remove_documents("c", [OTHER])
    library.remove_documents("c", [THIRD])
    # the removed documents' rows stay while a kept version (the parent) lists them, then go
    assert len(rows_of(pg_url, "SELECT 1 FROM rag_core.chunks")) == library.info("c").chunks + \
        len(rows_of(pg_url, "SELECT 1 FROM rag_core.chunks c JOIN rag_core.documents d ON d.id = c.document_id "
                            "WHERE d.removed_in IS NOT NULL"))
    assert len(rows_of(pg_url, "SELECT 1 FROM rag_core.files")) == 2  # the live one and the parent's
    assert library.check("c").ok


HOLD_IN_COMMIT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import rag_core.collections.store.postgres.commit as commit
    from rag_core.collections.library import Library
    real = commit.insert_chunks
    def insert_then_wait(*args, **kwargs):
        result = real(*args, **kwargs)  # rows written inside the commit's transaction
        Path(sys.argv[2]).write_text("inside")
        time.sleep(600)  # the test kills us here
        return result
    commit.insert_chunks = insert_then_wait
    Library(store=sys.argv[1]).add_pdfs("c", [sys.argv[3]], compute_embeddings=False)
""")


def test_readers_see_the_previous_version_until_a_commit_ends_and_kill_9_keeps_it(pg_url, pdf_dir, tmp_path):
    library = Library(store=pg_url)
    library.add_pdfs("c", [pdf_dir / OTHER], compute_embeddings=False)
    version, chunks = library.version("c"), len(library.load_index("c").chunks)
    flag = tmp_path / "inside"
    child = subprocess.Popen([sys.executable, "-c", HOLD_IN_COMMIT, pg_url, str(flag), str(pdf_dir / SMALL)],
                             env=ENV, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 300
        while not flag.exists():
            assert child.poll() is None, child.stderr.read()
            assert time.time() < deadline, "the ingest never reached its commit"
            time.sleep(0.2)
        # mid-commit: its rows are written but not committed; readers see the previous version
        assert library.version("c") == version
        assert [d["source"] for d in library.documents("c")] == [OTHER]
        assert len(library.load_index("c").chunks) == chunks
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    assert child.returncode == -9
    assert library.version("c") == version and [d["source"] for d in library.documents("c")] == [OTHER]
    assert library.check("c").ok
    # the dead writer's lock went with its connection: the next ingest is not kept waiting
    started = time.time()
    report = library.add_pdfs("c", [pdf_dir / SMALL], compute_embeddings=False)
    assert report.files[0].status == "ok" and time.time() - started < 120
    assert {d["source"] for d in library.documents("c")} == {OTHER, SMALL}


INGESTER = textwrap.dedent("""
    import sys
    from rag_core.collections.library import Library
    library = Library(store=sys.argv[1])
    for path in sys.argv[2:]:
        report = library.add_pdfs("c", [path], compute_embeddings=False)
        assert report.files[0].status == "ok", report.files
    print("done")
""")


def test_two_processes_ingesting_into_one_collection_lose_nothing(pg_url, pdf_dir):
    library = Library(store=pg_url)
    library.create("c")
    names = sorted([SMALL, OTHER, THIRD, "ml_dpr_karpukhin2020_arxiv2004.04906.pdf", "ml_tableformer_yang2022_acl.pdf",
                    "phys_lie_theory_quantum_info_thesis_draft_stemen2021.pdf"])
    halves = [names[0::2], names[1::2]]
    children = [subprocess.Popen([sys.executable, "-c", INGESTER, pg_url, *[str(pdf_dir / n) for n in half]],
                                 env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for half in halves]
    for child in children:
        out, err = child.communicate(timeout=900)
        assert child.returncode == 0 and out.strip() == "done", err[-3000:]
    documents = library.documents("c")
    assert sorted(d["source"] for d in documents) == names
    index = library.load_index("c")
    assert len(index.chunks) == sum(d["chunks"] for d in documents)
    assert library.check("c").ok


@pytest.mark.slow
def test_two_first_ingests_into_a_new_collection_both_land(pg_url, pdf_dir):
    """Two processes add to a collection that does not exist yet (a lab's first shared upload),
    round after round: both land every time (benchmarks/bench_pg_first_ingest.py measures 20 rounds)."""
    library = Library(store=pg_url)
    for r in range(3):
        name = f"first upload {r}"
        children = [subprocess.Popen([sys.executable, "-m", "rag_core", "--store", pg_url, "ingest", name,
                                      str(pdf_dir / pdf), "--no-embed", "--json"], env=ENV, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True) for pdf in (SMALL, OTHER)]
        for child in children:
            out, err = child.communicate(timeout=600)
            assert child.returncode == 0, err[-3000:]
            assert json.loads(out)["files"][0]["status"] == "ok"
        assert sorted(d["source"] for d in library.documents(name)) == sorted([SMALL, OTHER])
        assert library.check(name).ok


def test_a_server_lost_right_after_a_commit_is_reported_as_such(tmp_path, pdf_dir, monkeypatch, capsys):
    """The documents were committed: the ingest says so and what was left undone, exits 0, and the
    connection pool's retries print nothing."""
    import warnings

    from rag_core.collections.store.postgres.connection import engine

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    server = pgserver.get_server(tmp_path / "pg", cleanup_mode=None)
    url = server.get_uri("postgres")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    pid = server.get_pid()
    committed = []
    real_commit = PostgresStore.commit

    def commit_then_lose_the_server(self, *args, **kwargs):
        version = real_commit(self, *args, **kwargs)
        committed.append(version)
        os.kill(pid, signal.SIGQUIT)  # an immediate shutdown: every connection dies
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        return version

    monkeypatch.setattr(PostgresStore, "commit", commit_then_lose_the_server)
    try:
        assert main(["--store", url, "ingest", "papers", str(pdf_dir / SMALL), "--no-progress"]) == 0
        out, err = capsys.readouterr()
        assert committed == ["v000001"]
        assert re.search(r"^ok\s+" + re.escape(SMALL), out, re.M), out
        assert "were committed (version v000001)" in err and "rag-core embed papers" in err, err
        assert "error connecting" not in err and "Traceback" not in err and err.count("\n") == 1, err
    finally:
        engine(url).close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_check_reports_damage_and_repairs_what_it_can(pg_url, pdf_dir):
    library = Library(store=pg_url)
    library.add_pdfs("c", [pdf_dir / OTHER], compute_embeddings=False)
    assert library.check("c").ok
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE rag_core.files SET data = 'not the pdf'::bytea")
        conn.execute("INSERT INTO rag_core.documents (collection_id, position, doc_id, source, sha256, record, digest, "
                     "vector_key, n_chunks, added_in) SELECT collection_id, 99, 'x', 'x.pdf', sha256, record, digest, "
                     "vector_key, 0, live_version + 5 FROM rag_core.documents d JOIN rag_core.collections c "
                     "ON c.id = d.collection_id")
        conn.execute("UPDATE rag_core.lexical_files SET data = 'x'::bytea WHERE name = 'tfidf_idf.npy'")
    report = library.check("c")
    text = " ".join(report.problems)
    assert not report.ok and "was altered" in text and "newer than the live" in text
    assert "TF-IDF/BM25" in text
    assert search("dark matter", library.load_index("c"), rerank=False)  # fitted again in-process meanwhile
    with psycopg.connect(pg_url) as conn:
        conn.execute("DELETE FROM rag_core.versions")
    assert "no version record" in " ".join(library.check("c").problems)
    assert main(["--store", pg_url, "check-store", "c"]) == 1
    repaired = library.check("c", repair=True)
    assert len(repaired.repaired) == 2, repaired
    after = library.check("c")
    assert len(after.problems) == 1 and "was altered" in after.problems[0]  # an original cannot be made up
    assert [d["source"] for d in library.documents("c")] == [OTHER]  # nothing committed was lost


def test_a_commit_keeps_stored_rows_and_fills_in_vectors_given_for_them(pg_url):
    store = PostgresStore(pg_url)
    store.create("k", {"chunk_size": 1200, "overlap": 200})
    docs = [{"doc_id": f"d{i}", "source": f"d{i}.pdf", "sha256": f"{i:064x}", "pages": 1, "chunks": 2}
            for i in range(3)]
    chunks = [{"text": f"text {i} {j}", "source": f"d{i}.pdf", "doc_id": f"d{i}"} for i in range(3) for j in range(2)]
    with store.writing("k"):
        store.commit("k", documents=docs, chunks=chunks, embeddings=None, dense_mask=None, new_files={})
    ids = rows_of(pg_url, "SELECT id FROM rag_core.documents ORDER BY id")
    vectors = np.eye(6, 8, dtype=np.float32)
    mask = np.array([True, True, False, False, True, True])
    with store.writing("k"):
        store.commit("k", documents=docs, chunks=chunks, embeddings=vectors, dense_mask=mask, new_files={})
    assert rows_of(pg_url, "SELECT id FROM rag_core.documents ORDER BY id") == ids  # the same rows, no copies
    index = store.load_index("k")
    assert index.dense_coverage == (4, 6) and np.array_equal(index.embeddings[mask], vectors[mask])
    # a commit that reorders documents writes new rows, and keeps the given order
    with store.writing("k"):
        store.commit("k", documents=docs[::-1], chunks=chunks[4:] + chunks[2:4] + chunks[:2], embeddings=None,
                     dense_mask=None, new_files={})
    expected = [c["text"] for c in chunks[4:] + chunks[2:4] + chunks[:2]]
    assert [c["text"] for c in store.load_index("k").chunks] == expected
    assert [d["doc_id"] for d in store.read_documents("k")] == ["d2", "d1", "d0"]


# ---------------------------------------------------------------- odd text, names and keys


def test_text_postgres_cannot_hold_round_trips(pg_url):
    """NUL characters, lone surrogates and NaN are stored escaped and come back unchanged."""
    store = PostgresStore(pg_url)
    store.create("odd", {"chunk_size": 1200, "overlap": 200, "embedding_model": "m"})
    texts = ["plain text", "a NUL \x00 inside", "a lone surrogate \ud800 here", "emoji 🧪 and ü"]
    chunks = [{"text": t, "source": "x.pdf", "doc_id": "d1", "doc_chunk": i, "page_label": "\x00iv",
               "page_breaks": [[0, 1]]} for i, t in enumerate(texts)]
    doc = {"doc_id": "d1", "source": "x.pdf", "sha256": "0" * 64, "pages": 1, "chunks": 4, "title": "t\x00"}
    with store.writing("odd"):
        store.commit("odd", documents=[doc], chunks=chunks, embeddings=None, dense_mask=None, new_files={})
        store.write_data("odd", "judgments", {"q\x00": [float("nan"), "\ud800"], "ok": 1})
    index = store.load_index("odd")
    assert index.chunks == chunks and store.read_documents("odd") == [doc]
    value = store.read_data("odd", "judgments")
    assert value["q\x00"][1] == "\ud800" and np.isnan(value["q\x00"][0]) and value["ok"] == 1


def test_names_are_data_never_sql(pg_url):
    library = Library(store=pg_url)
    tricky = "Robert (drop table) -- x+y.z"
    library.create(tricky)
    assert library.names() == [tricky]
    for evil in ("x'; DROP TABLE rag_core.chunks; --", 'a"b', "c;d"):
        with pytest.raises(CollectionError):
            library.create(evil)
    with pytest.raises(ValueError):
        library.store.read_data(tricky, "x'; drop table rag_core.side_data; --")
    library.store.write_data(tricky, "judgments", {"query": "'; DROP TABLE rag_core.collections; --"})
    library.rename(tricky, "plain")
    assert library.names() == ["plain"]
    assert library.store.read_data("plain", "judgments") == {"query": "'; DROP TABLE rag_core.collections; --"}
    assert rows_of(pg_url, "SELECT count(*) FROM rag_core.collections") == [(1,)]


def test_side_data_and_cascading_delete(pg_url, pdf_dir):
    library = Library(store=pg_url)
    library.add_pdfs("c", [pdf_dir / OTHER], compute_embeddings=False)
    with library.store.writing("c"):
        library.store.write_data("c", "snapshots/first", {"metrics": {"ndcg": 0.5}})
    library.delete("c")
    for table in ("collections", "versions", "documents", "chunks", "files", "side_data"):
        assert rows_of(pg_url, f"SELECT count(*) FROM rag_core.{table}") == [(0,)], table


# ---------------------------------------------------------------- dense search through pgvector


def vector_collection(url: str, name: str, *, seed: int, docs: int, text, mask=None):
    """A collection of ``docs`` documents of 100 chunks (``text(d, i)``) with random unit
    vectors (384 dimensions; ``mask``: those that have one): ``(store, vectors)``."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((docs * 100, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = PostgresStore(url)
    store.create(name, {"chunk_size": 1200, "overlap": 200})
    records, chunks = [], []
    for d in range(docs):
        doc_id = f"doc{d:02d}"
        records.append({"doc_id": doc_id, "source": f"{doc_id}.pdf", "sha256": f"{d:064x}", "pages": 1,
                        "chunks": 100})
        chunks += [{"text": text(d, i), "source": f"{doc_id}.pdf", "doc_id": doc_id} for i in range(100)]
    with store.writing(name):
        store.commit(name, documents=records, chunks=chunks, embeddings=vectors, dense_mask=mask, new_files={})
    return store, vectors


def test_hnsw_index_is_used_and_agrees_with_exact_search(pg_url):
    store, vectors = vector_collection(pg_url, "v", seed=7, docs=15, text=lambda d, i: f"chunk {d} {i} words")
    rng, dim = np.random.default_rng(7), 384
    assert store.ensure_ann_index("v", min_chunks=1000)
    plan = "\n".join(store.dense_search("v", vectors[0], 10, explain=True))
    assert "Index Scan using chunks_hnsw_c" in plan, plan
    assert "chunks_hnsw" not in "\n".join(store.dense_search("v", vectors[0], 10, explain=True, exact=True))
    index = store.load_index("v")
    assert np.array_equal(index.embeddings, vectors)
    found = 0
    for q in range(20):
        query = vectors[q * 50] + 0.02 * rng.standard_normal(dim).astype(np.float32)
        query /= np.linalg.norm(query)
        truth = [int(i) for i in np.argsort(-(vectors @ query), kind="stable")[:10]]
        exact = [i for i, _ in store.dense_search("v", query, 10, exact=True)]
        assert set(exact) == set(truth)
        found += len(set(truth) & {i for i, _ in store.dense_search("v", query, 10, ef_search=100)})
    assert found / 200 >= 0.9  # recall@10 of HNSW against exact search


def test_hybrid_search_takes_its_dense_stage_from_the_hnsw_index(pg_url, monkeypatch):
    """Once a collection has its HNSW index, a loaded index's dense stage asks PostgreSQL for the
    nearest rows (no product over every vector in process) and orders them by exact cosines; the
    hybrid list then agrees with the one from the exact product."""
    store, vectors = vector_collection(pg_url, "h", seed=11, docs=15, text=lambda d, i: f"passage {d} {i} shared words")
    rng, n, dim = np.random.default_rng(11), 1500, 384
    assert store.load_index("h").ann is None  # no HNSW index yet: the exact product
    assert store.ensure_ann_index("h", min_chunks=1000)
    index = store.load_index("h")
    assert index.ann is not None and len(index.ann) == n
    asked = []
    real = store.nearest_in_version
    monkeypatch.setattr(store, "nearest_in_version", lambda *a, **k: asked.append(a) or real(*a, **k))
    found = 0
    for q in range(10):
        query = vectors[q * 150 + 7] + 0.02 * rng.standard_normal(dim).astype(np.float32)
        query /= np.linalg.norm(query)
        monkeypatch.setattr(index, "query_vector", lambda _text, _model=None, v=query: v)
        truth = [int(i) for i in np.argsort(-(vectors @ query), kind="stable")[:10]]
        rows, cosines = index.dense_top("passage shared words", 10)
        assert np.allclose(cosines, vectors[rows] @ query, atol=1e-5)  # exact cosines, best first
        assert list(cosines) == sorted(cosines, reverse=True)
        found += len(set(truth) & set(rows.tolist()))
        hybrid = search("passage shared words", index, top=5, cross_encoder_model="")
        graph, index.ann = index.ann, None
        exact = search("passage shared words", index, top=5, cross_encoder_model="")
        index.ann = graph
        assert hybrid[0]["chunk_index"] == exact[0]["chunk_index"]
    assert found / 100 >= 0.9  # recall@10 against the exact product
    assert len(asked) == 20  # every dense stage went through PostgreSQL


def test_with_an_hnsw_index_a_search_reads_only_the_vectors_it_needs(pg_url, monkeypatch):
    """A collection with its HNSW index loads without reading its vectors (issue 21: half of a
    cold load at 100k chunks): hybrid, MMR and dense searches read their candidates' vectors by
    key, and give what the index gives once every vector is read; chunks without a vector stay
    without one."""
    import rag_core.collections.store.postgres.lazy_vectors as lazy_vectors

    rng, n, dim = np.random.default_rng(5), 1200, 384
    mask = np.ones(n, dtype=bool)
    mask[::7] = False  # still being embedded
    store, vectors = vector_collection(pg_url, "lazy", seed=5, docs=12, mask=mask,
                                       text=lambda d, i: f"passage {d} {i} shared words {'rare' if i % 9 == 0 else ''}")
    assert store.ensure_ann_index("lazy", min_chunks=1000)
    reads = []
    real = lazy_vectors.load_vectors
    monkeypatch.setattr(lazy_vectors, "load_vectors", lambda *a, **k: reads.append(a) or real(*a, **k))
    index = store.load_index("lazy")
    assert index.ann is not None and index.has_vectors and index.dense_coverage == (int(mask.sum()), n)
    assert np.array_equal(index.dense_mask, mask)
    query = vectors[300] + 0.05 * rng.standard_normal(dim).astype(np.float32)
    query /= np.linalg.norm(query)
    monkeypatch.setattr(index, "query_vector", lambda _text, _model=None: query)
    by_key = []
    real_by_key = lazy_vectors.vectors_by_key
    monkeypatch.setattr(lazy_vectors, "vectors_by_key", lambda *a, **k: by_key.append(a) or real_by_key(*a, **k))
    top, _ = index.dense_top("q", 10)  # the HNSW candidates come with their vectors: no second query
    assert len(top) == 10 and by_key == []
    rows = np.array([0, 1, 7, 300, 1199])
    cosines = index.dense_at("q", rows)
    assert len(by_key) == 1  # the rows not among the candidates: one query
    assert np.isnan(cosines[[0, 2]]).all()  # rows 0 and 7 have no vector
    assert np.allclose(cosines[[1, 3, 4]], vectors[[1, 300, 1199]] @ query, atol=1e-5)
    lazy = [search("passage rare words", index, top=8, cross_encoder_model=""),
            search("passage rare words", index, top=8, cross_encoder_model="", mmr_lambda=0.5),
            search_dense("passage rare words", index, top=8)]
    assert reads == []  # no search read every vector
    assert np.array_equal(index.embeddings[mask], vectors[mask]) and len(reads) == 1
    eager = [search("passage rare words", index, top=8, cross_encoder_model=""),
             search("passage rare words", index, top=8, cross_encoder_model="", mmr_lambda=0.5),
             search_dense("passage rare words", index, top=8)]
    for got, want in zip(lazy, eager, strict=True):
        assert [r["chunk_index"] for r in got] == [r["chunk_index"] for r in want]
        assert np.allclose([r["score"] for r in got], [r["score"] for r in want], atol=1e-5)
    assert all(mask[r["chunk_index"]] for r in lazy[2])
    again = store.load_index("lazy")  # the process's cache: the vectors read once
    assert again.embeddings is index.embeddings and len(reads) == 1


def test_a_large_commit_refreshes_the_planner_statistics(pg_url):
    """Right after a bulk commit the planner took the tables for nearly empty (autovacuum had not
    come round yet) and load_index ran a nested loop over every chunk per document: 17 s cold
    at 100k chunks, 6 s once the statistics are fresh."""
    started = rows_of(pg_url, "SELECT now()")[0][0]
    store = PostgresStore(pg_url)
    store.create("stats", {"chunk_size": 1200, "overlap": 200})
    docs, chunks = [], []
    for d in range(50):
        doc_id = f"s{d:03d}"
        docs.append({"doc_id": doc_id, "source": f"{doc_id}.pdf", "sha256": f"{d + 500:064x}", "pages": 1,
                     "chunks": 50})
        chunks += [{"text": f"statistics chunk {d} {i}", "source": f"{doc_id}.pdf", "doc_id": doc_id}
                   for i in range(50)]
    with store.writing("stats"):
        store.commit("stats", documents=docs, chunks=chunks, embeddings=None, dense_mask=None, new_files={})
    [(analyzed,)] = rows_of(pg_url, "SELECT last_analyze FROM pg_stat_user_tables "
                                    "WHERE schemaname = 'rag_core' AND relname = 'chunks'")
    assert analyzed is not None and analyzed >= started
    assert len(store.load_index("stats").chunks) == 2500


# ---------------------------------------------------------------- moving collections


def test_copy_a_collection_to_postgres_and_back(paper_library, pg_url, tmp_path, capsys):
    folder_store = str(paper_library.root)
    assert main(["copy", "papers", "--from", folder_store, "--to", pg_url]) == 0
    out = capsys.readouterr().out
    assert "nothing was lost" in out and "DIFFERENT" not in out
    pg = Library(store=pg_url)
    assert [d["source"] for d in pg.documents("papers")] == [d["source"] for d in paper_library.documents("papers")]
    with pg.store.writing("papers"):
        pg.store.write_data("papers", "judgments", [{"query": "q", "doc": "d", "grade": 2}])
    back = tmp_path / "back"
    assert main(["--store", pg_url, "copy", "papers", "returned", "--to", str(back), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and all(part["same"] for part in report["parts"])
    returned = Library(store=str(back))
    assert returned.store.read_data("returned", "judgments") == [{"query": "q", "doc": "d", "grade": 2}]
    assert returned.load_index("returned").chunks == paper_library.load_index("papers").chunks
    assert main(["copy", "papers", "--from", folder_store, "--to", pg_url]) == 1  # exists: refused
    assert "already exists" in capsys.readouterr().err


# ---------------------------------------------------------------- the local server


def test_serve_db_prints_a_working_store_line(tmp_path):
    child = subprocess.Popen([sys.executable, "-m", "rag_core", "serve-db", "--data", str(tmp_path / "db")], env=ENV,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        deadline = time.time() + 120
        while not line.startswith("RAG_CORE_STORE="):
            assert time.time() < deadline and child.poll() is None, child.stderr.read()
            line = child.stdout.readline()
        url = line.strip().split("=", 1)[1]
        library = Library(store=url)
        library.create("shared")
        assert Library(store=url).names() == ["shared"]
        library.store.close()
    finally:
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    assert child.returncode == 0 and "Stopped." in out, err


# ---------------------------------------------------------------- two app instances, one library


@pytest.mark.slow
def test_two_app_instances_share_one_postgres(pg_url, pdf_dir, tmp_path):
    """A PDF uploaded in the app on one port is found by the app on another port (a real browser)."""
    from rag_core.testing import CHROMIUM, CHROMIUM_ARGS, free_port, stop_server, wait_healthy
    from tests.app.support import quote_from, settled
    from tests.app.test_e2e_browser import compare

    if not CHROMIUM.is_file():
        pytest.skip("Chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    pdf = pdf_dir / SMALL
    phrase = quote_from(pdf, page=1)
    servers, urls = [], []
    for n in range(2):
        port = free_port()
        env = {**ENV, "RAG_CORE_STORE": pg_url, "RAG_CORE_DATA_DIR": str(tmp_path / f"data{n}")}
        servers.append(subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port",
             str(port), "--browser.gatherUsageStats", "false"], cwd=REPO, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        urls.append(f"http://127.0.0.1:{port}")
    try:
        for url, server in zip(urls, servers, strict=True):
            wait_healthy(url, server)
        expect = sync_api.expect
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                first = browser.new_page()
                first.goto(f"{urls[0]}/collections")
                expect(first.get_by_role("heading", name="Collections")).to_be_visible(timeout=120_000)
                first.get_by_label("Name").fill("lab library")
                first.get_by_role("button", name="Create collection").click()
                expect(first.get_by_text("Created collection “lab library”")).to_be_visible(timeout=60_000)
                first.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files([str(pdf)])
                settled(first, expect)  # the upload's rerun drawn: no stale disabled copy of the button
                first.get_by_role("button", name="Add to collection").click()
                expect(first.get_by_text("Last upload: 1 of 1 file(s) added")).to_be_visible(timeout=300_000)

                second = browser.new_page()
                second.goto(f"{urls[1]}/compare")
                expect(second.get_by_role("heading", name="Compare searches")).to_be_visible(timeout=120_000)
                compare(second, expect, "ultralight bosonic dark matter", phrase=phrase)
                expect(second.get_by_text(re.compile(r"[1-9]\d* places? in 1 document"))).to_be_visible(
                    timeout=60_000)
            finally:
                browser.close()
    finally:
        for server in servers:
            stop_server(server, 30)
    assert [d["source"] for d in Library(store=pg_url).documents("lab library")] == [SMALL]
