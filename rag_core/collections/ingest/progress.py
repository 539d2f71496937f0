"""The ingest's progress events and the clock that estimates the time left.

The estimate adds the pages left to read, the scanned pages left to read by OCR (at their own
rate, per core), the chunks left to index (a commit refits every chunk of a collection up to a
segment) and the passages left to embed, each at a rate
measured in this run blended with the one remembered from the last
(:mod:`rag_core.collections.ingest.rates`). Files no reader has opened yet count with the
pages the :class:`~rag_core.pdf.pool.PageCounter` found, else by
their size.
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag_core.collections.ingest.rates import (
    _INDEX_BASE_S,
    _PRIOR_CHUNKS,
    _PRIOR_OCR_PAGES,
    _PRIOR_PAGES,
    blended_rate,
    expected_embed_rate,
    measured_rates,
)
from rag_core.settings import SEGMENT_MAX_CHUNKS, ocr_threads

if TYPE_CHECKING:
    from rag_core.pdf.pool import PageCounter


@dataclass
class IngestProgress:
    """A progress event: ``stage`` is "read", "extract", "index", "ocr" (scanned pages read
    by OCR), "embed" or "done".

    ``eta_s`` is the time left for what the call waits for, from rates measured in this
    run (and, before there are any, from the last run on this machine). ``ocr_pages_done`` of
    ``ocr_pages_total`` are the pages read by OCR, once the first pass has found them.
    """

    stage: str
    files_done: int
    files_total: int
    current_file: str | None
    chunks_done: int
    chunks_total: int
    elapsed_s: float
    eta_s: float | None
    fraction: float
    pages_done: int = 0
    pages_total: int = 0
    ocr_pages_done: int = 0
    ocr_pages_total: int = 0


def chunks_indexed(existing: float, new: float) -> float:
    """Chunks a commit indexes: all of them (a refit) up to a segment, else the new ones (a new segment)."""
    return new if existing + new > SEGMENT_MAX_CHUNKS else existing + new


class _Clock:
    """Estimates the time left from the work left and the rates seen so far."""

    def __init__(self, n_files: int, workers: int, embed: bool, progress: Callable[[IngestProgress], None] | None,
                 encoder: str | None = None):
        self.started = time.perf_counter()
        self.rates = measured_rates()
        self.encoder = encoder  # the bi-encoder variant that will embed, for its remembered rate
        self.existing_chunks = 0  # chunks already in the collection: a commit refits them with the new ones
        self.n_files, self.workers, self.embed, self.callback = n_files, max(workers, 1), embed, progress
        self.files_done = 0
        self.pages_known: dict[int, int] = {}
        self.pages_done: dict[int, int] = {}
        self.chunks_new = 0
        self.embed_done = 0
        self.embed_total: int | None = None
        self.embed_started: float | None = None
        self.embed_base = 0
        self.extract_started: float | None = None
        self.first_page: tuple[float, int] | None = None  # (when, pages done then)
        self.file_bytes: dict[int, int] = {}  # the size of each file to read, by job
        self.file_seconds: dict[int, float] = {}  # seconds a reader spent on each input, by its position
        self.pages_counted: dict[int, int] = {}  # page counts of files before a reader opens them
        self.counter: PageCounter | None = None
        # pages to read by OCR and read so far, by the file's position among the inputs
        self.ocr_known: dict[int, int] = {}
        self.ocr_done: dict[int, int] = {}
        self.ocr_first: tuple[float, int] | None = None  # (when, OCR pages done then)
        self.ocr_chunked = False  # the scans' chunks are counted in chunks_new
        self.stage = "read"
        self.current: str | None = None

    def page_rate(self) -> float:
        """Pages per second, measured from the first page read (starting the reader processes
        is not reading: counted in, it made the early estimates 50% long), else remembered."""
        prior = self.rates["pages_per_s"] * self.workers
        if self.first_page is None:
            return prior
        done = sum(self.pages_done.values()) - self.first_page[1]
        return blended_rate(done, time.perf_counter() - self.first_page[0], prior, _PRIOR_PAGES)

    def page_read(self, job: int, done: int, total: int) -> None:
        self.pages_known[job] = total
        self.pages_done[job] = done
        if self.first_page is None:
            self.first_page = (time.perf_counter(), sum(self.pages_done.values()))

    def ocr_read(self, n: int, done: int, total: int) -> None:
        self.ocr_known[n] = total
        self.ocr_done[n] = done
        if self.ocr_first is None:
            self.ocr_first = (time.perf_counter(), sum(self.ocr_done.values()))

    def ocr_left(self) -> int:
        return sum(max(total - self.ocr_done.get(n, 0), 0) for n, total in self.ocr_known.items())

    def ocr_rate(self) -> float:
        """Pages read by OCR a second: measured in this run once it reads, blended with the
        remembered rate per core times the cores the pages left can use."""
        prior = self.rates["ocr_pages_per_s"] * max(1, min(ocr_threads(), self.ocr_left() or 1))
        if self.ocr_first is None:
            return prior
        done = sum(self.ocr_done.values()) - self.ocr_first[1]
        return blended_rate(done, time.perf_counter() - self.ocr_first[0], prior, _PRIOR_OCR_PAGES)

    def embed_rate(self) -> float:
        prior = expected_embed_rate(self.rates, self.encoder)
        if self.embed_started is None:
            return prior
        return blended_rate(self.embed_done - self.embed_base, time.perf_counter() - self.embed_started, prior,
                            _PRIOR_CHUNKS)

    def remaining(self) -> tuple[float, float]:
        """(seconds left, seconds done) of the whole call."""
        if self.counter is not None:
            with contextlib.suppress(queue.Empty):
                while True:
                    job, pages = self.counter.counts.get_nowait()
                    self.pages_counted[job] = pages
        counted = {**self.pages_counted, **self.pages_known}  # a reader's count over the counter's
        known = [counted[job] for job in self.file_bytes if job in counted] or list(self.pages_known.values())
        unread = [b for job, b in self.file_bytes.items() if job not in counted]
        if self.file_bytes:  # files neither opened nor counted: pages from their size, at the rate of the others
            known_bytes = sum(b for job, b in self.file_bytes.items() if job in counted)
            per_byte = sum(known) / known_bytes if known and known_bytes else 1 / 50_000
            pages_total = sum(known) + per_byte * sum(unread)
        else:
            mean_pages = sum(known) / len(known) if known else 15.0
            pages_total = sum(known) + mean_pages * max(self.n_files - len(known), 0)
        pages_left = max(pages_total - sum(self.pages_done.values()), 0.0)
        extract_left = pages_left / self.page_rate() if self.stage in ("read", "extract") else 0.0
        ocr_pages_left = self.ocr_left()
        ocr_left = ocr_pages_left / self.ocr_rate() if ocr_pages_left else 0.0
        # files are chunked once every file is read: until then every page still counts
        extracting = self.stage in ("read", "extract")
        chunks_expected = pages_total * self.rates["chunks_per_page"] if extracting else self.chunks_new
        if not extracting and not self.ocr_chunked:  # the scans are chunked once read
            chunks_expected += sum(self.ocr_known.values()) * self.rates["chunks_per_page"]
        indexing = self.stage in ("read", "extract", "index", "ocr")
        index_left = _INDEX_BASE_S + self.rates["index_s_per_chunk"] * chunks_indexed(
            self.existing_chunks, chunks_expected) if indexing else 0.0
        embed_left = 0.0
        if self.embed:
            total = self.embed_total if self.embed_total is not None else chunks_expected
            embed_left = max(total - self.embed_done, 0) / self.embed_rate()
        return extract_left + ocr_left + index_left + embed_left, time.perf_counter() - self.started

    def emit(self, stage: str | None = None, current: str | None = None) -> None:
        if stage:
            self.stage = stage
        self.current = current
        if self.callback is None:
            return
        left, elapsed = self.remaining()
        fraction = 1.0 if self.stage == "done" else elapsed / max(elapsed + left, 1e-6)
        eta = 0.0 if self.stage == "done" else (left if elapsed > 1.0 or self.stage != "read" else None)
        self.callback(IngestProgress(
            self.stage, self.files_done, self.n_files, current, self.embed_done,
            self.embed_total if self.embed_total is not None else self.chunks_new, elapsed, eta,
            min(max(fraction, 0.0), 1.0), sum(self.pages_done.values()), int(sum(self.pages_known.values())),
            sum(self.ocr_done.values()), sum(self.ocr_known.values()),
        ))
