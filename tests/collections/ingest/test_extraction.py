"""Reading PDFs in worker processes: time and memory budgets, crashes, the page counter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from rag_core import settings
from rag_core.collections.library import Library
from rag_core.pdf.pool import ExtractionPool, PageCounter
from rag_core.testing import slow_pdf
from tests.support import REPO

OTHER = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages
SMALL = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"  # 4 pages


def test_a_slow_pdf_is_stopped_at_its_time_budget(pdf_dir, monkeypatch):
    """The reader of slow.pdf waits, reading nothing, until it is stopped (issue 30): only the budget
    ends it, on a machine of any speed."""
    monkeypatch.setenv(settings.EXTRACT_HOLD_ENV, "slow.pdf")
    with ExtractionPool(workers=2, seconds_base=4, seconds_per_page=0.05) as pool:
        results = pool.run([("slow.pdf", slow_pdf(pages=2)), (OTHER, (pdf_dir / OTHER).read_bytes())])
    assert results[0].status == "too_slow" and "time budget" in results[0].reason
    assert results[1].status == "ok" and results[1].n_pages == 3  # the other file is not held up


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
def test_a_hostile_file_gets_a_status_at_its_budget_while_other_ingests_proceed(tmp_path, pdf_dir):
    library = Library(tmp_path / "data")
    library.create("c")
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(slow_pdf(pages=50))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # its reader waits, reading nothing, until it is stopped (issue 30): the other ingest runs while it
    # waits, and it ends only when its budget (300 s) runs out or the test stops it
    held = {**env, settings.EXTRACT_SECONDS_BASE_ENV: "300", settings.EXTRACT_HOLD_ENV: "bomb.pdf"}
    hostile = subprocess.Popen([sys.executable, "-c", HOSTILE, str(library.root), str(bomb)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=held)
    try:
        other = subprocess.run([sys.executable, "-c", HOSTILE, str(library.root), str(pdf_dir / OTHER)],
                               capture_output=True, text=True, env=env, timeout=300)
        assert other.stdout.split()[0] == "ok", other.stderr
        assert hostile.poll() is None  # the other ingest finished while the hostile file was still being read
    finally:
        hostile.kill()
        hostile.communicate(timeout=60)
    assert [d["source"] for d in library.documents("c")] == [OTHER]
    # and a held file gets its status at its budget, with the other ingest's documents kept
    tight = {**env, settings.EXTRACT_SECONDS_BASE_ENV: "5", settings.EXTRACT_HOLD_ENV: "bomb.pdf"}
    done = subprocess.run([sys.executable, "-c", HOSTILE, str(library.root), str(bomb)],
                          capture_output=True, text=True, env=tight, timeout=300)
    assert done.stdout.split()[0] == "too_slow", done.stderr
    assert [d["source"] for d in library.documents("c")] == [OTHER]


def test_the_page_counter_counts_every_file_before_the_readers_open_it(pdf_dir):
    jobs = [(OTHER, (pdf_dir / OTHER).read_bytes()), ("junk.pdf", b"%PDF-1.4 not a pdf"),
            (SMALL, (pdf_dir / SMALL).read_bytes())]
    with PageCounter(jobs) as counter:
        deadline = time.monotonic() + 60
        counts = {}
        while len(counts) < 2 and time.monotonic() < deadline:
            try:
                job, pages = counter.counts.get(timeout=1)
            except Exception:  # noqa: BLE001 - queue.Empty: keep waiting
                continue
            counts[job] = pages
    assert counts == {0: 3, 2: 4}  # the junk file is left to its reader
