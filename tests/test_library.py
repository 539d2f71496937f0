"""Named collections: names, duplicates, incremental embedding, crashes and locks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from rag_core.library import (
    CollectionError,
    CollectionExistsError,
    CollectionNotFoundError,
    Library,
    validate_collection_name,
)
from rag_core.retrieval import search

SMALL = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"  # 4 pages
OTHER = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages
SCAN = "awkward_scanned_no_text_huckfinn_page22.pdf"


@pytest.fixture()
def library(tmp_path):
    return Library(tmp_path / "data")


@pytest.mark.parametrize("name", ["..", "../escape", "a/b", "a\\b", "x\x00y", "", "   ", ".hidden",
                                  "x" * 101, "con", "trailing."])
def test_dangerous_names_are_refused_and_nothing_is_written(library, name):
    with pytest.raises(CollectionError):
        library.create(name)
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
    with pytest.raises(CollectionNotFoundError, match="gamma"):
        library.delete("beta")


def test_ingest_report_duplicates_and_incremental_embedding(library, pdf_dir, monkeypatch):
    import rag_core.library as library_module

    embedded = []
    real_embed = library_module.embed_chunks

    def counting_embed(chunks, *args, **kwargs):
        embedded.append(len(chunks))
        return real_embed(chunks, *args, **kwargs)

    monkeypatch.setattr(library_module, "embed_chunks", counting_embed)
    report = library.add_pdfs("papers", [pdf_dir / SMALL, pdf_dir / SCAN])
    statuses = {f.source: f.status for f in report.files}
    assert statuses == {SMALL: "ok", SCAN: "no_text"}
    ok = report.files[0]
    assert ok.pages == 4 and ok.chunks > 0
    assert "OCR" in report.files[1].reason
    first_chunks = library.info("papers").chunks
    assert embedded == [first_chunks]

    # the same bytes under another name are recognised by their hash
    copy = (("renamed copy.pdf", (pdf_dir / SMALL).read_bytes()))
    report = library.add_pdfs("papers", [copy, pdf_dir / OTHER])
    statuses = {f.source: f.status for f in report.files}
    assert statuses == {"renamed copy.pdf": "duplicate", OTHER: "ok"}
    # only the new document's chunks were embedded
    assert embedded == [first_chunks, report.chunks_added]
    index = library.load_index("papers")
    assert len(index.chunks) == first_chunks + report.chunks_added
    assert index.embeddings.shape[0] == len(index.chunks)
    assert all(c["page_start"] >= 1 for c in index.chunks)
    top = search("ultralight bosonic dark matter in the CMB", index, top=1)[0]
    assert top["source"] == SMALL and top["page_start"] >= 1

    removed = library.remove_documents("papers", [SMALL])
    assert removed == [SMALL]
    index = library.load_index("papers")
    assert {c["source"] for c in index.chunks} == {OTHER}
    assert embedded == [first_chunks, report.chunks_added]  # removing re-embeds nothing
    assert library.pdf_path("papers", OTHER).is_file()
    with pytest.raises(CollectionError, match="Not in collection"):
        library.remove_documents("papers", ["nope.pdf"])


def test_a_bad_file_never_stops_the_others(library, pdf_dir, tmp_path):
    not_pdf = tmp_path / "notes.pdf"
    not_pdf.write_text("just some text, not a PDF")
    truncated = tmp_path / "cut.pdf"
    truncated.write_bytes((pdf_dir / SMALL).read_bytes()[:20000])
    report = library.add_pdfs("c", [not_pdf, truncated, tmp_path / "missing.pdf", pdf_dir / OTHER],
                              compute_embeddings=False)
    statuses = [f.status for f in report.files]
    assert statuses[0] == "not_pdf"
    assert statuses[1] == "damaged"
    assert statuses[2] == "unreadable_file"
    assert statuses[3] == "ok"
    assert library.info("c").documents == 1


def test_damaged_collection_gives_a_clear_error(library, pdf_dir):
    library.add_pdfs("c", [pdf_dir / OTHER], compute_embeddings=False)
    version = library.version("c")
    (library.root / "collections" / "c" / "versions" / version / "tfidf_idf.npy").write_bytes(b"junk")
    with pytest.raises(CollectionError, match="damaged"):
        library.load_index("c")
    (library.root / "collections" / "c" / "versions" / version / "documents.json").write_text("{oops")
    [info] = library.list()  # still listed, with what is wrong, so it can be deleted
    assert info.name == "c" and "damaged" in info.error
    library.delete("c")
    assert library.list() == []


KILLER = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {repo!r})
    import rag_core.library as lib
    import rag_core.store as store
    stage = sys.argv[1]
    if stage == "commit":
        real = store.write_index_files
        def half_written(index, folder):
            (folder / "chunks.jsonl").write_text("partial")
            os.kill(os.getpid(), signal.SIGKILL)
        lib.write_index_files = half_written
    def progress(event):
        if stage == "embed" and event.stage == "embed":
            os.kill(os.getpid(), signal.SIGKILL)
    lib.Library({data!r}).add_pdfs("c", [{pdf!r}], progress=progress)
""")


@pytest.mark.slow  # a crashed process, and two real ingests
@pytest.mark.parametrize("stage", ["embed", "commit"])
def test_kill_9_during_ingest_keeps_the_previous_version(library, pdf_dir, stage, repo_root):
    library.add_pdfs("c", [pdf_dir / OTHER])
    before = library.version("c")
    chunks_before = len(library.load_index("c").chunks)
    script = KILLER.format(repo=str(repo_root), data=str(library.root), pdf=str(pdf_dir / SMALL))
    result = subprocess.run([sys.executable, "-c", script, stage], capture_output=True, text=True, timeout=300)
    assert result.returncode == -9, result.stderr
    assert library.version("c") == before
    index = library.load_index("c")
    assert len(index.chunks) == chunks_before
    # the next ingest works and clears what the crash left behind
    report = library.add_pdfs("c", [pdf_dir / SMALL])
    assert report.files[0].status == "ok"
    versions = list((library.root / "collections" / "c" / "versions").iterdir())
    assert [v.name for v in versions] == [library.version("c")]


@pytest.mark.slow  # two processes, one waiting on the other's lock
def test_two_writers_are_serialised(library, pdf_dir, repo_root):
    """A second process waits for the lock instead of interleaving its write."""
    library.create("c")
    lock = library._lock(library.root / "collections" / "c")
    lock.acquire()
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(repo_root)!r})
        from rag_core.library import Library
        t = time.time()
        r = Library({str(library.root)!r}).add_pdfs("c", [{str(pdf_dir / OTHER)!r}], compute_embeddings=False)
        print(r.files[0].status, round(time.time() - t, 1))
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(repo_root)})
    time.sleep(4)
    assert child.poll() is None, "the writer did not wait for the lock"
    assert library.version("c") is None
    lock.release()
    out, _ = child.communicate(timeout=120)
    assert out.split()[0] == "ok"
    assert library.info("c").documents == 1
