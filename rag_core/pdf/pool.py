"""The processes that read PDFs a user gives: a pool of readers, and a page counter.

:class:`ExtractionPool` runs ``python -m rag_core.pdf.worker`` children, each file under a
time and a memory budget, two files at a time on two cores. A file that takes too long is
stopped (status ``too_slow``); one that needs too much memory gets ``too_large``. Pages read
by OCR add to a file's time budget, and each worker reads its file's scanned pages on its
share of the cores (every core when it is the only file). :func:`extract_pdf_budgeted` reads
one file so (a PDF manuscript to check: the same budgets as an ingest). :class:`PageCounter`
runs the same program with ``--count`` to learn every file's page count before a reader opens
it, for an ingest's time estimate.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from pathlib import Path

import rag_core
from rag_core.pdf.extraction import PdfExtraction
from rag_core.settings import (
    EXTRACT_MEMORY_MB,
    EXTRACT_SECONDS_BASE,
    EXTRACT_SECONDS_MAX,
    EXTRACT_SECONDS_PER_PAGE,
    EXTRACT_WORKERS,
    MAX_PDF_PAGES,
    OCR_LANG,
    OCR_SECONDS_MAX,
    OCR_SECONDS_PER_PAGE,
    ocr_threads,
)
from rag_core.text.chunking import PageText

# Time a new extraction worker may take to start (spawn, imports) before its first file's budget runs.
_STARTUP_S = 60.0
_WORKER_FAILED = ("The PDF reader could not start for this file (twice); check the memory limit "
                  "RAG_CORE_EXTRACT_MEMORY_MB.")


def _start_extract_worker(memory_bytes: int, *args: str) -> subprocess.Popen:
    """``python -m rag_core.pdf.worker MEMORY_BYTES [ARGS]`` with pipes to and from it."""
    package_root = str(Path(rag_core.__file__).resolve().parents[1])  # the folder holding rag_core/
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    # a process group of its own: stopping the worker stops the Tesseract processes it started
    return subprocess.Popen([sys.executable, "-m", "rag_core.pdf.worker", str(memory_bytes), *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            close_fds=True, start_new_session=True)


class _Worker:
    """One ``python -m rag_core.pdf.worker`` child and the job it is on."""

    def __init__(self, memory_bytes: int):
        self.process = _start_extract_worker(memory_bytes)
        self.buffer = b""
        self.job: int | None = None
        self.started = 0.0
        self.deadline = 0.0
        self.took_job = False
        self.eof = False
        self.pages = 0  # the pages of its file, once counted
        self.ocr_pages = 0  # the pages it reads by OCR, once known

    def fileno(self) -> int:
        return self.process.stdout.fileno()

    def send(self, job: int, name: str, data: bytes, max_pages: int, ocr: dict | None = None) -> None:
        header = json.dumps({"job": job, "name": name, "size": len(data), "max_pages": max_pages,
                             "ocr": ocr}).encode() + b"\n"
        self.process.stdin.write(header)
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def messages(self) -> list[dict]:
        """The complete messages that have arrived (call when the pipe is readable)."""
        block = os.read(self.fileno(), 1 << 16)
        if not block:
            self.eof = True
        self.buffer += block
        *lines, self.buffer = self.buffer.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]

    def alive(self) -> bool:
        return not self.eof and self.process.poll() is None

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)  # the worker and any Tesseract it runs
        end_child(self.process)


def end_child(process: subprocess.Popen) -> None:
    """Stop a child process (killed if it still runs), reap it and close its pipes."""
    if process.poll() is None:
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(5)
    for pipe in (process.stdin, process.stdout):
        with contextlib.suppress(OSError):
            if pipe is not None:
                pipe.close()


class ExtractionPool:
    """Worker processes that extract PDFs under a time and a memory budget each.

    A worker that runs past its file's time budget is killed and replaced, and the file
    reported ``too_slow``; the budget is ``seconds_base + seconds_per_page * pages`` (at
    most ``seconds_max``), known once the worker has opened the file, plus
    ``ocr_seconds_per_page`` for each page it reads by OCR, shared by its OCR threads (then at
    most ``ocr_seconds_max``).
    """

    def __init__(
        self,
        *,
        workers: int = EXTRACT_WORKERS,
        seconds_base: float = EXTRACT_SECONDS_BASE,
        seconds_per_page: float = EXTRACT_SECONDS_PER_PAGE,
        seconds_max: float = EXTRACT_SECONDS_MAX,
        memory_mb: int = EXTRACT_MEMORY_MB,
        max_pages: int = MAX_PDF_PAGES,
        ocr_seconds_per_page: float = OCR_SECONDS_PER_PAGE,
        ocr_seconds_max: float = OCR_SECONDS_MAX,
    ):
        self.n_workers = max(1, int(workers))
        self.ocr_seconds_per_page = float(ocr_seconds_per_page)
        self.ocr_seconds_max = float(ocr_seconds_max)
        self.seconds_base = float(seconds_base)
        self.seconds_per_page = float(seconds_per_page)
        self.seconds_max = float(seconds_max)
        self.memory_bytes = int(memory_mb) * 1024 * 1024
        self.max_pages = int(max_pages)
        self._workers: list[_Worker] = []

    def _spawn(self) -> _Worker:
        return _Worker(self.memory_bytes)

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        self._workers = []

    def __enter__(self) -> ExtractionPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(
        self,
        jobs: Sequence[tuple[str, bytes]],
        *,
        on_event: Callable[[str, int, dict], None] | None = None,
        ocr: str = "auto",
        ocr_lang: str = OCR_LANG,
    ) -> list[PdfExtraction]:
        """Extract ``(name, bytes)`` jobs; results in job order.

        ``on_event(kind, job, info)`` is told "start", "page" (``done``/``total``), "ocr" (pages
        read by OCR, ``done``/``total``) and "done". ``ocr`` and ``ocr_lang`` are
        :func:`~rag_core.pdf.extraction.extract_pdf`'s ("defer" for an ingest's first pass).
        """
        results: list[PdfExtraction | None] = [None] * len(jobs)
        queue = list(range(len(jobs)))
        failures: dict[int, int] = {}
        while len(self._workers) < min(self.n_workers, len(jobs)):
            self._workers.append(self._spawn())
        # the cores shared by the files read at once: one file alone gets them all for its scanned pages
        threads = max(1, ocr_threads() // max(1, min(len(self._workers), len(jobs))))
        options = {"mode": ocr, "lang": ocr_lang, "threads": threads}

        def emit(kind: str, job: int, info: dict) -> None:
            if on_event is not None:
                on_event(kind, job, info)

        def finish(worker: _Worker, payload: dict) -> None:
            job = worker.job
            pages = [PageText(n, t, label) for n, t, label in payload.get("pages", [])]
            extraction = PdfExtraction(source=jobs[job][0], status=payload["status"], reason=payload["reason"],
                                       pages=pages, n_pages=payload.get("n_pages", 0),
                                       sha256=payload.get("sha256", ""), warnings=payload.get("warnings", []))
            if payload.get("metadata") and hasattr(extraction, "metadata"):
                extraction.metadata = payload["metadata"]
            extraction.ocr = payload.get("ocr")
            extraction.ocr_layer = payload.get("ocr_layer")
            extraction.ocr_needed = list(payload.get("ocr_needed") or [])
            results[job] = extraction
            worker.job = None
            emit("done", job, {"status": extraction.status, "pages": extraction.n_pages,
                               "ocr_needed": len(extraction.ocr_needed),
                               "seconds": time.monotonic() - worker.started})

        def failed_to_start(worker: _Worker) -> None:
            """The worker died before it took its job: try once more with a new one, then give up."""
            job = worker.job
            failures[job] = failures.get(job, 0) + 1
            if failures[job] >= 2:
                finish(worker, {"status": "damaged", "n_pages": 0, "reason": _WORKER_FAILED})
            else:
                worker.job = None
                queue.insert(0, job)

        while queue or any(w.job is not None for w in self._workers):
            for i, worker in enumerate(self._workers):
                if worker.job is not None or not queue:
                    continue
                if not worker.alive():
                    worker.stop()
                    worker = self._workers[i] = self._spawn()
                job = queue.pop(0)
                # the budget starts when the worker takes the job (a new worker first imports its code)
                worker.job, worker.started, worker.took_job = job, time.monotonic(), False
                worker.pages = worker.ocr_pages = 0
                worker.deadline = worker.started + self.seconds_base + _STARTUP_S
                try:
                    worker.send(job, jobs[job][0], jobs[job][1], self.max_pages, options)
                except OSError:
                    failed_to_start(worker)
                    worker.stop()
                    self._workers[i] = self._spawn()
                    continue
                emit("start", job, {})
            busy = [w for w in self._workers if w.job is not None]
            if not busy:
                continue
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = wait(busy, timeout=min(timeout, 1.0))
            now = time.monotonic()
            for i, worker in enumerate(self._workers):
                if worker.job is None:
                    continue
                if worker in ready:
                    for message in worker.messages():
                        if message["kind"] == "start":
                            worker.took_job = True
                            worker.started = time.monotonic()
                            worker.deadline = worker.started + self.seconds_base
                        elif message["kind"] == "page":
                            worker.pages = message["total"]
                            worker.deadline = self._deadline(worker, threads)
                            emit("page", message["job"], {"done": message["done"], "total": message["total"]})
                        elif message["kind"] == "ocr":
                            worker.ocr_pages = message["total"]
                            worker.deadline = self._deadline(worker, threads)
                            emit("ocr", message["job"], {"done": message["done"], "total": message["total"]})
                        elif message["kind"] == "done" and worker.job is not None:
                            finish(worker, message["result"])
                if worker.job is None:
                    continue
                if not worker.alive():
                    if worker.took_job:
                        finish(worker, {"status": "damaged", "n_pages": 0, "reason": (
                            "The PDF reader stopped while reading this file (it ran out of memory or crashed, "
                            f"exit code {worker.process.poll()}); the file was skipped.")})
                    else:
                        failed_to_start(worker)
                    worker.stop()
                    self._workers[i] = self._spawn() if queue else worker
                elif now >= worker.deadline:
                    spent = now - worker.started
                    finish(worker, {"status": "too_slow", "n_pages": 0, "reason": (
                        f"Reading this PDF took longer than its time budget ({spent:.0f} s) and was stopped: "
                        + (f"it was reading its {worker.ocr_pages:,} scanned pages by OCR, which take longer than the "
                           f"budget allows ({self.ocr_seconds_per_page:g} s a page, RAG_CORE_OCR_SECONDS_PER_PAGE). "
                           "Split it, or add it with OCR off (`--ocr off`)." if worker.ocr_pages else
                           "its pages are unusually costly to read (a huge or repeated content stream). "
                           "Save it again with another PDF tool, or split it."))})
                    worker.stop()
                    self._workers[i] = self._spawn() if queue else worker
        self._workers = [w for w in self._workers if w.alive()]
        return results  # type: ignore[return-value]

    def _deadline(self, worker: _Worker, threads: int) -> float:
        """When the worker's file runs out of time: its pages' budget, and its OCR pages' on top."""
        budget = min(self.seconds_max, self.seconds_base + self.seconds_per_page * worker.pages)
        if worker.ocr_pages:
            budget = min(max(self.ocr_seconds_max, budget),
                         budget + self.ocr_seconds_per_page * worker.ocr_pages / max(1, min(threads, worker.ocr_pages)))
        return worker.started + budget


def extract_pdf_budgeted(data: bytes, name: str, **budgets) -> PdfExtraction:
    """One PDF read in a worker process under the ingest's time and memory budgets (or the
    :class:`ExtractionPool` keyword arguments ``budgets`` give): its text, or a status such as
    ``too_slow`` or ``too_large`` with the reason."""
    with ExtractionPool(workers=1, **budgets) as pool:
        return pool.run([(name, data)])[0]


class PageCounter:
    """Counts every file's pages before the readers get to it, for the time estimate.

    A ``python -m rag_core.pdf.worker --count`` child (the same memory limit as a reader)
    asks pdfium for each file's page count, about a millisecond a file; a thread feeds it
    and kills it when one answer takes longer than ``seconds_per_file`` (a hostile page
    tree), leaving the files it did not count to be estimated from their size. Counts
    arrive in :attr:`counts`, a queue of ``(job, pages)`` the caller drains.
    """

    def __init__(self, jobs: Sequence[tuple[str, bytes]], *, memory_mb: int = EXTRACT_MEMORY_MB,
                 seconds_per_file: float = 2.0):
        self.jobs = jobs
        self.memory_bytes = int(memory_mb) * 1024 * 1024
        self.seconds_per_file = float(seconds_per_file)
        self.counts: queue.SimpleQueue[tuple[int, int]] = queue.SimpleQueue()
        self._process: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._run, name="rag-core-page-counter", daemon=True)

    def __enter__(self) -> PageCounter:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
        self._thread.join(5)

    def _run(self) -> None:
        try:
            process = self._process = _start_extract_worker(self.memory_bytes, "--count")
        except OSError:
            return
        try:
            for job, (name, data) in enumerate(self.jobs):
                header = {"job": job, "name": name, "size": len(data)}
                process.stdin.write(json.dumps(header).encode() + b"\n")
                process.stdin.write(data)
                process.stdin.flush()
                # the first answer also waits for the child's start (interpreter and pdfium)
                timeout = self.seconds_per_file + (_STARTUP_S if job == 0 else 0.0)
                if not wait([process.stdout], timeout=timeout):
                    break
                line = process.stdout.readline()
                if not line:
                    break
                message = json.loads(line)
                if isinstance(message.get("pages"), int) and message["pages"] > 0:
                    self.counts.put((job, min(message["pages"], MAX_PDF_PAGES)))
        except (OSError, ValueError):
            pass
        finally:
            end_child(process)
