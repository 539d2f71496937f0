"""The ingest pipeline: files in, a searchable collection out, dense vectors filled in behind.

1. **Read** each input safely: only regular files are opened (no FIFOs, devices or
   sockets), their size is checked with ``stat`` before a byte is read, and at most the
   size limit is ever read.
2. **Extract** each new file in a worker process under a time and a memory budget
   (:class:`ExtractionPool`), two files at a time on two cores. A file that takes too long
   is stopped (status ``too_slow``); one that needs too much memory gets ``too_large``.
   The collection's lock is not held meanwhile, so other ingests go on.
3. **Commit** the new documents under the collection's lock: chunks, TF-IDF and BM25
   over the whole collection. From here on the documents are searchable by TF-IDF, BM25
   and exact search.
4. **Embed** the chunks that have no dense vector yet (:func:`embed_pending`), one
   document at a time, each written as soon as it is done (crash-safe; a later run
   resumes), then fold the vectors into a new version. Hybrid search uses the vectors
   written so far and says how much of the collection they cover.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import queue
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import wait
from pathlib import Path

import numpy as np

import rag_core
from rag_core.collections.store.base import CollectionStore, EmbeddingStatus
from rag_core.pdf.extraction import PdfExtraction
from rag_core.settings import (
    CACHE_DIR_ENV,
    EXTRACT_MEMORY_MB,
    EXTRACT_SECONDS_BASE,
    EXTRACT_SECONDS_MAX,
    EXTRACT_SECONDS_PER_PAGE,
    EXTRACT_WORKERS,
    MAX_PDF_BYTES,
    MAX_PDF_PAGES,
    RATES_FILE_ENV,
    SEGMENT_MAX_CHUNKS,
)
from rag_core.text.chunking import PageText
from rag_core.text.passage_context import chunk_pdf

log = logging.getLogger(__name__)

EMBED_MODES = ("now", "background", "none")
# Time a new extraction worker may take to start (spawn, imports) before its first file's budget runs.
_STARTUP_S = 60.0
_WORKER_FAILED = ("The PDF reader could not start for this file (twice); check the memory limit "
                  "RAG_CORE_EXTRACT_MEMORY_MB.")
_READ_BLOCK = 1 << 20


# --------------------------------------------------------------------------- reports


@dataclass
class FileReport:
    """What happened to one file of an ingest: ``status`` "ok", "duplicate" or a problem."""

    source: str
    status: str
    reason: str
    pages: int = 0
    chunks: int = 0
    doc_id: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class IngestReport:
    collection: str
    files: list[FileReport] = field(default_factory=list)
    chunks_added: int = 0
    seconds: float = 0.0
    version: str | None = None
    searchable_after_s: float | None = None
    embedding: EmbeddingStatus | None = None
    collection_removed: bool = False  # created by this ingest and removed again: nothing could be added

    @property
    def added(self) -> list[FileReport]:
        return [f for f in self.files if f.ok]

    @property
    def skipped(self) -> list[FileReport]:
        return [f for f in self.files if not f.ok]

    def to_dict(self) -> dict:
        return {
            "collection": self.collection,
            "files": [f.to_dict() for f in self.files],
            "chunks_added": self.chunks_added,
            "seconds": round(self.seconds, 3),
            "searchable_after_s": None if self.searchable_after_s is None else round(self.searchable_after_s, 3),
            "version": self.version,
            "embedding": None if self.embedding is None else self.embedding.to_dict(),
            "collection_removed": self.collection_removed,
        }


@dataclass
class IngestProgress:
    """A progress event: ``stage`` is "read", "extract", "index", "embed" or "done".

    ``eta_s`` is the time left for what the call waits for, from rates measured in this
    run (and, before there are any, from the last run on this machine).
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


# --------------------------------------------------------------------------- reading inputs


@dataclass
class InputFile:
    """One input, read: ``data`` is None when it could not or must not be read (``status`` says why)."""

    name: str
    given: str
    data: bytes | None = None
    status: str | None = None
    reason: str | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data or b"").hexdigest()


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def read_input(item, *, max_bytes: int = MAX_PDF_BYTES) -> InputFile:
    """Read a path or a ``(name, bytes)`` pair without ever blocking or reading past the limit."""
    if isinstance(item, tuple) and len(item) == 2:
        raw_name, data = item
        name = Path(str(raw_name).replace("\\", "/")).name or "document.pdf"
        data = bytes(data)
        given = str(raw_name)
        if not data:
            return InputFile(name, given, None, "empty", "The file is empty (0 bytes).")
        if len(data) > max_bytes:
            return InputFile(name, given, None, "too_large",
                             f"The file is {_mib(len(data))}, over the limit of {_mib(max_bytes)}.")
        return InputFile(name, given, data)
    if not isinstance(item, (str, os.PathLike)):
        raise TypeError(
            f"files must be paths or (name, bytes) pairs, got {type(item).__name__}; "
            "convert uploads with (upload.name, upload.getvalue())"
        )
    path = Path(item)
    given = str(item)

    def refuse(status: str, reason: str) -> InputFile:
        return InputFile(path.name or given, given, None, status, reason)

    try:
        info = os.stat(path)
    except FileNotFoundError:
        return refuse("unreadable_file", f"File not found: {given}.")
    except OSError as exc:
        return refuse("unreadable_file", f"{given} cannot be read ({exc.strerror or exc}).")
    if stat.S_ISDIR(info.st_mode):
        return refuse("unreadable_file", f"{given} is a folder, not a file.")
    if not stat.S_ISREG(info.st_mode):
        return refuse("unreadable_file",
                      f"{given} is not a regular file (a pipe, device or socket); it was not opened.")
    if info.st_size == 0:
        return refuse("empty", "The file is empty (0 bytes).")
    if info.st_size > max_bytes:
        return refuse("too_large", f"The file is {_mib(info.st_size)}, over the limit of {_mib(max_bytes)}.")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return refuse("unreadable_file", f"{given} cannot be opened ({exc.strerror or exc}).")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped for something else since the stat
            return refuse("unreadable_file", f"{given} is not a regular file; it was not opened.")
        chunks, total = [], 0
        while total <= max_bytes:
            block = os.read(fd, min(_READ_BLOCK, max_bytes + 1 - total))
            if not block:
                break
            chunks.append(block)
            total += len(block)
    except OSError as exc:
        return refuse("unreadable_file", f"{given} cannot be read ({exc.strerror or exc}).")
    finally:
        os.close(fd)
    if total > max_bytes:
        return refuse("too_large", f"The file grew past the limit of {_mib(max_bytes)} while it was read.")
    if total == 0:
        return refuse("empty", "The file is empty (0 bytes).")
    return InputFile(path.name, given, b"".join(chunks))


@dataclass
class FolderScan:
    """The PDF files found in the given paths, and what was passed over and why."""

    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def collect_pdf_files(paths: Iterable[str | os.PathLike]) -> FolderScan:
    """Expand folders to the ``.pdf`` files inside (recursively); files are kept as given.

    Inside a folder, other files and links that lead out of the folder are skipped, with
    the reason.
    """
    scan = FolderScan()
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            scan.files.append(str(raw))
            continue
        top = path.resolve()
        for item in sorted(path.rglob("*")):
            if item.is_dir():
                continue
            if item.suffix.lower() != ".pdf":
                scan.skipped.append((str(item), "not a .pdf file"))
                continue
            if item.is_symlink():
                target = item.resolve()
                if top not in target.parents:
                    scan.skipped.append((str(item), "a link to a file outside the folder"))
                    continue
            scan.files.append(str(item))
    return scan


# --------------------------------------------------------------------------- extraction workers


def _start_extract_worker(memory_bytes: int, *args: str) -> subprocess.Popen:
    """``python -m rag_core.pdf.worker MEMORY_BYTES [ARGS]`` with pipes to and from it."""
    package_root = str(Path(rag_core.__file__).resolve().parents[1])  # the folder holding rag_core/
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return subprocess.Popen([sys.executable, "-m", "rag_core.pdf.worker", str(memory_bytes), *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            close_fds=True)


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

    def fileno(self) -> int:
        return self.process.stdout.fileno()

    def send(self, job: int, name: str, data: bytes, max_pages: int) -> None:
        header = json.dumps({"job": job, "name": name, "size": len(data), "max_pages": max_pages}).encode() + b"\n"
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
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()


class ExtractionPool:
    """Worker processes that extract PDFs under a time and a memory budget each.

    A worker that runs past its file's time budget is killed and replaced, and the file
    reported ``too_slow``; the budget is ``seconds_base + seconds_per_page * pages`` (at
    most ``seconds_max``), known once the worker has opened the file.
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
    ):
        self.n_workers = max(1, int(workers))
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
    ) -> list[PdfExtraction]:
        """Extract ``(name, bytes)`` jobs; results in job order.

        ``on_event(kind, job, info)`` is told "start", "page" (``done``/``total``) and "done".
        """
        results: list[PdfExtraction | None] = [None] * len(jobs)
        queue = list(range(len(jobs)))
        failures: dict[int, int] = {}
        while len(self._workers) < min(self.n_workers, len(jobs)):
            self._workers.append(self._spawn())

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
            results[job] = extraction
            worker.job = None
            emit("done", job, {"status": extraction.status, "pages": extraction.n_pages,
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
                worker.deadline = worker.started + self.seconds_base + _STARTUP_S
                try:
                    worker.send(job, jobs[job][0], jobs[job][1], self.max_pages)
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
                            worker.deadline = worker.started + min(
                                self.seconds_max, self.seconds_base + self.seconds_per_page * message["total"])
                            emit("page", message["job"], {"done": message["done"], "total": message["total"]})
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
                        "its pages are unusually costly to read (a huge or repeated content stream). "
                        "Save it again with another PDF tool, or split it.")})
                    worker.stop()
                    self._workers[i] = self._spawn() if queue else worker
        self._workers = [w for w in self._workers if w.alive()]
        return results  # type: ignore[return-value]


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
            if process.poll() is None:
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)
            for pipe in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    pipe.close()


# --------------------------------------------------------------------------- rates for honest ETAs


# Until an ingest on this machine has measured them: pages a second per reader process, passages
# a page, seconds of indexing a passage, and passages embedded a second by each bi-encoder variant
# (measured on a 2-core CPU; the first ingest elsewhere replaces them with its own figures).
_RATE_DEFAULTS = {"pages_per_s": 25.0, "chunks_per_page": 2.8, "embed_chunks_per_s": 15.0,
                  "index_s_per_chunk": 0.0015}
# An index commit costs a fixed part (the lock, files written and synced) and a part per chunk
# it indexes; a commit of fewer chunks than this says little about the second, so is not remembered.
_INDEX_BASE_S = 0.25
_INDEX_RATE_MIN_CHUNKS = 500
_EMBED_DEFAULTS = {"onnx-int8": 28.0, "onnx-fp32": 18.0, "torch": 15.0}
_EMBED_KEY = "embed_chunks_per_s:"  # + the encoder variant: each variant's rate is remembered apart


# How many pages (passages) of work the remembered rate counts for against the rate measured in
# this run: early measurements are rough (each file's first pages, the longest passages first),
# so the estimate moves from the remembered rate to the measured one as the work goes on.
_PRIOR_PAGES = 200
_PRIOR_CHUNKS = 128


def chunks_indexed(existing: float, new: float) -> float:
    """Chunks a commit indexes: all of them (a refit) up to a segment, else the new ones (a new segment)."""
    return new if existing + new > SEGMENT_MAX_CHUNKS else existing + new


def blended_rate(done: float, seconds: float, prior_rate: float, prior_weight: float) -> float:
    """Work a second: ``done`` in ``seconds`` measured, plus ``prior_weight`` units at ``prior_rate``."""
    if prior_rate <= 0:
        return done / max(seconds, 1e-3)
    return (done + prior_weight) / (max(seconds, 0.0) + prior_weight / prior_rate)


def embed_rate_key(variant: str) -> str:
    return _EMBED_KEY + variant


def expected_embed_rate(rates: dict[str, float], variant: str | None) -> float:
    """Passages a second the ``variant`` bi-encoder embedded here before (else a default)."""
    if variant is None:
        return rates["embed_chunks_per_s"]
    return rates.get(embed_rate_key(variant), _EMBED_DEFAULTS.get(variant, rates["embed_chunks_per_s"]))


def _rates_path() -> Path:
    if os.environ.get(RATES_FILE_ENV):
        return Path(os.environ[RATES_FILE_ENV])
    from platformdirs import user_cache_dir

    return Path(os.environ.get(CACHE_DIR_ENV) or user_cache_dir("rag_core", appauthor=False)) / "rates.json"


def _is_rate_key(key: str) -> bool:
    return key in _RATE_DEFAULTS or key.startswith(_EMBED_KEY)


def _saved_rates() -> dict[str, float]:
    """The rates an earlier ingest measured here (valid entries of the rates file only)."""
    try:
        saved = json.loads(_rates_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(saved, dict):
        return {}
    return {k: float(v) for k, v in saved.items()
            if _is_rate_key(k) and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0}


def measured_rates() -> dict[str, float]:
    """Rates measured by earlier ingests on this machine (defaults where none were)."""
    return {**_RATE_DEFAULTS, **_saved_rates()}


def remember_rates(**rates: float) -> None:
    """Fold newly measured rates into the remembered ones: the mean of the two, so one unusual
    ingest (another program busy, a commit three times slower than the last) moves the next
    estimate half way; a rate measured for the first time is taken as it is."""
    from rag_core.atomic import write_json_atomic

    saved = _saved_rates()
    current = {**_RATE_DEFAULTS, **saved}
    for k, v in rates.items():
        if v and v > 0 and _is_rate_key(k):
            current[k] = (saved[k] + float(v)) / 2 if k in saved else float(v)
    try:
        _rates_path().parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(_rates_path(), current)
    except OSError:
        pass


def _remember_index_rate(seconds: float, chunks: int) -> None:
    if chunks >= _INDEX_RATE_MIN_CHUNKS:
        remember_rates(index_s_per_chunk=max(seconds - _INDEX_BASE_S, 0.0) / chunks)


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
        self.pages_counted: dict[int, int] = {}  # page counts of files before a reader opens them
        self.counter: PageCounter | None = None
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
        # files are chunked once every file is read: until then every page still counts
        extracting = self.stage in ("read", "extract")
        chunks_expected = pages_total * self.rates["chunks_per_page"] if extracting else self.chunks_new
        indexing = self.stage in ("read", "extract", "index")
        index_left = _INDEX_BASE_S + self.rates["index_s_per_chunk"] * chunks_indexed(
            self.existing_chunks, chunks_expected) if indexing else 0.0
        embed_left = 0.0
        if self.embed:
            total = self.embed_total if self.embed_total is not None else chunks_expected
            embed_left = max(total - self.embed_done, 0) / self.embed_rate()
        return extract_left + index_left + embed_left, time.perf_counter() - self.started

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
        ))


# --------------------------------------------------------------------------- the pipeline


def _planned_variant(settings: dict) -> str | None:
    """The bi-encoder variant an embedding run will use (None if that cannot be told)."""
    from rag_core.models.loading import planned_encoder

    try:
        return planned_encoder(settings.get("encoder"))
    except ValueError:
        return None


def _unique_source(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    n = 2
    while True:
        candidate = f"{stem} ({n}){'.' + ext if ext else ''}"
        if candidate not in taken:
            return candidate
        n += 1


def _metadata_title(extraction: PdfExtraction) -> str | None:
    return (getattr(extraction, "metadata", None) or {}).get("title")


def _document_record(doc_id: str, source: str, upload: InputFile, extraction: PdfExtraction, n_chunks: int) -> dict:
    metadata = dict(getattr(extraction, "metadata", None) or {})
    return {
        "doc_id": doc_id, "source": source, "file_name": upload.name, "sha256": upload.sha256,
        "pages": extraction.n_pages, "chunks": n_chunks, "bytes": len(upload.data or b""),
        "has_page_labels": any(p.label for p in extraction.pages), "added": time.time(),
        "warnings": list(extraction.warnings or []),
        "title": metadata.get("title"), "authors": metadata.get("authors"), "year": metadata.get("year"),
    }


def ingest_files(
    store: CollectionStore,
    name: str,
    files: Iterable,
    *,
    progress: Callable[[IngestProgress], None] | None = None,
    embed: str = "now",
    pool: ExtractionPool | None = None,
) -> IngestReport:
    """Add PDFs to an existing collection; one bad file never stops the others.

    ``embed``: "now" computes the dense vectors before returning, "background" in a thread
    of this process, "none" leaves them for a later :func:`embed_pending`.
    """
    if embed not in EMBED_MODES:
        raise ValueError(f"embed must be one of {EMBED_MODES}, got {embed!r}")
    files = list(files)
    started = time.perf_counter()
    report = IngestReport(collection=name)
    settings = store.read_settings(name)
    clock = _Clock(len(files), min(EXTRACT_WORKERS, max(len(files), 1)), embed == "now", progress,
                   encoder=_planned_variant(settings) if embed == "now" else None)
    documents = store.read_documents(name)
    known = {d["sha256"]: d["source"] for d in documents}
    clock.existing_chunks = sum(int(d.get("chunks", 0)) for d in documents)

    # 1. read, hash, skip what is already there
    slots: list[FileReport | None] = [None] * len(files)
    uploads: list[tuple[int, InputFile]] = []
    seen: dict[str, str] = {}
    for n, item in enumerate(files):
        clock.emit("read", None)
        upload = read_input(item)
        if upload.data is None:
            slots[n] = FileReport(upload.name, upload.status or "unreadable_file", upload.reason or "")
            clock.files_done += 1
            continue
        sha = upload.sha256
        if sha in known or sha in seen:
            where = known.get(sha) or seen[sha]
            slots[n] = FileReport(upload.name, "duplicate", f"Same content as {where!r}, already in the collection; "
                                  "skipped.", doc_id=sha[:16])
            clock.files_done += 1
            continue
        seen[sha] = upload.name
        uploads.append((n, upload))

    # 2. extract in worker processes, outside the collection's lock
    extracted: dict[int, tuple[InputFile, PdfExtraction, list[dict]]] = {}
    if uploads:
        clock.extract_started = time.perf_counter()
        clock.file_bytes = {job: len(upload.data or b"") for job, (_, upload) in enumerate(uploads)}

        def on_event(kind: str, job: int, info: dict) -> None:
            if kind == "page":
                clock.page_read(job, info["done"], info["total"])
            elif kind == "done":
                clock.files_done += 1
                clock.pages_done[job] = clock.pages_known.setdefault(job, info["pages"])
            clock.emit("extract", uploads[job][1].name)

        own_pool = pool is None
        pool = pool or ExtractionPool(workers=min(EXTRACT_WORKERS, len(uploads)))
        jobs = [(u.name, u.data) for _, u in uploads]
        counter = clock.counter = PageCounter(jobs) if len(jobs) > 1 and progress is not None else None
        try:
            with counter or contextlib.nullcontext():
                results = pool.run(jobs, on_event=on_event)
        finally:
            clock.counter = None
            if own_pool:
                pool.close()
        for (n, upload), extraction in zip(uploads, results, strict=True):
            if not extraction.ok:
                slots[n] = FileReport(upload.name, extraction.status, extraction.reason, pages=extraction.n_pages)
                continue
            chunks = chunk_pdf(extraction.pages, upload.name, settings["chunk_size"], settings["overlap"],
                               metadata_title=_metadata_title(extraction))
            if not chunks:
                slots[n] = FileReport(upload.name, "no_text", "No text to index was found.", pages=extraction.n_pages)
                continue
            extracted[n] = (upload, extraction, chunks)
            clock.chunks_new += len(chunks)
        pages_read = sum(e.n_pages for _, e, _ in extracted.values())
        # measured from the first page read, as the clock measures it (not from starting the readers)
        first = clock.first_page[0] if clock.first_page is not None else clock.extract_started
        seconds = time.perf_counter() - first
        if pages_read >= 20:
            remember_rates(pages_per_s=pages_read / seconds / max(clock.workers, 1),
                           chunks_per_page=clock.chunks_new / max(pages_read, 1))

    # 3. commit under the lock: whatever another ingest added meanwhile is a duplicate now
    if extracted:
        clock.emit("index")
        t_index = time.perf_counter()
        with store.writing(name):
            settings = store.read_settings(name)
            documents = store.read_documents(name)
            known = {d["sha256"]: d["source"] for d in documents}
            taken = {d["source"] for d in documents}
            new_docs, new_chunks, new_files = [], [], {}
            for n in sorted(extracted):
                upload, extraction, chunks = extracted[n]
                sha = upload.sha256
                if sha in known:
                    slots[n] = FileReport(upload.name, "duplicate", f"Same content as {known[sha]!r}, added by "
                                          "another ingest meanwhile; skipped.", doc_id=sha[:16])
                    continue
                source = _unique_source(upload.name, taken)
                taken.add(source)
                known[sha] = source
                doc_id = sha[:16]
                for chunk in chunks:
                    chunk["source"] = source
                    chunk["doc_id"] = doc_id
                new_chunks.extend(chunks)
                new_files[sha] = upload.data
                new_docs.append(_document_record(doc_id, source, upload, extraction, len(chunks)))
                reason = extraction.reason if source == upload.name else f"{extraction.reason}; stored as {source!r}"
                slots[n] = FileReport(upload.name, "ok", reason, pages=extraction.n_pages, chunks=len(chunks),
                                      doc_id=doc_id)
            total = sum(int(d.get("chunks", 0)) for d in documents) + len(new_chunks)
            if new_docs and hasattr(store, "append") and total > SEGMENT_MAX_CHUNKS:
                # a large collection: the new chunks go into a segment of their own, nothing is refitted
                report.version = store.append(name, documents=documents + new_docs, chunks=new_chunks,
                                              new_files=new_files)
                report.chunks_added = len(new_chunks)
                _remember_index_rate(time.perf_counter() - t_index, len(new_chunks))
            elif new_docs:
                index = store.load_index(name)
                old_chunks = [] if index is None else list(index.chunks)
                embeddings = dense_mask = None
                if index is not None and index.embeddings is not None:
                    dim = index.embeddings.shape[1]
                    embeddings = np.vstack([np.asarray(index.embeddings, dtype=np.float32),
                                            np.zeros((len(new_chunks), dim), dtype=np.float32)])
                    old_mask = np.ones(len(old_chunks), dtype=bool) if index.dense_mask is None else index.dense_mask
                    dense_mask = np.concatenate([old_mask, np.zeros(len(new_chunks), dtype=bool)])
                report.version = store.commit(
                    name, documents=documents + new_docs, chunks=old_chunks + new_chunks, embeddings=embeddings,
                    dense_mask=dense_mask, new_files=new_files,
                )
                report.chunks_added = len(new_chunks)
                total = len(old_chunks) + len(new_chunks)
                _remember_index_rate(time.perf_counter() - t_index, total)
        report.searchable_after_s = time.perf_counter() - started
    for slot in slots:
        if slot is not None:
            report.files.append(slot)

    # 4. dense vectors
    if embed == "now":
        def on_embed(done: int, total: int) -> None:
            if clock.embed_started is None:
                clock.embed_started, clock.embed_base = time.perf_counter(), done
            clock.embed_done, clock.embed_total = done, total
            clock.emit("embed")

        report.embedding = embed_pending(store, name, progress=on_embed)
    elif embed == "background":
        start_background_embedding(store, name)
        report.embedding = store.embedding_status(name)
    report.seconds = time.perf_counter() - started
    clock.emit("done")
    return report


def embed_pending(
    store: CollectionStore,
    name: str,
    *,
    progress: Callable[[int, int], None] | None = None,
    stop: threading.Event | None = None,
) -> EmbeddingStatus:
    """Compute the dense vectors the collection still lacks, write each document's as it is
    done, then fold them into a new version. Returns at once when another process or
    thread is already doing it; a stopped or killed run is resumed by the next one."""
    from rag_core.models.embedding import encode_passages
    from rag_core.models.loading import encoder_variant, load_bi_encoder

    with store.embedding_slot(name) as mine:
        if not mine:
            return store.embedding_status(name)
        settings = store.read_settings(name)
        status = store.embedding_status(name)
        started, done_at_start = time.time(), status.done
        total = status.total
        model = None
        prior, rate_from = 0.0, started
        try:
            while not (stop is not None and stop.is_set()):
                pending = store.pending_vectors(name)
                if not pending:
                    break
                if model is None:
                    model = load_bi_encoder(settings["embedding_model"], encoder=settings["encoder"])
                    prior = expected_embed_rate(measured_rates(), encoder_variant(model))
                    rate_from = time.time()  # loading the model is not embedding
                status = store.embedding_status(name)
                done, total = status.done, status.total
                for doc in pending:
                    base = done
                    vectors = encode_passages(
                        model, list(doc.texts),
                        progress=lambda k, _n, base=base, total=total, prior=prior, rate_from=rate_from: _report(
                            store, name, base + k, total, started, done_at_start, progress, prior, rate_from))
                    store.write_vectors(name, doc.key, vectors)
                    done += len(doc.texts)
                    _report(store, name, done, total, started, done_at_start, progress, prior, rate_from)
                    if stop is not None and stop.is_set():
                        break
            elapsed = time.time() - rate_from
            embedded = store.embedding_status(name).done - done_at_start
            if embedded >= 16 and elapsed > 0:
                rate = embedded / elapsed
                remember_rates(**{"embed_chunks_per_s": rate, embed_rate_key(encoder_variant(model)): rate})
            store.fold_in_vectors(name)
            stopped = stop is not None and stop.is_set()  # asked to stop: the next run resumes
            store.write_embedding_progress(name, {"running": False, "stopped": stopped, "started": started})
        except Exception as exc:
            store.write_embedding_progress(name, {"running": False, "started": started,
                                                  "error": f"{type(exc).__name__}: {exc}"})
            raise
    return store.embedding_status(name)


def _report(store: CollectionStore, name: str, done: int, total: int, started: float, done_at_start: int,
            progress: Callable[[int, int], None] | None, prior_rate: float = 0.0,
            rate_from: float | None = None) -> None:
    elapsed = time.time() - (started if rate_from is None else rate_from)
    rate = blended_rate(done - done_at_start, elapsed, prior_rate, _PRIOR_CHUNKS) if elapsed > 0 else None
    store.write_embedding_progress(name, {"running": True, "done": done, "total": total, "started": started,
                                          "rate": rate})
    if progress is not None:
        progress(done, total)


_background: dict[tuple[str, str, str], threading.Thread] = {}
_background_lock = threading.Lock()


def start_background_embedding(store: CollectionStore, name: str) -> bool:
    """Embed the collection's missing vectors in a daemon thread of this process.

    Returns False when this process already runs one for the collection. Errors are
    logged and kept in the collection's embedding status, where the app shows them.
    """
    key = (store.kind, store.location, name)
    with _background_lock:
        thread = _background.get(key)
        if thread is not None and thread.is_alive():
            return False

        def run() -> None:
            try:
                embed_pending(store, name, stop=_stopping)
            except Exception:
                log.exception("Embedding collection %r in the background failed", name)

        thread = threading.Thread(target=run, name=f"rag-core-embed-{name}", daemon=True)
        _background[key] = thread
        thread.start()
        return True


_stopping = threading.Event()


@atexit.register
def _stop_background_embedding() -> None:
    """At exit, let background embedders stop after their current document (what they wrote is
    kept; the next run resumes): a daemon thread killed inside torch aborts the process."""
    _stopping.set()
    for thread in list(_background.values()):
        thread.join(120)


def wait_for_background_embedding(store: CollectionStore, name: str, timeout: float | None = None) -> bool:
    """Wait for this process's background embedding of ``name``; True when none is running."""
    thread = _background.get((store.kind, store.location, name))
    if thread is None:
        return True
    thread.join(timeout)
    return not thread.is_alive()


def rebuild_from_originals(
    store: CollectionStore, name: str, settings: dict, wanted: dict[str, str]
) -> tuple[str | None, int, list[str]]:
    """Make a new live version from the stored original PDFs (the caller holds the writer lock).

    ``wanted`` maps each document's SHA-256 to its source name ("" when unknown). Used by
    ``check-store --repair`` when no complete version holds the committed documents.
    Returns the new version, how many documents it holds, and the documents that could
    not be restored. Dense vectors are left to be filled in behind.
    """
    originals, missing = [], []
    for sha, source in sorted(wanted.items(), key=lambda t: t[1]):
        data = store.read_pdf(name, sha)
        label = source or f"{sha[:16]}.pdf"
        if data is None or hashlib.sha256(data).hexdigest() != sha:
            missing.append(label)
            continue
        originals.append(InputFile(label, label, data))
    documents, chunks, taken = [], [], set()
    if originals:
        with ExtractionPool(workers=min(EXTRACT_WORKERS, len(originals))) as pool:
            results = pool.run([(u.name, u.data) for u in originals])
        for upload, extraction in zip(originals, results, strict=True):
            doc_chunks = chunk_pdf(extraction.pages, upload.name, settings["chunk_size"], settings["overlap"],
                                   metadata_title=_metadata_title(extraction)) if extraction.ok else []
            if not doc_chunks:
                missing.append(upload.name)
                continue
            source = _unique_source(upload.name, taken)
            taken.add(source)
            for chunk in doc_chunks:
                chunk["source"] = source
                chunk["doc_id"] = upload.sha256[:16]
            chunks.extend(doc_chunks)
            documents.append(_document_record(upload.sha256[:16], source, upload, extraction, len(doc_chunks)))
    version = store.commit(name, documents=documents, chunks=chunks, embeddings=None, dense_mask=None, new_files={})
    return version, len(documents), missing
