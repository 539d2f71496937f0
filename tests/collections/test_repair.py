"""Repair above the store: when no complete version holds the committed documents, the store
says which, and rag_core.collections.repair rebuilds them from the stored PDFs."""

from __future__ import annotations

import json

import pytest

from rag_core.cli import main
from rag_core.collections.library import Library
from rag_core.collections.repair import rebuild_documents
from rag_core.errors import CollectionError
from rag_core.retrieval.ranking import search

SMALL = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"  # 4 pages
OTHER = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages


@pytest.fixture()
def committed(broken) -> dict[str, str]:
    """SHA-256 -> source of the documents ``broken`` had (their originals are stored)."""
    versions = broken.root / "collections" / "c" / "versions"
    return {d["sha256"]: d["source"] for d in json.loads((versions / broken.version("c") / "version.json")
                                                          .read_text())["documents"]}


@pytest.fixture()
def broken(tmp_path, pdf_dir) -> Library:
    """A collection of two PDFs whose only version has a damaged chunk file."""
    library = Library(tmp_path / "data")
    library.add_pdfs("c", [pdf_dir / SMALL, pdf_dir / OTHER], compute_embeddings=False)
    collection = library.root / "collections" / "c"
    record = json.loads((collection / "versions" / library.version("c") / "version.json").read_text())
    chunk_text = collection / "segments" / record["segments"][0]["id"] / "chunk_text.bin"
    chunk_text.write_bytes(chunk_text.read_bytes()[:100])
    with pytest.raises(CollectionError, match="check-store"):
        library.load_index("c")
    return library


def test_the_store_names_what_to_rebuild_and_the_library_rebuilds_it(broken, committed):
    report = broken.store.check("c", repair=True)  # what the store can do alone
    assert report.rebuild == committed and sorted(report.rebuild.values()) == [OTHER, SMALL]
    assert not report.ok and report.version is None
    rebuild_documents(broken.store, report)
    assert report.rebuild is None and report.ok and report.version == broken.version("c")
    assert report.repaired[-1].startswith("rebuilt the index from 2 stored PDF(s)")
    assert {d["source"] for d in broken.documents("c")} == {SMALL, OTHER}
    assert search("ultralight bosonic dark matter", broken.load_index("c"), rerank=False)[0]["source"] == SMALL
    assert broken.check("c").ok


def test_check_store_repair_rebuilds_in_one_go(broken, capsys):
    assert main(["--data-dir", str(broken.root), "check-store", "c", "--repair"]) == 0
    out = capsys.readouterr().out
    assert "c: repaired" in out and "rebuilt the index from 2 stored PDF(s)" in out
    assert {d["source"] for d in broken.documents("c")} == {SMALL, OTHER} and broken.check("c").ok


def test_a_commit_landing_between_the_two_steps_is_not_overwritten(broken, pdf_dir):
    report = broken.store.check("c", repair=True)
    with broken.store.writing("c"):  # another process commits before the rebuild takes the lock
        broken.store.commit("c", documents=[], chunks=[], embeddings=None, dense_mask=None, new_files={})
    committed = broken.version("c")
    rebuild_documents(broken.store, report)
    assert broken.version("c") == committed and report.rebuild is not None
    assert "during the repair" in report.problems[-1] and not report.ok


def test_originals_no_repair_can_restore_are_named_with_the_commands_that_fix_them(tmp_path, pdf_dir, capsys):
    """An altered original (the index intact) and a lost one (the index damaged too, so a rebuild
    needs it): the report names each document and the commands, and they work."""
    library = Library(tmp_path / "data")
    library.add_pdfs("c", [pdf_dir / SMALL, pdf_dir / OTHER], compute_embeddings=False)
    files = library.root / "collections" / "c" / "files"
    by_source = {d["source"]: d["sha256"] for d in library.documents("c")}
    (files / f"{by_source[SMALL]}.pdf").write_bytes(b"%PDF-1.4 not the paper any more")
    assert main(["--data-dir", str(library.root), "check-store", "c", "--repair"]) == 1
    out = capsys.readouterr().out
    assert f"  to fix: '{SMALL}': its stored original PDF is altered" in out
    assert f"`rag-core remove c {SMALL}`, then `rag-core ingest c PATH/TO/{SMALL}`" in out
    assert [a for a in library.check("c").actions if OTHER in a] == []  # only the damaged one
    # what the report says to do, done: the collection is whole again
    assert main(["--data-dir", str(library.root), "remove", "c", SMALL]) == 0
    assert main(["--data-dir", str(library.root), "ingest", "c", str(pdf_dir / SMALL), "--no-embed",
                 "--no-progress"]) == 0
    capsys.readouterr()
    assert library.check("c").problems == [] and {d["source"] for d in library.documents("c")} == {SMALL, OTHER}


def test_a_document_a_rebuild_could_not_restore_is_named_with_the_command(broken, committed, capsys):
    files = broken.root / "collections" / "c" / "files"
    lost = next(sha for sha, source in committed.items() if source == OTHER)
    (files / f"{lost}.pdf").unlink()
    report = broken.check("c", repair=True)
    assert not report.ok and {d["source"] for d in broken.documents("c")} == {SMALL}
    assert len(report.actions) == 1 and report.actions[0].startswith(f"'{OTHER}': its stored original PDF is missing")
    assert f"`rag-core ingest c PATH/TO/{OTHER}`" in report.actions[0] and "rag-core remove" not in report.actions[0]
