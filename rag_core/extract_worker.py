"""The extraction worker process: reads PDFs sent over a pipe, inside a memory limit.

Kept apart from :mod:`rag_core.ingest` so a worker imports only the PDF reader (about
50 MB of address space), not numpy, scikit-learn or torch.
"""

from __future__ import annotations

import time
from multiprocessing.connection import Connection


def serve(conn: Connection, memory_bytes: int) -> None:  # pragma: no cover - runs in a child process
    """Extract PDFs sent over ``conn`` as ``(job, name, data, max_pages)`` until told to stop (None)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):
        pass
    import pypdf  # noqa: F401  (imported before the first file's time budget starts)

    from .pdf import extract_pdf

    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        job_id, name, data, max_pages = job
        conn.send(("start", job_id))
        last = [0.0]

        def on_page(done: int, total: int, job_id=job_id, last=last) -> None:
            now = time.monotonic()
            if done in (0, total) or now - last[0] > 0.25:
                last[0] = now
                conn.send(("page", job_id, done, total))

        try:
            result = extract_pdf(data, name=name, max_pages=max_pages, on_page=on_page)
            payload = {
                "status": result.status, "reason": result.reason, "n_pages": result.n_pages,
                "sha256": result.sha256, "warnings": list(result.warnings),
                "pages": [(p.number, p.text, p.label) for p in result.pages],
                "metadata": dict(getattr(result, "metadata", None) or {}),
            }
        except MemoryError:
            payload = {"status": "too_large", "n_pages": 0, "reason": (
                f"Reading this PDF needs more than {memory_bytes // (1024 * 1024):,} MiB of memory, "
                "the limit for one file (RAG_CORE_EXTRACT_MEMORY_MB).")}
        except Exception as exc:  # noqa: BLE001 - any crash of the reader is the file's problem
            payload = {"status": "damaged", "n_pages": 0,
                       "reason": f"The PDF reader failed on this file ({type(exc).__name__})."}
        del data
        conn.send(("done", job_id, payload))
