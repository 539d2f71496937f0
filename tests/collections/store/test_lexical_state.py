"""One file format for the fitted TF-IDF and BM25, in an index folder and in PostgreSQL; the
row-major matrix older PostgreSQL libraries (and index format 1) hold is still read."""

from __future__ import annotations

import hashlib
import io

import numpy as np
import psycopg
import pytest

from rag_core.collections.library import Library
from rag_core.collections.store.index_files import save_index
from rag_core.collections.store.lexical_state import lexical_state_bytes, lexical_state_from_bytes
from rag_core.index.build import build_index
from rag_core.index.postings import Postings
from rag_core.retrieval.ranking import search_lexical

OTHER = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages
QUERIES = ["traversable wormhole negative null energy", "zero-noise extrapolation", "custom font encoding",
           "cross-encoders rank passages"]


@pytest.fixture(scope="module")
def lexical_index(worked_example):
    return build_index(worked_example, compute_embeddings=False)


def old_format(files: dict[str, bytes], n_chunks: int = 3) -> dict[str, bytes]:
    """The files as the PostgreSQL store wrote them before: the matrix by row in one .npz."""
    import scipy.sparse as sp

    state = lexical_state_from_bytes(files, n_chunks=n_chunks)
    buffer = io.BytesIO()
    sp.save_npz(buffer, sp.csr_matrix(state.matrix.to_scipy()), compressed=False)
    old = {k: v for k, v in files.items() if not k.startswith("tfidf_csc_")}
    return {**old, "tfidf_matrix.npz": buffer.getvalue()}


def test_an_index_folder_and_the_database_hold_the_same_files(lexical_index, tmp_path):
    files = lexical_state_bytes(lexical_index)
    assert {"tfidf_vocabulary.json", "tfidf_idf.npy", "tfidf_csc_data.npy", "tfidf_csc_indices.npy",
            "tfidf_csc_indptr.npy"} <= set(files) and any(name.startswith("bm25/") for name in files)
    save_index(lexical_index, tmp_path / "index")
    for name, data in files.items():
        assert (tmp_path / "index" / name).read_bytes() == data, name


@pytest.mark.parametrize("written", ["now", "before"])
def test_the_state_reads_back_and_ranks_the_same(lexical_index, written):
    files = lexical_state_bytes(lexical_index)
    if written == "before":
        files = old_format(files)
    vectorizer, matrix, bm25 = lexical_state_from_bytes(files, n_chunks=len(lexical_index.chunks))
    assert vectorizer.vocabulary_ == lexical_index.vectorizer.vocabulary_
    if written == "now":  # by column, read without SciPy
        assert isinstance(matrix, Postings)
        matrix = matrix.to_scipy()
    assert (matrix != lexical_index.matrix).nnz == 0
    for query in QUERIES:
        assert np.array_equal(bm25.scores(query), lexical_index.bm25.scores(query))


def test_unexpected_or_mismatched_files_are_refused(lexical_index):
    files = lexical_state_bytes(lexical_index)
    for name in ("../escape", "bm25/../x", "bm25/.hidden", "pickle.pkl"):
        with pytest.raises(ValueError, match="unexpected"):
            lexical_state_from_bytes({**files, name: b"x"}, n_chunks=3)
    with pytest.raises(ValueError, match="do not exist"):
        lexical_state_from_bytes(files, n_chunks=2)
    with pytest.raises(ValueError, match="does not match"):
        lexical_state_from_bytes(old_format(files), n_chunks=4)


def test_a_postgres_library_written_by_the_old_code_keeps_working(pg_url, pdf_dir, monkeypatch):
    """Its lexical_files hold tfidf_matrix.npz: they are read (not fitted again), search ranks as
    before, check-store finds nothing wrong, and the next commit writes the new files."""
    import rag_core.collections.store.postgres.cache as cache

    library = Library(store=pg_url)
    library.add_pdfs("c", [pdf_dir / OTHER], compute_embeddings=False)
    before = library.load_index("c")
    expected = {q: search_lexical(q, before, 10, method=m) for q in QUERIES for m in ("tfidf", "bm25")}
    with psycopg.connect(pg_url) as conn:
        (collection_id, version), = conn.execute(
            "SELECT collection_id, version FROM rag_core.lexical_files GROUP BY 1, 2").fetchall()
        files = {name: bytes(data) for name, data in conn.execute(
            "SELECT name, string_agg(data, ''::bytea ORDER BY part) FROM rag_core.lexical_files GROUP BY name")}
        conn.execute("DELETE FROM rag_core.lexical_files")
        for name, data in old_format(files, len(before.chunks)).items():
            conn.execute("INSERT INTO rag_core.lexical_files (collection_id, version, name, part, data, sha256) "
                         "VALUES (%s, %s, %s, 0, %s, %s)",
                         (collection_id, version, name, data, hashlib.sha256(data).hexdigest()))
    cache.lexical_cache.clear()  # as a new process would start

    def no_fitting(*_args, **_kwargs):
        raise AssertionError("the stored TF-IDF/BM25 were fitted again instead of read")

    monkeypatch.setattr(cache, "fit_lexical", no_fitting)
    after = library.load_index("c")
    assert {q: search_lexical(q, after, 10, method=m) for q in QUERIES for m in ("tfidf", "bm25")} == expected
    assert library.check("c").ok
    monkeypatch.undo()
    library.add_pdfs("c", [pdf_dir / "awkward_scanned_ocr_layer_zfn_a_1999_solitary_waves.pdf"],
                     compute_embeddings=False)
    with psycopg.connect(pg_url) as conn:
        names = {name for (name,) in conn.execute(
            "SELECT DISTINCT name FROM rag_core.lexical_files WHERE version = (SELECT live_version FROM "
            "rag_core.collections)")}
    assert "tfidf_csc_data.npy" in names and "tfidf_matrix.npz" not in names


def test_a_new_process_reads_the_stored_lexical_files_from_its_disk_copy(pg_url, pdf_dir, monkeypatch, tmp_path):
    """The first load fetches the stored TF-IDF/BM25 and keeps a disk copy named by their
    checksums; a new process reads the copy instead of fetching (same rankings); a damaged copy
    is noticed, removed and fetched again; old copies beyond the limit are removed."""
    import rag_core.collections.store.postgres.cache as cache
    import rag_core.collections.store.postgres.disk_copy as disk_copy
    import rag_core.collections.store.postgres.store as pg_store

    monkeypatch.setenv("RAG_CORE_PG_FILE_CACHE", str(tmp_path / "files"))
    library = Library(store=pg_url)
    library.add_pdfs("c", [pdf_dir / OTHER], compute_embeddings=False)
    cache.lexical_cache.clear()
    first = library.load_index("c")
    expected = {q: search_lexical(q, first, 10, method=m) for q in QUERIES for m in ("tfidf", "bm25")}
    copies = list((tmp_path / "files" / "lexical").iterdir())
    assert len(copies) == 1 and (copies[0] / "tfidf_csc_data.npy").is_file()

    fetched = []
    real_fetch = pg_store.stored_lexical_files
    monkeypatch.setattr(pg_store, "stored_lexical_files", lambda *a: fetched.append(1) or real_fetch(*a))
    monkeypatch.setattr(cache, "fit_lexical", lambda *a, **k: pytest.fail("fitted instead of read"))
    cache.lexical_cache.clear()  # as a new process would start
    again = library.load_index("c")
    assert fetched == [] and isinstance(again.tfidf_matrix.data, np.memmap)  # read from the copy, mapped
    assert {q: search_lexical(q, again, 10, method=m) for q in QUERIES for m in ("tfidf", "bm25")} == expected

    (copies[0] / "tfidf_csc_indptr.npy").write_bytes(b"garbled")  # a damaged copy
    cache.lexical_cache.clear()
    third = library.load_index("c")
    assert fetched == [1]
    assert {q: search_lexical(q, third, 10, method=m) for q in QUERIES for m in ("tfidf", "bm25")} == expected
    assert np.load(copies[0] / "tfidf_csc_indptr.npy").ndim == 1  # made again, whole

    monkeypatch.setattr(disk_copy, "PG_LEXICAL_DISK_ENTRIES", 1)
    library.add_pdfs("c", [pdf_dir / "awkward_scanned_ocr_layer_zfn_a_1999_solitary_waves.pdf"],
                     compute_embeddings=False)
    cache.lexical_cache.clear()
    library.load_index("c")
    assert [p.name for p in (tmp_path / "files" / "lexical").iterdir()] != [copies[0].name]
    assert len(list((tmp_path / "files" / "lexical").iterdir())) == 1
