"""Index folders: pickle-free round trip, damaged folders, the legacy opt-in."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from rag_core import IndexFormatError, UnsafeIndexError, build_index, load_index, save_index, search, search_exact

QUERY = "does information leak through a wormhole"


@pytest.fixture()
def saved(tmp_path, worked_example_index):
    folder = tmp_path / "index"
    save_index(worked_example_index, folder)
    return folder


def test_round_trip_gives_the_same_results(saved, worked_example_index):
    loaded = load_index(saved)
    for rerank in (False, True):
        before = search(QUERY, worked_example_index, top=3, rerank=rerank)
        after = search(QUERY, loaded, top=3, rerank=rerank)
        assert [(r["source"], round(r["score"], 6), round(r["cosine"], 6)) for r in before] == \
               [(r["source"], round(r["score"], 6), round(r["cosine"], 6)) for r in after]
    assert search_exact("null energy", loaded)[0]["source"] == "gao_wormhole.pdf"
    assert np.allclose(np.asarray(loaded.embeddings), worked_example_index.embeddings)


def test_files_are_explicit_and_never_pickle(saved):
    names = {p.name for p in saved.iterdir()}
    assert {"manifest.json", "chunk_text.bin", "chunk_offsets.npy", "chunk_columns.npy", "chunk_strings.json",
            "tfidf_vocabulary.json", "tfidf_idf.npy", "tfidf_csc_data.npy", "tfidf_csc_indices.npy",
            "tfidf_csc_indptr.npy", "embeddings.npy", "bm25"} <= names
    assert not any(p.suffix in {".pkl", ".pickle", ".joblib"} for p in saved.rglob("*"))
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["format_version"] == 2
    assert manifest["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    for npy in saved.rglob("*.npy"):
        np.load(npy, allow_pickle=False)  # raises if any array needed pickle


def test_save_over_an_existing_index_replaces_it(tmp_path, worked_example):
    folder = tmp_path / "idx"
    save_index(build_index(worked_example[:1], compute_embeddings=False), folder)
    save_index(build_index(worked_example, compute_embeddings=False), folder)
    assert len(load_index(folder).chunks) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # no leftovers


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / "manifest.json").write_text("{not json"), "not valid JSON"),
        (lambda f: (f / "tfidf_idf.npy").unlink(), "damaged"),
        (lambda f: (f / "chunk_text.bin").write_bytes(b"x"), "damaged"),
        (lambda f: (f / "chunk_columns.npy").write_bytes(b"garbage"), "damaged"),
        (lambda f: (f / "embeddings.npy").write_bytes(b"garbage"), "damaged"),
        (lambda f: (f / "manifest.json").unlink(), "no manifest.json"),
        (lambda f: (f / "manifest.json").write_text(json.dumps({"format": "rag_core.index", "format_version": 99})),
         "version 99"),
    ],
)
def test_damaged_folders_give_a_clear_error(saved, damage, message):
    damage(saved)
    with pytest.raises(IndexFormatError, match=message):
        load_index(saved)


class Boom:
    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path('PWNED').write_text('x')",))


def test_old_pickle_folders_are_not_unpickled_without_trust(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "chunks.json").write_text(json.dumps([{"text": "t", "source": "s"}]))
    (folder / "vectorizer.pkl").write_bytes(pickle.dumps(Boom()))
    (folder / "matrix.pkl").write_bytes(pickle.dumps(Boom()))
    with pytest.raises(UnsafeIndexError, match="trust_pickle=True"):
        load_index(folder)
    assert not (tmp_path / "PWNED").exists()
    # even when trusted, an old pickle may only build what an index holds
    with pytest.raises(UnsafeIndexError, match=r"refusing to load builtins\.exec"):
        load_index(folder, trust_pickle=True)
    assert not (tmp_path / "PWNED").exists()


def test_old_format_folder_with_explicit_trust(tmp_path, worked_example_index):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "chunks.json").write_text(json.dumps(worked_example_index.chunks))
    (folder / "vectorizer.pkl").write_bytes(pickle.dumps(worked_example_index.vectorizer))
    (folder / "matrix.pkl").write_bytes(pickle.dumps(worked_example_index.matrix))
    np.save(folder / "embeddings.npy", worked_example_index.embeddings)
    index = load_index(folder, trust_pickle=True)
    assert search(QUERY, index, rerank=False)[0]["source"] == "gao_wormhole.pdf"


def test_indexes_of_format_1_still_load(saved, worked_example_index):
    """Folders written before chunks and the TF-IDF matrix were stored by column (format 1)."""
    import scipy.sparse as sp

    manifest = json.loads((saved / "manifest.json").read_text())
    chunks = list(load_index(saved).chunks)
    with open(saved / "chunks.jsonl", "w", encoding="utf-8") as handle:
        for chunk in chunks:
            handle.write(json.dumps(chunk) + "\n")
    sp.save_npz(saved / "tfidf_matrix.npz", sp.csr_matrix(worked_example_index.matrix), compressed=False)
    for name in ("chunk_text.bin", "chunk_offsets.npy", "chunk_columns.npy", "chunk_strings.json",
                 "chunk_breaks.npy", "chunk_break_offsets.npy", "tfidf_csc_data.npy", "tfidf_csc_indices.npy",
                 "tfidf_csc_indptr.npy"):
        (saved / name).unlink()
    manifest.update(format_version=1)
    del manifest["files"]
    (saved / "manifest.json").write_text(json.dumps(manifest))
    loaded = load_index(saved)
    assert isinstance(loaded.chunks, list) and loaded.chunks == chunks
    assert search(QUERY, loaded, rerank=False)[0]["source"] == "gao_wormhole.pdf"
