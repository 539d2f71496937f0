"""The pipeline's steps: a report per file in the order given, duplicates, names taken, the commit's check."""

from __future__ import annotations

import pytest

from rag_core.collections.ingest import pipeline
from rag_core.collections.ingest.pipeline import ingest_files
from rag_core.collections.library import Library

OTHER = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages
SMALL = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"  # 4 pages


def test_every_file_gets_a_report_in_the_order_given(tmp_path, pdf_dir):
    library = Library(tmp_path / "data")
    library.add_pdfs("c", [pdf_dir / OTHER], embed="none")
    other_bytes = (pdf_dir / SMALL).read_bytes()
    report = library.add_pdfs("c", [(OTHER, other_bytes), tmp_path / "missing.pdf", ("again.pdf", other_bytes),
                                    pdf_dir / OTHER], embed="none")
    assert [(f.source, f.status) for f in report.files] == [
        (OTHER, "ok"), ("missing.pdf", "unreadable_file"), ("again.pdf", "duplicate"), (OTHER, "duplicate")]
    stored = OTHER.replace(".pdf", " (2).pdf")  # another file of that name is in the collection
    assert report.files[0].reason.endswith(f"stored as {stored!r}")
    assert f"Same content as {OTHER!r}" in report.files[2].reason  # the first of this call
    assert report.chunks_added == report.files[0].chunks > 0 and report.embedding is None
    # each file read says how long its reader took (0 only for those no reader opened)
    assert report.files[0].seconds > 0 and report.files[0].to_dict()["seconds"] > 0
    assert report.files[1].seconds == report.files[2].seconds == report.files[3].seconds == 0
    assert sorted(d["source"] for d in library.documents("c")) == sorted([OTHER, stored])


def test_a_file_another_ingest_added_meanwhile_is_a_duplicate_at_the_commit(tmp_path, pdf_dir, monkeypatch):
    """Files are read outside the collection's lock: the commit looks again under it."""
    library = Library(tmp_path / "data")
    library.create("c")
    real_extract = pipeline._extract
    others = []

    def extract_while_another_ingest_commits(*args, **kwargs):
        results = real_extract(*args, **kwargs)
        if not others:  # once: the other ingest reads its file through here too
            others.append(None)
            others[0] = Library(tmp_path / "data").add_pdfs("c", [pdf_dir / OTHER], embed="none")
        return results

    monkeypatch.setattr(pipeline, "_extract", extract_while_another_ingest_commits)
    report = library.add_pdfs("c", [pdf_dir / OTHER, pdf_dir / SMALL], embed="none")
    assert [f.status for f in others[0].files] == ["ok"]
    assert [(f.source, f.status) for f in report.files] == [(OTHER, "duplicate"), (SMALL, "ok")]
    assert "added by another ingest meanwhile" in report.files[0].reason
    assert sorted(d["source"] for d in library.documents("c")) == sorted([OTHER, SMALL])


def test_an_unknown_embed_mode_says_which_there_are(tmp_path):
    library = Library(tmp_path / "data")
    library.create("c")
    with pytest.raises(ValueError, match="embed must be one of"):
        ingest_files(library.store, "c", [], embed="later")
