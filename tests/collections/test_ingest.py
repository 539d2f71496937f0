"""The ingest pipeline: safe reading, extraction under budgets, honest progress."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rag_core import settings
from rag_core.collections import ingest
from rag_core.collections.ingest import ExtractionPool, collect_pdf_files, read_input
from rag_core.collections.library import Library
from tests.support import REPO

OTHER = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages
SMALL = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"  # 4 pages


def slow_pdf(pages: int = 50, repeats: int = 80_000, padding: int = 0) -> bytes:
    """A small PDF whose pages share one content stream that pypdf needs seconds a page to read
    (~1.7 s on a quiet 2-core machine: the cost grows with the square of ``repeats``), or, with
    ``padding`` bytes of white space in it, a stream that needs that much memory."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica")}))
    stream = DecodedStreamObject()
    stream.set_data(b"BT /F1 12 Tf 72 720 Td " + b"(x) Tj " * repeats + b" " * padding + b"ET")
    content = writer._add_object(stream.flate_encode())
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = content
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def in_thread(fn, timeout: float):
    """``fn()``'s result, or a failure if it blocks longer than ``timeout``."""
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("value", fn()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "it blocked"
    return out["value"]


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "x.pdf"
    os.mkfifo(fifo)
    got = in_thread(lambda: read_input(fifo), 5)
    assert got.data is None and got.status == "unreadable_file" and "not a regular file" in got.reason


def test_a_device_behind_a_link_is_refused(tmp_path):
    link = tmp_path / "zero.pdf"
    link.symlink_to("/dev/zero")
    got = in_thread(lambda: read_input(link), 5)
    assert got.data is None and "not a regular file" in got.reason


def test_size_is_checked_before_reading(tmp_path, monkeypatch):
    sparse = tmp_path / "huge.pdf"
    with open(sparse, "wb") as handle:
        handle.truncate(2 * 1024**3)  # 2 GiB, sparse: costs no disk
    reads = []
    monkeypatch.setattr(ingest.os, "read", lambda *a: reads.append(a) or b"")
    got = read_input(sparse)
    assert got.status == "too_large" and "2048.0 MiB" in got.reason and reads == []


def test_empty_and_missing_files(tmp_path):
    (tmp_path / "empty.pdf").write_bytes(b"")
    assert read_input(tmp_path / "empty.pdf").status == "empty"
    missing = read_input(tmp_path / "sub" / "missing.pdf")
    assert missing.status == "unreadable_file" and str(tmp_path / "sub" / "missing.pdf") in missing.reason
    assert read_input(("", b"")).status == "empty"


def test_folders_are_expanded_and_what_is_skipped_is_said(tmp_path):
    folder = tmp_path / "papers"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.pdf").write_bytes(b"%PDF-1.4")
    (folder / "sub" / "B.PDF").write_bytes(b"%PDF-1.4")
    (folder / "notes.txt").write_text("x")
    outside = tmp_path / "outside.pdf"
    outside.write_bytes(b"%PDF-1.4")
    (folder / "link.pdf").symlink_to(outside)
    scan = collect_pdf_files([folder, tmp_path / "loose.pdf"])
    assert scan.files == [str(folder / "a.pdf"), str(folder / "sub" / "B.PDF"), str(tmp_path / "loose.pdf")]
    assert dict(scan.skipped) == {str(folder / "link.pdf"): "a link to a file outside the folder",
                                  str(folder / "notes.txt"): "not a .pdf file"}


def test_a_slow_pdf_is_stopped_at_its_time_budget(pdf_dir):
    data = slow_pdf(pages=20)  # ~35 s of reading on a quiet machine, against a 5 s budget
    started = time.monotonic()
    with ExtractionPool(workers=2, seconds_base=4, seconds_per_page=0.05) as pool:
        results = pool.run([("slow.pdf", data), (OTHER, (pdf_dir / OTHER).read_bytes())])
    spent = time.monotonic() - started
    assert results[0].status == "too_slow" and "time budget" in results[0].reason
    assert results[1].status == "ok" and results[1].n_pages == 3  # the other file is not held up
    assert spent < 30  # the budget (5 s) plus starting the workers, not the ~35 s the file would take


def test_a_pdf_that_needs_too_much_memory_is_stopped(pdf_dir):
    bomb = slow_pdf(pages=1, repeats=10, padding=60 << 20)  # 60 MiB of content in ~60 KB
    assert len(bomb) < 1 << 20
    with ExtractionPool(workers=1, memory_mb=110) as pool:
        results = pool.run([("bomb.pdf", bomb), (OTHER, (pdf_dir / OTHER).read_bytes())])
    assert results[0].status == "too_large" and "memory" in results[0].reason
    assert results[1].status == "ok"  # the next file gets a working reader


def test_a_worker_that_crashes_gives_a_status_and_the_pool_goes_on(pdf_dir, monkeypatch):
    with ExtractionPool(workers=1) as pool:
        first = pool._spawn()
        first.process.kill()
        first.process.wait()
        pool._workers = [first]
        results = pool.run([(OTHER, (pdf_dir / OTHER).read_bytes()), (SMALL, (pdf_dir / SMALL).read_bytes())])
    assert [r.status for r in results] == ["ok", "ok"]


HOSTILE = textwrap.dedent("""
    import sys, time
    from rag_core.collections.library import Library
    t = time.time()
    report = Library(sys.argv[1]).add_pdfs("c", [sys.argv[2]], compute_embeddings=False)
    print(report.files[0].status, round(time.time() - t, 1))
""")


@pytest.mark.slow
def test_a_hostile_file_gets_a_status_within_60_s_while_other_ingests_proceed(tmp_path, pdf_dir):
    library = Library(tmp_path / "data")
    library.create("c")
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(slow_pdf(pages=50))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # a tight budget (7.5 s for 50 pages) so the file (~85 s of reading) is stopped on any machine
    tight = {**env, settings.EXTRACT_SECONDS_BASE_ENV: "5", settings.EXTRACT_SECONDS_PER_PAGE_ENV: "0.05"}
    started = time.monotonic()
    hostile = subprocess.Popen([sys.executable, "-c", HOSTILE, str(library.root), str(bomb)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=tight)
    time.sleep(3)
    other = subprocess.run([sys.executable, "-c", HOSTILE, str(library.root), str(pdf_dir / OTHER)],
                           capture_output=True, text=True, env=env, timeout=120)
    other_done = time.monotonic() - started
    out, err = hostile.communicate(timeout=120)
    hostile_done = time.monotonic() - started
    assert other.stdout.split()[0] == "ok", other.stderr
    assert out.split()[0] == "too_slow", err
    assert hostile_done < 60
    assert other_done < hostile_done  # not held up by the lock
    assert [d["source"] for d in library.documents("c")] == [OTHER]


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


def test_rates_are_remembered_for_the_next_estimate(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.RATES_FILE_ENV, str(tmp_path / "rates.json"))
    ingest.remember_rates(pages_per_s=42.0, embed_chunks_per_s=-1)
    rates = ingest.measured_rates()
    assert rates["pages_per_s"] == 42.0 and rates["embed_chunks_per_s"] == ingest._RATE_DEFAULTS["embed_chunks_per_s"]


def test_each_encoder_variant_remembers_its_own_embedding_rate(tmp_path, monkeypatch):
    """A first upload with int8 ONNX was estimated at the torch rate (the estimate at 10% was 2.3x long)."""
    monkeypatch.setenv(settings.RATES_FILE_ENV, str(tmp_path / "rates.json"))
    rates = ingest.measured_rates()
    assert ingest.expected_embed_rate(rates, "onnx-int8") > ingest.expected_embed_rate(rates, "torch")
    ingest.remember_rates(**{ingest.embed_rate_key("torch"): 300.0})  # a GPU
    rates = ingest.measured_rates()
    assert ingest.expected_embed_rate(rates, "torch") == 300.0
    assert ingest.expected_embed_rate(rates, "onnx-int8") == ingest._EMBED_DEFAULTS["onnx-int8"]


def test_the_estimate_during_extraction_counts_the_chunks_of_pages_already_read(monkeypatch):
    """Files are chunked after every file is read; until then the embedding left is that of all pages."""
    monkeypatch.setattr(ingest, "measured_rates", lambda: {"pages_per_s": 10.0, "chunks_per_page": 3.0,
                                                           "embed_chunks_per_s": 30.0, "index_s_per_chunk": 0.0})
    clock = ingest._Clock(n_files=2, workers=1, embed=True, progress=None)
    clock.stage = "extract"
    clock.pages_known = {0: 100, 1: 100}
    clock.pages_done = {0: 100, 1: 50}  # 150 of 200 pages read, nothing chunked yet
    left, _ = clock.remaining()
    # 50 pages to read (5 s at 10 pages/s) and 600 chunks to embed (20 s at 30 chunks/s)
    assert left == pytest.approx(5 + 20 + ingest._INDEX_BASE_S, rel=0.01)


def test_the_page_rate_is_measured_from_the_first_page_not_from_starting_the_readers(monkeypatch):
    monkeypatch.setattr(ingest, "measured_rates", lambda: {"pages_per_s": 10.0, "chunks_per_page": 3.0,
                                                           "embed_chunks_per_s": 30.0, "index_s_per_chunk": 0.0})
    clock = ingest._Clock(n_files=1, workers=2, embed=False, progress=None)
    clock.extract_started = time.perf_counter() - 30.0  # the readers took long to start
    assert clock.page_rate() == 20.0  # nothing read yet: the remembered rate, per reader
    clock.page_read(0, 1, 200)
    clock.first_page = (time.perf_counter() - 2.0, 1)
    clock.page_read(0, 1001, 2000)
    # 1,000 pages in 2 s (not 1,001 in 32 s), with the remembered rate counted as a few pages at 20 pages/s
    prior = ingest._PRIOR_PAGES
    assert clock.page_rate() == pytest.approx((1000 + prior) / (2 + prior / 20), rel=0.05)


def test_the_rate_moves_from_the_remembered_one_to_the_measured_one():
    """The first pages and the longest passages are slow: an early measured rate alone made the
    upload's estimate 30-50% long until its end."""
    assert ingest.blended_rate(0, 0.0, 20.0, 100) == 20.0
    early = ingest.blended_rate(20, 2.0, 20.0, 100)  # 10 a second so far: mostly the remembered rate
    late = ingest.blended_rate(2000, 200.0, 20.0, 100)
    assert 15 < early < 20 and late == pytest.approx(10.0, rel=0.06)
    assert ingest.blended_rate(50, 5.0, 0.0, 100) == 10.0  # nothing remembered: the measured rate


def test_files_not_opened_yet_are_estimated_by_their_size(monkeypatch):
    """One long paper opened first must not make every other file count as long (the estimate
    at 10% was 4x the time really left)."""
    monkeypatch.setattr(ingest, "measured_rates", lambda: {"pages_per_s": 10.0, "chunks_per_page": 1.0,
                                                           "embed_chunks_per_s": 1e9, "index_s_per_chunk": 0.0})
    clock = ingest._Clock(n_files=3, workers=1, embed=False, progress=None)
    clock.stage = "extract"
    clock.file_bytes = {0: 1_000_000, 1: 2_000_000, 2: 100_000}
    clock.page_read(0, 0, 100)  # 100 pages in 1 MB: 1 page per 10 KB
    left, _ = clock.remaining()
    assert left == pytest.approx((100 + 200 + 10) / 10.0 + ingest._INDEX_BASE_S, rel=0.01)


def test_the_page_counter_counts_every_file_before_the_readers_open_it(pdf_dir):
    jobs = [(OTHER, (pdf_dir / OTHER).read_bytes()), ("junk.pdf", b"%PDF-1.4 not a pdf"),
            (SMALL, (pdf_dir / SMALL).read_bytes())]
    with ingest.PageCounter(jobs) as counter:
        deadline = time.monotonic() + 60
        counts = {}
        while len(counts) < 2 and time.monotonic() < deadline:
            try:
                job, pages = counter.counts.get(timeout=1)
            except Exception:  # noqa: BLE001 - queue.Empty: keep waiting
                continue
            counts[job] = pages
    assert counts == {0: 3, 2: 4}  # the junk file is left to its reader


def test_counted_pages_replace_the_size_guess(monkeypatch):
    """The estimate at 10% was 35% short or 43% long while unopened files were guessed from their size."""
    monkeypatch.setattr(ingest, "measured_rates", lambda: {"pages_per_s": 10.0, "chunks_per_page": 1.0,
                                                           "embed_chunks_per_s": 1e9, "index_s_per_chunk": 0.0})
    clock = ingest._Clock(n_files=3, workers=1, embed=False, progress=None)
    clock.stage = "extract"
    clock.file_bytes = {0: 1_000_000, 1: 2_000_000, 2: 100_000}
    clock.page_read(0, 0, 100)
    clock.pages_counted = {1: 15, 2: 123}  # a 15-page paper in 2 MB, a 123-page thesis in 100 KB
    left, _ = clock.remaining()
    assert left == pytest.approx((100 + 15 + 123) / 10.0 + ingest._INDEX_BASE_S, rel=0.01)
    clock.pages_counted = {1: 15}  # the thesis not counted: by size, at the pages per byte of the others
    left, _ = clock.remaining()
    assert left == pytest.approx((100 + 15 + 115 / 3_000_000 * 100_000) / 10.0 + ingest._INDEX_BASE_S, rel=0.01)


def test_the_ingest_estimate_uses_the_counted_pages(tmp_path, pdf_dir, monkeypatch):
    seen = []
    original = ingest._Clock.remaining

    def remaining(self):
        seen.append(dict(self.pages_counted))
        return original(self)

    monkeypatch.setattr(ingest._Clock, "remaining", remaining)
    monkeypatch.setattr(ingest.ExtractionPool, "_spawn", lambda self: (time.sleep(1.5), ingest._Worker(
        self.memory_bytes))[1])  # slow readers: the counter answers first
    Library(tmp_path / "data").add_pdfs("c", [pdf_dir / OTHER, pdf_dir / SMALL], progress=lambda e: None,
                                        compute_embeddings=False)
    assert {0: 3, 1: 4} in seen


def test_the_index_estimate_counts_the_chunks_a_commit_refits(monkeypatch):
    """Adding a few PDFs to a collection refits every chunk in it (up to a segment); the estimate
    counted the new chunks only. A tiny commit is not remembered as the per-chunk rate."""
    monkeypatch.setattr(ingest, "measured_rates", lambda: {"pages_per_s": 10.0, "chunks_per_page": 1.0,
                                                           "embed_chunks_per_s": 1e9, "index_s_per_chunk": 0.001})
    clock = ingest._Clock(n_files=1, workers=1, embed=False, progress=None)
    clock.stage, clock.chunks_new = "index", 100
    left, _ = clock.remaining()
    assert left == pytest.approx(ingest._INDEX_BASE_S + 0.1, rel=0.01)
    clock.existing_chunks = 50_000  # refit with the new chunks
    assert clock.remaining()[0] == pytest.approx(ingest._INDEX_BASE_S + 50.1, rel=0.01)
    clock.existing_chunks = settings.SEGMENT_MAX_CHUNKS  # a new segment: the new chunks only
    assert clock.remaining()[0] == pytest.approx(ingest._INDEX_BASE_S + 0.1, rel=0.01)


def test_a_tiny_commit_is_not_remembered_as_the_index_rate(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.RATES_FILE_ENV, str(tmp_path / "rates.json"))
    ingest._remember_index_rate(0.5, 20)
    assert ingest.measured_rates()["index_s_per_chunk"] == ingest._RATE_DEFAULTS["index_s_per_chunk"]
    ingest._remember_index_rate(ingest._INDEX_BASE_S + 2.0, 1000)
    assert ingest.measured_rates()["index_s_per_chunk"] == pytest.approx(0.002)


def test_a_new_measurement_moves_the_remembered_rate_half_way(tmp_path, monkeypatch):
    """One unusual ingest (a commit three times slower than the last) must not make the next
    estimate three times too long."""
    monkeypatch.setenv(settings.RATES_FILE_ENV, str(tmp_path / "rates.json"))
    ingest.remember_rates(pages_per_s=40.0)
    assert ingest.measured_rates()["pages_per_s"] == 40.0  # the first measurement, as it is
    ingest.remember_rates(pages_per_s=20.0)
    assert ingest.measured_rates()["pages_per_s"] == 30.0
