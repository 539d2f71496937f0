"""Progress events and an honest estimate of the time left."""

from __future__ import annotations

import threading
import time

import pytest

from rag_core import settings
from rag_core.collections.ingest import progress, rates
from rag_core.collections.library import Library
from rag_core.pdf import pool as extraction

OTHER = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages
SMALL = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"  # 4 pages


def test_progress_events_and_an_honest_eta(tmp_path, pdf_dir):
    events = []
    Library(tmp_path / "data").add_pdfs("c", [pdf_dir / OTHER, pdf_dir / SMALL], progress=events.append,
                                        compute_embeddings=False)
    stages = [e.stage for e in events]
    assert stages[0] == "read" and stages[-1] == "done" and "extract" in stages and "index" in stages
    fractions = [e.fraction for e in events]
    assert fractions[-1] == 1.0 and all(0 <= f <= 1 for f in fractions)
    extract = [e for e in events if e.stage == "extract"]
    assert extract[-1].pages_done == extract[-1].pages_total == 7
    assert all(e.eta_s is None or e.eta_s >= 0 for e in events)


def test_the_estimate_during_extraction_counts_the_chunks_of_pages_already_read(monkeypatch):
    """Files are chunked after every file is read; until then the embedding left is that of all pages."""
    monkeypatch.setattr(progress, "measured_rates", lambda: {"pages_per_s": 10.0, "chunks_per_page": 3.0,
                                                             "embed_chunks_per_s": 30.0, "index_s_per_chunk": 0.0})
    clock = progress._Clock(n_files=2, workers=1, embed=True, progress=None)
    clock.stage = "extract"
    clock.pages_known = {0: 100, 1: 100}
    clock.pages_done = {0: 100, 1: 50}  # 150 of 200 pages read, nothing chunked yet
    left, _ = clock.remaining()
    # 50 pages to read (5 s at 10 pages/s) and 600 chunks to embed (20 s at 30 chunks/s)
    assert left == pytest.approx(5 + 20 + rates._INDEX_BASE_S, rel=0.01)


def test_the_page_rate_is_measured_from_the_first_page_not_from_starting_the_readers(monkeypatch):
    monkeypatch.setattr(progress, "measured_rates", lambda: {"pages_per_s": 10.0, "chunks_per_page": 3.0,
                                                             "embed_chunks_per_s": 30.0, "index_s_per_chunk": 0.0})
    clock = progress._Clock(n_files=1, workers=2, embed=False, progress=None)
    clock.extract_started = time.perf_counter() - 30.0  # the readers took long to start
    assert clock.page_rate() == 20.0  # nothing read yet: the remembered rate, per reader
    clock.page_read(0, 1, 200)
    clock.first_page = (time.perf_counter() - 2.0, 1)
    clock.page_read(0, 1001, 2000)
    # 1,000 pages in 2 s (not 1,001 in 32 s), with the remembered rate counted as a few pages at 20 pages/s
    prior = rates._PRIOR_PAGES
    assert clock.page_rate() == pytest.approx((1000 + prior) / (2 + prior / 20), rel=0.05)


def test_files_not_opened_yet_are_estimated_by_their_size(monkeypatch):
    """One long paper opened first must not make every other file count as long (the estimate
    at 10% was 4x the time really left)."""
    monkeypatch.setattr(progress, "measured_rates", lambda: {"pages_per_s": 10.0, "chunks_per_page": 1.0,
                                                             "embed_chunks_per_s": 1e9, "index_s_per_chunk": 0.0})
    clock = progress._Clock(n_files=3, workers=1, embed=False, progress=None)
    clock.stage = "extract"
    clock.file_bytes = {0: 1_000_000, 1: 2_000_000, 2: 100_000}
    clock.page_read(0, 0, 100)  # 100 pages in 1 MB: 1 page per 10 KB
    left, _ = clock.remaining()
    assert left == pytest.approx((100 + 200 + 10) / 10.0 + rates._INDEX_BASE_S, rel=0.01)


def test_counted_pages_replace_the_size_guess(monkeypatch):
    """The estimate at 10% was 35% short or 43% long while unopened files were guessed from their size."""
    monkeypatch.setattr(progress, "measured_rates", lambda: {"pages_per_s": 10.0, "chunks_per_page": 1.0,
                                                             "embed_chunks_per_s": 1e9, "index_s_per_chunk": 0.0})
    clock = progress._Clock(n_files=3, workers=1, embed=False, progress=None)
    clock.stage = "extract"
    clock.file_bytes = {0: 1_000_000, 1: 2_000_000, 2: 100_000}
    clock.page_read(0, 0, 100)
    clock.pages_counted = {1: 15, 2: 123}  # a 15-page paper in 2 MB, a 123-page thesis in 100 KB
    left, _ = clock.remaining()
    assert left == pytest.approx((100 + 15 + 123) / 10.0 + rates._INDEX_BASE_S, rel=0.01)
    clock.pages_counted = {1: 15}  # the thesis not counted: by size, at the pages per byte of the others
    left, _ = clock.remaining()
    assert left == pytest.approx((100 + 15 + 115 / 3_000_000 * 100_000) / 10.0 + rates._INDEX_BASE_S, rel=0.01)


def test_the_ingest_estimate_uses_the_counted_pages(tmp_path, pdf_dir, monkeypatch):
    seen = []
    original = progress._Clock.remaining

    def remaining(self):
        seen.append(dict(self.pages_counted))
        return original(self)

    monkeypatch.setattr(progress._Clock, "remaining", remaining)
    # slow readers: no reader starts before the counter has answered for every file (a condition
    # waited for, not a duration, so the order holds on a machine of any speed: issue 30)
    counted = threading.Event()
    run, spawn = extraction.PageCounter._run, extraction.ExtractionPool._spawn

    def counting(self):
        try:
            run(self)
        finally:
            counted.set()

    def spawning(self):
        assert counted.wait(600), "the page counter never finished"
        return spawn(self)

    monkeypatch.setattr(extraction.PageCounter, "_run", counting)
    monkeypatch.setattr(extraction.ExtractionPool, "_spawn", spawning)
    monkeypatch.setattr(extraction, "_STARTUP_S", 600.0)  # the counter's own budget, never the limit here
    Library(tmp_path / "data").add_pdfs("c", [pdf_dir / OTHER, pdf_dir / SMALL], progress=lambda e: None,
                                        compute_embeddings=False)
    assert {0: 3, 1: 4} in seen


def test_the_index_estimate_counts_the_chunks_a_commit_refits(monkeypatch):
    """Adding a few PDFs to a collection refits every chunk in it (up to a segment); the estimate
    counted the new chunks only. A tiny commit is not remembered as the per-chunk rate."""
    monkeypatch.setattr(progress, "measured_rates", lambda: {"pages_per_s": 10.0, "chunks_per_page": 1.0,
                                                             "embed_chunks_per_s": 1e9, "index_s_per_chunk": 0.001})
    clock = progress._Clock(n_files=1, workers=1, embed=False, progress=None)
    clock.stage, clock.chunks_new = "index", 100
    left, _ = clock.remaining()
    assert left == pytest.approx(rates._INDEX_BASE_S + 0.1, rel=0.01)
    clock.existing_chunks = 50_000  # refit with the new chunks
    assert clock.remaining()[0] == pytest.approx(rates._INDEX_BASE_S + 50.1, rel=0.01)
    clock.existing_chunks = settings.SEGMENT_MAX_CHUNKS  # a new segment: the new chunks only
    assert clock.remaining()[0] == pytest.approx(rates._INDEX_BASE_S + 0.1, rel=0.01)
