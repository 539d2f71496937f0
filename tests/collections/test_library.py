"""Named collections: names, duplicates, incremental embedding, crashes and locks.

Every test that is not about the folder store's files runs against both backends (the
``store_kind`` fixture): the data folder and PostgreSQL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from rag_core.collections.library import Library, validate_collection_name
from rag_core.errors import CollectionError, CollectionExistsError, CollectionNotFoundError
from rag_core.retrieval.ranking import search
from tests.support import REPO, store_location_of

SMALL = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"  # 4 pages
OTHER = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages
SCAN = "awkward_scanned_no_text_huckfinn_page22.pdf"


@pytest.fixture()
def library(tmp_path, store_location):
    return Library(tmp_path / "data", store=store_location)


@pytest.fixture()
def folder_library(tmp_path):
    return Library(tmp_path / "data")


@pytest.mark.parametrize("name", ["..", "../escape", "a/b", "a\\b", "x\x00y", "", "   ", ".hidden",
                                  "x" * 101, "con", "trailing."])
def test_dangerous_names_are_refused_and_nothing_is_written(library, name):
    with pytest.raises(CollectionError):
        library.create(name)
    assert library.names() == []
    assert not library.root.exists() or not any(library.root.rglob("*.json"))


def test_good_names():
    for name in ["Wormholes", "qem 2021", "ml_papers-v2", "Ünïcode (draft)"]:
        assert validate_collection_name(f"  {name} ") == name


def test_create_list_rename_delete(library):
    library.create("alpha", chunk_size=800, overlap=100)
    library.create("beta")
    with pytest.raises(CollectionExistsError):
        library.create("alpha")
    assert [i.name for i in library.list()] == ["alpha", "beta"]
    assert library.info("alpha").chunk_size == 800
    library.rename("alpha", "gamma")
    assert library.names() == ["beta", "gamma"]
    assert library.settings("gamma")["name"] == "gamma"
    with pytest.raises(CollectionExistsError):
        library.rename("beta", "gamma")
    library.delete("beta")
    assert library.names() == ["gamma"]
    with pytest.raises(CollectionNotFoundError, match="beta"):
        library.delete("beta")


def test_names_are_unique_without_regard_to_case(library):
    library.create("papers")
    with pytest.raises(CollectionExistsError, match="'papers'"):
        library.create("PAPERS")
    library.create("other")
    with pytest.raises(CollectionExistsError):
        library.rename("other", "Papers")
    library.rename("papers", "Papers")  # a change of case of its own name is fine
    assert library.names() == ["Papers", "other"]
    with pytest.raises(CollectionNotFoundError, match="Did you mean 'Papers'"):
        library.documents("papers")


@pytest.mark.parametrize(("size", "overlap"), [(100, 10), (30_000, 10), (1000, 600), (1000, -1), ("big", 1)])
def test_chunk_settings_are_checked_in_one_place(library, size, overlap):
    with pytest.raises(CollectionError):
        library.create("c", chunk_size=size, overlap=overlap)
    assert library.names() == []


def test_ingest_report_duplicates_and_incremental_embedding(library, pdf_dir, monkeypatch):
    from rag_core.models import embedding as dense

    embedded = []
    real_encode = dense.encode_passages

    def counting_encode(model, texts, **kwargs):
        embedded.append(len(texts))
        return real_encode(model, texts, **kwargs)

    monkeypatch.setattr(dense, "encode_passages", counting_encode)
    report = library.add_pdfs("papers", [pdf_dir / SMALL, pdf_dir / SCAN], ocr="off")
    statuses = {f.source: f.status for f in report.files}
    assert statuses == {SMALL: "ok", SCAN: "no_text"}  # the scan is read with OCR on: tests/collections/ingest
    ok = report.files[0]
    assert ok.pages == 4 and ok.chunks > 0
    assert "OCR was off" in report.files[1].reason
    first_chunks = library.info("papers").chunks
    assert sum(embedded) == first_chunks
    assert report.embedding.complete and report.embedding.done == first_chunks

    # the same bytes under another name are recognised by their hash
    copy = ("renamed copy.pdf", (pdf_dir / SMALL).read_bytes())
    report = library.add_pdfs("papers", [copy, pdf_dir / OTHER])
    statuses = {f.source: f.status for f in report.files}
    assert statuses == {"renamed copy.pdf": "duplicate", OTHER: "ok"}
    # only the new document's chunks were embedded
    assert sum(embedded) == first_chunks + report.chunks_added
    index = library.load_index("papers")
    assert len(index.chunks) == first_chunks + report.chunks_added
    assert index.embeddings.shape[0] == len(index.chunks) and index.dense_mask is None
    assert all(c["page_start"] >= 1 for c in index.chunks)
    top = search("ultralight bosonic dark matter in the CMB", index, top=1)[0]
    assert top["source"] == SMALL and top["page_start"] >= 1

    removed = library.remove_documents("papers", [SMALL])
    assert removed == [SMALL]
    index = library.load_index("papers")
    assert {c["source"] for c in index.chunks} == {OTHER}
    assert sum(embedded) == first_chunks + report.chunks_added  # removing re-embeds nothing
    assert library.pdf_path("papers", OTHER).is_file()
    with pytest.raises(CollectionError, match="Not in collection") as caught:
        library.remove_documents("papers", ["nope.pdf"])
    assert OTHER not in str(caught.value)  # says how to list them instead of printing them all


def test_searchable_before_the_vectors_exist(library, pdf_dir):
    """Lexical and exact search work as soon as a file is committed; dense fills in behind."""
    report = library.add_pdfs("c", [pdf_dir / SMALL], embed="none")
    assert report.files[0].status == "ok" and report.searchable_after_s is not None
    index = library.load_index("c")
    assert index.embeddings is None and index.dense_coverage == (0, len(index.chunks))
    assert search("ultralight bosonic dark matter", index, rerank=False)[0]["source"] == SMALL
    status = library.embedding_status("c")
    assert (status.done, status.total, status.complete) == (0, len(index.chunks), False)

    # a second document; then the vectors of both are computed and folded into a version
    library.add_pdfs("c", [pdf_dir / OTHER], embed="none")
    version = library.version("c")
    status = library.embed_pending("c")
    assert status.complete and status.total == library.info("c").chunks
    assert library.version("c") != version  # folded into a new version
    index = library.load_index("c")
    assert index.dense_mask is None and index.embeddings.shape == (len(index.chunks), 384)
    if library.store.kind == "folder":
        assert not list((library.root / "collections" / "c" / "vectors").glob("*.npy"))


def test_vectors_written_so_far_are_used(library, pdf_dir, monkeypatch):
    """A run stopped after one document keeps that document's vectors; the next run resumes."""
    from rag_core.collections.ingest.embedding import embed_pending

    library.add_pdfs("c", [pdf_dir / SMALL, pdf_dir / OTHER], embed="none")
    stop = threading.Event()
    real_write = library.store.write_vectors

    def write_then_stop(name, key, vectors):
        real_write(name, key, vectors)
        stop.set()

    monkeypatch.setattr(library.store, "write_vectors", write_then_stop)
    monkeypatch.setattr(library.store, "fold_in_vectors", lambda name: None)  # as if killed before folding
    embed_pending(library.store, "c", stop=stop)
    index = library.load_index("c")
    done, total = index.dense_coverage
    assert 0 < done < total
    rows = search("ultralight bosonic dark matter", index, top=3)
    assert rows and rows[0]["dense_coverage"] == [done, total]
    monkeypatch.undo()
    assert library.embed_pending("c").complete


def test_background_embedding(library, pdf_dir):
    from rag_core.collections.ingest.embedding import wait_for_background_embedding

    report = library.add_pdfs("c", [pdf_dir / OTHER], embed="background")
    assert report.files[0].status == "ok"
    assert wait_for_background_embedding(library.store, "c", timeout=300)
    assert library.embedding_status("c").complete


def test_a_bad_file_never_stops_the_others(library, pdf_dir, tmp_path):
    not_pdf = tmp_path / "notes.pdf"
    not_pdf.write_text("just some text, not a PDF")
    truncated = tmp_path / "cut.pdf"
    truncated.write_bytes((pdf_dir / SMALL).read_bytes()[:20000])
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    report = library.add_pdfs("c", [not_pdf, truncated, tmp_path / "missing.pdf", empty, pdf_dir / OTHER],
                              compute_embeddings=False)
    statuses = [f.status for f in report.files]
    assert statuses == ["not_pdf", "damaged", "unreadable_file", "empty", "ok"]
    assert str(tmp_path / "missing.pdf") in report.files[2].reason  # the path as given, not just its name
    assert library.info("c").documents == 1


def test_an_ingest_that_adds_nothing_leaves_no_collection_behind(library, tmp_path):
    bad = tmp_path / "bad.pdf"
    bad.write_text("not a pdf")
    report = library.add_pdfs("new one", [bad], compute_embeddings=False)
    assert report.files[0].status == "not_pdf" and report.collection_removed
    assert library.names() == []
    library.create("kept")  # a collection that existed before stays, even if nothing was added
    library.add_pdfs("kept", [bad], compute_embeddings=False)
    assert library.names() == ["kept"]


def test_first_ingests_racing_to_make_one_collection_all_land(tmp_path, store_location):
    """A lab's first shared upload: several ingests make the same new collection at the same
    moment, many times over; exactly one makes each, and none fails for it."""
    threads, rounds = 6, 12
    libraries = [Library(tmp_path / "data", store=store_location) for _ in range(threads)]
    barrier = threading.Barrier(threads)
    made: dict[int, list[bool]] = {r: [] for r in range(rounds)}
    errors: list[str] = []

    def worker(k: int) -> None:
        for r in range(rounds):
            barrier.wait()
            try:
                made[r].append(libraries[k].create_for_ingest(f"shared {r}"))
            except Exception as exc:  # noqa: BLE001 - the test counts them
                errors.append(f"round {r}: {type(exc).__name__}: {exc}")

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=300)
    assert errors == []
    assert all(sorted(made[r]) == [False] * (threads - 1) + [True] for r in range(rounds)), made
    assert libraries[0].names() == sorted(f"shared {r}" for r in range(rounds))
    libraries[0].create("Papers")
    with pytest.raises(CollectionExistsError):  # a clash in case only is still refused
        libraries[0].create_for_ingest("papers")


def test_uploads_are_name_and_bytes_pairs(library, pdf_dir):
    data = (pdf_dir / OTHER).read_bytes()
    report = library.add_pdfs("c", [("../../evil/name.pdf", data)], compute_embeddings=False)
    assert report.files[0].status == "ok" and report.files[0].source == "name.pdf"

    class Upload:  # a Streamlit UploadedFile look-alike is no longer accepted
        name = "x.pdf"

        def getvalue(self):
            return data

    with pytest.raises(TypeError, match=r"\(name, bytes\)"):
        library.add_pdfs("c", [Upload()])


def test_old_format_collections_still_load(folder_library, pdf_dir):
    """Collections written before segments and checksums (documents.json and the index files of
    format 1 in the version folder, no version.json) load, and take new documents."""
    library = folder_library
    import json
    import shutil

    import scipy.sparse as sp

    library.add_pdfs("c", [pdf_dir / OTHER], compute_embeddings=False)
    collection = library.root / "collections" / "c"
    folder = collection / "versions" / library.version("c")
    record = json.loads((folder / "version.json").read_text())
    index = library.load_index("c")
    segment = collection / "segments" / record["segments"][0]["id"]
    for name in ("tfidf_vocabulary.json", "tfidf_idf.npy"):
        shutil.copy(segment / name, folder / name)
    shutil.copytree(segment / "bm25", folder / "bm25")
    with open(folder / "chunks.jsonl", "w", encoding="utf-8") as handle:
        for chunk in index.chunks:
            handle.write(json.dumps(chunk) + "\n")
    sp.save_npz(folder / "tfidf_matrix.npz", sp.csr_matrix(index.matrix), compressed=False)
    manifest = json.loads((segment / "manifest.json").read_text())
    manifest.update(format_version=1)
    del manifest["files"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "documents.json").write_text(json.dumps(record["documents"]))
    (folder / "version.json").unlink()
    shutil.rmtree(collection / "segments")
    assert library.info("c").documents == 1
    assert len(library.load_index("c").chunks) == library.info("c").chunks
    assert search("custom font", library.load_index("c"), rerank=False)[0]["source"] == OTHER
    library.add_pdfs("c", [pdf_dir / SMALL], compute_embeddings=False)  # and take new documents
    assert library.info("c").documents == 2 and library.check("c").ok


KILLER = textwrap.dedent("""
    import os, signal, sys
    import rag_core.collections.store.folder.segments as segments
    from rag_core.collections.library import Library
    stage = sys.argv[1]
    if stage == "commit":
        def half_written(index, target):
            (target / "chunks.jsonl").write_text("partial")
            os.kill(os.getpid(), signal.SIGKILL)
        segments.write_index_files = half_written
        if {location!r}.startswith("postgresql://"):
            import rag_core.collections.store.postgres.commit as commit
            real = commit.insert_chunks
            def insert_then_die(*args, **kwargs):
                real(*args, **kwargs)  # rows written inside the commit's transaction...
                os.kill(os.getpid(), signal.SIGKILL)  # ...which never ends
            commit.insert_chunks = insert_then_die
    def progress(event):
        if stage == "embed" and event.stage == "embed":
            os.kill(os.getpid(), signal.SIGKILL)
    Library(store={location!r}).add_pdfs("c", [{pdf!r}], progress=progress)
""")


def run_killer(library, pdf: Path, stage: str) -> None:
    script = KILLER.format(location=store_location_of(library), pdf=str(pdf))
    result = subprocess.run([sys.executable, "-c", script, stage], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == -9, result.stderr


def test_kill_9_during_commit_keeps_the_previous_version(library, pdf_dir):
    library.add_pdfs("c", [pdf_dir / OTHER])
    before = library.version("c")
    chunks_before = len(library.load_index("c").chunks)
    run_killer(library, pdf_dir / SMALL, "commit")
    assert library.version("c") == before
    index = library.load_index("c")
    assert len(index.chunks) == chunks_before and index.dense_mask is None
    # the folder store finds the crash's temporary folder (the next writer clears it); in
    # PostgreSQL the transaction was rolled back and left nothing
    assert library.check("c").ok is (library.store.kind != "folder")
    report = library.add_pdfs("c", [pdf_dir / SMALL])
    assert report.files[0].status == "ok"
    assert library.check("c").ok, library.check("c").problems


def test_kill_9_during_embedding_keeps_what_was_committed(library, pdf_dir):
    library.add_pdfs("c", [pdf_dir / OTHER])
    run_killer(library, pdf_dir / SMALL, "embed")
    # the new document was committed before embedding started: it is searchable lexically
    assert {d["source"] for d in library.documents("c")} == {OTHER, SMALL}
    index = library.load_index("c")
    assert search("ultralight bosonic dark matter", index, rerank=False)[0]["source"] == SMALL
    assert not library.embedding_status("c").complete
    assert library.embed_pending("c").complete  # and the next run resumes


def test_two_writers_are_serialised(library, pdf_dir):
    """A second process waits for the lock instead of interleaving its write."""
    library.create("c")
    script = textwrap.dedent(f"""
        import time
        from rag_core.collections.library import Library
        t = time.time()
        r = Library(store={store_location_of(library)!r}).add_pdfs("c", [{str(pdf_dir / OTHER)!r}],
                                                                   compute_embeddings=False)
        print(r.files[0].status, round(time.time() - t, 1))
    """)
    with library.store.writing("c"):
        child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "PYTHONPATH": str(REPO)})
        time.sleep(8)
        assert child.poll() is None, "the writer did not wait for the lock"
        assert library.version("c") is None
    out, _ = child.communicate(timeout=120)
    assert out.split()[0] == "ok"
    assert library.info("c").documents == 1


def test_embeddings_are_finite_and_unit_length(library, pdf_dir):
    library.add_pdfs("c", [pdf_dir / OTHER])
    emb = np.asarray(library.load_index("c").embeddings)
    assert np.isfinite(emb).all() and np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-4)


def test_queries_use_the_encoder_that_made_the_vectors(library, pdf_dir, monkeypatch):
    """A collection records its encoder variant; its index encodes queries with that one."""
    import rag_core.models.loading as models

    library.create("c")
    assert library.settings("c")["encoder"] == models.planned_encoder()
    library.add_pdfs("c", [pdf_dir / OTHER])
    index = library.load_index("c")
    assert index.encoder == library.settings("c")["encoder"]
    asked = []
    real = models.load_bi_encoder

    def spy(name=models.DEFAULT_EMBEDDING_MODEL, *, encoder=None):
        asked.append(encoder)
        return real(name, encoder=encoder)

    monkeypatch.setattr("rag_core.index.build.load_bi_encoder", spy)
    search("custom font encoding", index, top=2)
    assert asked == [index.encoder]


def test_back_matter_is_stored_with_each_chunk_and_left_out_on_request(library, pdf_dir):
    """Both backends keep each chunk's ``back_matter``; a search can leave it out (issue 28)."""
    from rag_core.retrieval.ranking import search_lexical

    library.add_pdfs("c", [pdf_dir / SMALL], embed="none")
    index = library.load_index("c")
    kinds = [c.get("back_matter") for c in index.chunks]
    assert "references" in kinds and None in kinds  # the paper's reference list, and its body
    query = "Phys. Rev. Lett. astro-ph"
    every = search_lexical(query, index, top=len(index.chunks))
    assert any(r.get("back_matter") == "references" for r in every)
    body = search_lexical(query, index, top=len(index.chunks), back_matter=False)
    assert body and not any(index.chunks[r["chunk_index"]].get("back_matter") for r in body)
    assert not any("back_matter" in r for r in body)
