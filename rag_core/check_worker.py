"""A manuscript's check in a process of its own, under a time and a memory budget (the app's Verify page).

A check of many statements is seconds of work a statement, most of it Python holding the
interpreter lock: run in the app's process, it slowed every other person's searches. Here it
runs as ``python -m rag_core.check_worker``: the child opens the collection itself (the same
data folder or ``RAG_CORE_STORE``), checks the statements it is sent and reports its progress;
:func:`check_in_worker` (the parent side) reads the progress, stops the child when it runs past
its budget (``CHECK_SECONDS_BASE`` plus ``CHECK_SECONDS_PER_STATEMENT`` a statement) or when
its caller is stopped (a Streamlit rerun), and gives the report's rows.

:func:`check_one_in_worker` does the same for one statement as typed (the page's one-statement
form): a long one cannot hold the server that serves everyone else's pages.

Protocol, between rag_core's own processes: the job is one JSON line on the child's standard
input (``statements``, or ``one``: a statement as typed); the child answers JSON lines
``{"kind": "progress", "done", "total"}``, then
``{"kind": "done", "rows", "checks", "version"}`` or ``{"kind": "error", "message"}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from multiprocessing.connection import wait
from pathlib import Path

from rag_core.errors import RagCoreError
from rag_core.pdf.pool import end_child
from rag_core.settings import CHECK_HOLD_ENV, CHECK_MEMORY_MB, CHECK_SECONDS_BASE, CHECK_SECONDS_PER_STATEMENT

__all__ = ["CheckWorkerError", "check_in_worker", "check_one_in_worker"]


class CheckWorkerError(RagCoreError):
    """The check could not be finished (budget, memory, a crash); the message says what to do."""


def _send(message: dict) -> None:
    sys.stdout.write(json.dumps(message, ensure_ascii=True, default=_plain) + "\n")
    sys.stdout.flush()


def _plain(value):
    """numpy numbers and the like, as JSON numbers."""
    for kind in (int, float):
        with contextlib.suppress(TypeError, ValueError):
            if kind(value) == value:
                return kind(value)
    return str(value)


def _limit_memory(memory_mb: int) -> None:
    try:
        import resource

        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass


def serve() -> int:  # pragma: no cover - runs in a child process
    job = json.loads(sys.stdin.readline())
    _limit_memory(int(job["memory_mb"]))
    hold = os.environ.get(CHECK_HOLD_ENV)
    if hold:  # the tests' way to a check that cannot finish inside any budget
        Path(hold).write_text(str(os.getpid()), encoding="utf-8")
        threading.Event().wait()
    try:
        from rag_core.citations.manuscript import Citation, Statement, check_statements
        from rag_core.collections.library import Library

        library = Library(job["data_dir"])
        name = job["collection"]
        version = library.version(name)
        index = library.load_index(name)
        if index is None:
            _send({"kind": "error", "message": f"Collection {name!r} has no documents to check against."})
            return 0
        if job.get("one") is not None:  # one statement as typed (the Verify page's), read like a manuscript's
            from rag_core.citations.manuscript import check_one_statement

            one = job["one"]
            row = check_one_statement(one["text"], index, documents=library.documents(name),
                                      sources=one.get("sources"), context=int(one.get("context", 300)),
                                      top=job["top"], cross_encoder_model=job["cross_encoder_model"],
                                      back_matter=job.get("back_matter", True))
            _send({"kind": "done", "version": version, "rows": [row.to_dict()],
                   "checks": [row.check.to_dict() if row.check is not None else None]})
            return 0
        statements = [Statement(**{**s, "citations": [Citation(**c) for c in s.get("citations") or []]})
                      for s in job["statements"]]
        rows = check_statements(statements, index, documents=library.documents(name), top=job["top"],
                                cross_encoder_model=job["cross_encoder_model"],
                                back_matter=job.get("back_matter", True),
                                progress=lambda done, total, _: _send({"kind": "progress", "done": done,
                                                                       "total": total}))
        _send({"kind": "done", "version": version, "rows": [row.to_dict() for row in rows],
               "checks": [row.check.to_dict() if row.check is not None else None for row in rows]})
    except MemoryError:
        _send({"kind": "error", "message": f"The check needed more than {job['memory_mb']:,} MiB of memory; "
                                           "check fewer statements at once."})
    except RagCoreError as exc:
        _send({"kind": "error", "message": str(exc)})
    return 0


def check_in_worker(
    data_dir: str | os.PathLike,
    collection: str,
    statements: Sequence,
    *,
    top: int = 3,
    cross_encoder_model: str,
    progress: Callable[[int, int], None] | None = None,
    seconds_base: float = CHECK_SECONDS_BASE,
    seconds_per_statement: float = CHECK_SECONDS_PER_STATEMENT,
    memory_mb: int = CHECK_MEMORY_MB,
    back_matter: bool = True,
) -> tuple[list[dict], list[dict | None], str | None]:
    """Check ``statements`` against collection ``collection`` of the library at ``data_dir`` in a
    child process; returns ``(rows, checks, version)`` as :meth:`CheckRow.to_dict` and
    :meth:`CitationCheck.to_dict` give them, and the collection version checked.
    :class:`CheckWorkerError` when it runs past its budget, out of memory, or stops.
    ``back_matter=False``: nothing is looked for in reference lists and other back matter."""
    job = {"data_dir": str(data_dir), "collection": collection, "top": top, "memory_mb": memory_mb,
           "cross_encoder_model": cross_encoder_model, "statements": [asdict(s) for s in statements],
           "back_matter": bool(back_matter)}
    return _run(job, seconds_base + seconds_per_statement * len(statements), len(statements), progress)


def check_one_in_worker(
    data_dir: str | os.PathLike,
    collection: str,
    text: str,
    *,
    sources: Sequence[str] | None = None,
    context: int = 300,
    top: int = 5,
    cross_encoder_model: str,
    seconds: float = CHECK_SECONDS_BASE + CHECK_SECONDS_PER_STATEMENT,
    memory_mb: int = CHECK_MEMORY_MB,
    back_matter: bool = True,
) -> tuple[dict, dict | None, str | None]:
    """One statement as typed (:func:`rag_core.citations.manuscript.check_one_statement`) checked in a
    child process, so a long check never holds the app's server; returns ``(row, check, version)``.
    :class:`CheckWorkerError` past ``seconds``, out of memory, or when it stops.
    ``back_matter=False``: nothing is looked for in reference lists and other back matter."""
    job = {"data_dir": str(data_dir), "collection": collection, "top": top, "memory_mb": memory_mb,
           "cross_encoder_model": cross_encoder_model, "statements": [], "back_matter": bool(back_matter),
           "one": {"text": text, "sources": list(sources) if sources else None, "context": context}}
    rows, checks, version = _run(job, seconds, 1, None)
    return rows[0], checks[0], version


def _run(job: dict, budget: float, count: int, progress) -> tuple[list[dict], list[dict | None], str | None]:
    """The child started on ``job``, read until it answers or runs past ``budget`` seconds."""
    package_root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    what = "the statement" if job.get("one") is not None else f"{count} statements"
    child = subprocess.Popen([sys.executable, "-m", "rag_core.check_worker"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, close_fds=True)
    started = time.monotonic()
    try:
        child.stdin.write(json.dumps(job).encode("utf-8") + b"\n")
        child.stdin.close()
        buffer = b""
        while True:
            left = started + budget - time.monotonic()
            if left <= 0:
                raise CheckWorkerError(f"The check of {what} took longer than its budget ({budget:.0f} s) and was "
                                       "stopped; " + ("check a shorter statement." if job.get("one") is not None
                                                      else "check fewer statements at once."))
            if not wait([child.stdout], timeout=min(left, 1.0)):
                continue
            block = os.read(child.stdout.fileno(), 1 << 20)
            if not block:
                raise CheckWorkerError(f"The check stopped before it finished (exit code {child.wait(5)}); it may "
                                       "have run out of memory. Check fewer statements at once.")
            buffer += block
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                message = json.loads(line)
                if message["kind"] == "progress":
                    if progress is not None:
                        progress(message["done"], message["total"])
                elif message["kind"] == "done":
                    return message["rows"], message["checks"], message.get("version")
                elif message["kind"] == "error":
                    raise CheckWorkerError(message["message"])
    except (OSError, ValueError) as exc:
        raise CheckWorkerError(f"The check could not run ({type(exc).__name__}: {exc}).") from None
    finally:
        end_child(child)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(serve())
