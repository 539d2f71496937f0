"""The app's manuscript check in a child process: the same rows as in-process, and a message (never a
hang or a traceback) when the check runs past its time or memory budget or cannot run."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import pytest

from rag_core.check_worker import CheckWorkerError, check_in_worker
from rag_core.citations.manuscript import check_statements, manuscript_from_text
from rag_core.settings import CHECK_HOLD_ENV, DEFAULT_CROSS_ENCODER_MODEL


def draft(library) -> str:
    """A verbatim quote from the first document, the same cited by a marker, and a made-up claim."""
    index = library.load_index("papers")
    words = " ".join(index.chunks[3]["text"].split()).split()
    quote = " ".join(words[5:17])
    return (f"As written, \u201c{quote}\u201d.\n\nThe sky over the laboratory was green on Tuesdays "
            f"(Nobody et al., 2019).\n")


def test_the_worker_gives_the_rows_of_an_in_process_check(paper_library):
    statements = manuscript_from_text(draft(paper_library)).statements()
    assert len(statements) == 2
    seen = []
    rows, checks, version = check_in_worker(paper_library.root, "papers", statements,
                                            cross_encoder_model=DEFAULT_CROSS_ENCODER_MODEL,
                                            progress=lambda done, total: seen.append((done, total)))
    direct = check_statements(statements, paper_library.load_index("papers"),
                              documents=paper_library.documents("papers"))
    assert version == paper_library.version("papers")
    assert [r["verdict"] for r in rows] == [r.verdict for r in direct]
    assert rows[0]["verdict"] == "verbatim" and rows[1]["verdict"] != "verbatim"
    # as the page keeps them: the same JSON as the in-process rows
    assert rows == json.loads(json.dumps([r.to_dict() for r in direct]))
    assert [c is None for c in checks] == [r.check is None for r in direct]
    assert seen and seen[-1] == (2, 2)


def test_past_its_time_budget_the_check_is_stopped_with_a_message(paper_library, tmp_path, monkeypatch):
    """A worker that cannot finish (it waits, checking nothing, until it is stopped) on any machine:
    only its budget ends it, so the verdict never depends on how fast the machine is."""
    hold = tmp_path / "worker.pid"
    monkeypatch.setenv(CHECK_HOLD_ENV, str(hold))
    children = []
    popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        children.append(popen(*args, **kwargs))
        return children[-1]

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    statements = manuscript_from_text(draft(paper_library)).statements()
    with ThreadPoolExecutor(max_workers=1) as pool:
        checking = pool.submit(check_in_worker, paper_library.root, "papers", statements,
                               cross_encoder_model=DEFAULT_CROSS_ENCODER_MODEL,
                               seconds_base=0.5, seconds_per_statement=0.0)
        try:  # a safety net for a budget not kept: a kept one stops the check within a second or two
            error = checking.exception(timeout=60)
        except FutureTimeout:
            for child in children:
                child.kill()
            pytest.fail("the check ran on for 60 s past its budget of 0.5 s")
    assert isinstance(error, CheckWorkerError), error
    assert "longer than its budget" in str(error)
    assert len(children) == 1 and children[0].poll() is not None  # the worker was stopped


def test_out_of_memory_the_check_stops_with_a_message(paper_library):
    statements = manuscript_from_text(draft(paper_library)).statements()
    with pytest.raises(CheckWorkerError, match="memory"):
        check_in_worker(paper_library.root, "papers", statements, cross_encoder_model=DEFAULT_CROSS_ENCODER_MODEL,
                        memory_mb=64)


def test_a_collection_without_documents_is_a_message(tmp_path):
    statements = manuscript_from_text("As written, \u201cone two three four five\u201d.\n").statements()
    with pytest.raises(CheckWorkerError) as caught:
        check_in_worker(tmp_path / "data", "missing", statements, cross_encoder_model=DEFAULT_CROSS_ENCODER_MODEL)
    assert "missing" in str(caught.value) and "Traceback" not in str(caught.value)


def test_one_statement_in_the_worker_gives_the_row_of_an_in_process_check(paper_library):
    """The Verify page's one statement (issue 27 row 20): checked in a child, the same row as in-process."""
    from rag_core.check_worker import check_one_in_worker
    from rag_core.citations.manuscript import check_one_statement

    text = draft(paper_library).split("\n\n")[0]
    row, check, version = check_one_in_worker(paper_library.root, "papers", text,
                                              cross_encoder_model=DEFAULT_CROSS_ENCODER_MODEL)
    direct = check_one_statement(text, paper_library.load_index("papers"),
                                 documents=paper_library.documents("papers"))
    assert version == paper_library.version("papers")
    assert row == json.loads(json.dumps(direct.to_dict())) and row["verdict"] in ("verbatim", "near_verbatim")
    assert check == json.loads(json.dumps(direct.check.to_dict()))


def test_one_statement_past_its_budget_is_stopped_with_a_message(paper_library, tmp_path, monkeypatch):
    """As the manuscript's: a worker that waits until it is stopped, so only the budget ends it."""
    from rag_core.check_worker import check_one_in_worker

    monkeypatch.setenv(CHECK_HOLD_ENV, str(tmp_path / "worker.pid"))
    with ThreadPoolExecutor(max_workers=1) as pool:
        checking = pool.submit(check_one_in_worker, paper_library.root, "papers", "dense retrieval works",
                               cross_encoder_model=DEFAULT_CROSS_ENCODER_MODEL, seconds=0.5)
        try:
            error = checking.exception(timeout=60)
        except FutureTimeout:
            pid = int((tmp_path / "worker.pid").read_text())
            subprocess.run(["kill", str(pid)], check=False)
            pytest.fail("the check ran on for 60 s past its budget of 0.5 s")
    assert isinstance(error, CheckWorkerError), error
    assert "took longer than its budget" in str(error) and "shorter statement" in str(error)
