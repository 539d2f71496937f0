"""The extraction worker process: reads PDFs sent on its stdin, inside a memory limit.

Run as ``python -m rag_core.pdf.worker MEMORY_BYTES`` by
:class:`rag_core.pdf.pool.ExtractionPool`. A plain child process (not ``multiprocessing``,
which would re-run the parent's main script, such as a Streamlit page) that imports only
the PDF reader (about 50 MB of address space).

Protocol, all of it between rag_core's own processes: a job is one JSON line
``{"job", "name", "size", "max_pages", "ocr"}`` followed by ``size`` bytes of the file
(``ocr``: ``{"mode", "lang", "threads"}``, see :func:`rag_core.pdf.extraction.extract_pdf`);
the worker answers with JSON lines ``{"kind": "start" | "page" | "ocr" | "done", "job", ...}``
("ocr": pages read by OCR so far, ``done`` of ``total``). Tesseract runs as children of the
worker, which its pool starts in a process group of its own so that stopping it stops them.

``python -m rag_core.pdf.worker MEMORY_BYTES --count`` only counts each file's pages
(pdfium reads the page tree; about a millisecond a file) and answers
``{"kind": "count", "job", "pages"}`` with ``pages`` null where it cannot; the ingest's time
estimate uses these counts for files no reader has opened yet.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator


def _send(out, message: dict) -> None:
    out.write(json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n")
    out.flush()


def _limit_memory(memory_bytes: int) -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):
        pass


def _jobs(source) -> Iterator[tuple[dict, bytes]]:
    """``(header, file bytes)`` of each job on ``source``, until it closes."""
    while True:
        header = source.readline()
        if not header:
            return
        job = json.loads(header)
        yield job, source.read(job["size"])


def count_pages(memory_bytes: int) -> int:  # pragma: no cover - runs in a child process
    """Answer each job with its page count only (null for a file pdfium cannot open)."""
    _limit_memory(memory_bytes)
    import pypdfium2

    out = sys.stdout.buffer
    for job, data in _jobs(sys.stdin.buffer):
        try:
            document = pypdfium2.PdfDocument(data)
            try:
                pages = len(document)
            finally:
                document.close()
        except Exception:  # noqa: BLE001 - a file pdfium cannot open is counted by its reader later
            pages = None
        del data
        _send(out, {"kind": "count", "job": job["job"], "pages": pages})
    return 0


def serve(memory_bytes: int) -> int:  # pragma: no cover - runs in a child process
    _limit_memory(memory_bytes)
    import pypdf  # noqa: F401  (imported before the first file's time budget starts)

    from rag_core.pdf.extraction import extract_pdf
    from rag_core.settings import EXTRACT_HOLD_ENV

    out = sys.stdout.buffer
    hold = os.environ.get(EXTRACT_HOLD_ENV)
    for job, data in _jobs(sys.stdin.buffer):
        job_id = job["job"]
        _send(out, {"kind": "start", "job": job_id})
        if hold and job["name"] == hold:  # the tests' way to a file that cannot be read inside any budget
            threading.Event().wait()
        last = [0.0]

        def on_page(done: int, total: int, job_id=job_id, last=last) -> None:
            now = time.monotonic()
            if done in (0, total) or now - last[0] > 0.25:
                last[0] = now
                _send(out, {"kind": "page", "job": job_id, "done": done, "total": total})

        def on_ocr_page(done: int, total: int, job_id=job_id) -> None:
            _send(out, {"kind": "ocr", "job": job_id, "done": done, "total": total})

        ocr = job.get("ocr") or {}
        try:
            result = extract_pdf(data, name=job["name"], max_pages=job["max_pages"], on_page=on_page,
                                 ocr=ocr.get("mode", "auto"), ocr_lang=ocr.get("lang") or "eng",
                                 ocr_threads=ocr.get("threads"), on_ocr_page=on_ocr_page)
            payload = {
                "status": result.status, "reason": result.reason, "n_pages": result.n_pages,
                "sha256": result.sha256, "warnings": list(result.warnings),
                "pages": [[p.number, p.text, p.label] for p in result.pages],
                "metadata": dict(getattr(result, "metadata", None) or {}),
                "ocr": result.ocr, "ocr_layer": result.ocr_layer, "ocr_needed": result.ocr_needed,
            }
        except MemoryError:
            payload = {"status": "too_large", "n_pages": 0, "reason": (
                f"Reading this PDF needs more than {memory_bytes // (1024 * 1024):,} MiB of memory, "
                "the limit for one file (RAG_CORE_EXTRACT_MEMORY_MB).")}
        except Exception as exc:  # noqa: BLE001 - any crash of the reader is the file's problem
            payload = {"status": "damaged", "n_pages": 0,
                       "reason": f"The PDF reader failed on this file ({type(exc).__name__})."}
        del data
        try:
            _send(out, {"kind": "done", "job": job_id, "result": payload})
        except MemoryError:
            _send(out, {"kind": "done", "job": job_id, "result": {
                "status": "too_large", "n_pages": 0, "reason": "The text of this PDF is too large to pass on."}})
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(count_pages(int(sys.argv[1])) if "--count" in sys.argv[2:] else serve(int(sys.argv[1])))
