"""Fixtures of the relevance lab's tests: a collection of two real PDFs (TF-IDF and BM25 only),
built once and copied for each test, on the data folder or on PostgreSQL."""

from __future__ import annotations

import shutil

import pytest

from tests.support import SMALL_PDFS

DPR, DARK = SMALL_PDFS[1], SMALL_PDFS[0]


@pytest.fixture(scope="session")
def lab_template(tmp_path_factory, pdf_dir):
    """A data folder with collection "papers": two real PDFs, no dense vectors (built once)."""
    from rag_core.collections.library import Library

    folder = tmp_path_factory.mktemp("lab-template") / "data"
    report = Library(folder).add_pdfs("papers", [pdf_dir / DPR, pdf_dir / DARK], compute_embeddings=False)
    assert [f.status for f in report.files] == ["ok", "ok"], report.files
    return folder


@pytest.fixture()
def lab_library(tmp_path, lab_template):
    """A fresh copy of the template's data folder, for one test."""
    from rag_core.collections.library import Library

    shutil.copytree(lab_template, tmp_path / "data")
    return Library(tmp_path / "data")


@pytest.fixture()
def lab_on_store(tmp_path, lab_template, store_location):
    """The template's collection on either store (``store_kind``): copied into a data folder, or
    into a fresh PostgreSQL database."""
    from rag_core.collections.library import Library
    from rag_core.collections.store.folder.store import FolderStore

    if not store_location.startswith("postgresql://"):
        shutil.copytree(lab_template, store_location)
        return Library(store=store_location)
    library = Library(store=store_location)
    source, target = FolderStore(lab_template), library.store  # the same documents and chunks, committed
    documents = source.read_documents("papers")
    settings = source.read_settings("papers")
    target.create("papers", {k: settings[k] for k in ("chunk_size", "overlap", "embedding_model")})
    originals = {d["sha256"]: source.read_pdf("papers", d["sha256"]) for d in documents}
    with target.writing("papers"):
        target.commit("papers", documents=documents, chunks=list(source.load_index("papers").chunks), embeddings=None,
                      dense_mask=None, new_files=originals)
    return library
