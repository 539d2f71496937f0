"""Both backends build the embedding status the same way: a running embedder's progress, and a
run that died (killed, or the app restarted) reported as interrupted, so the app resumes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rag_core.collections.store import open_store
from tests.support import REPO

EMBEDDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from rag_core.collections.store import open_store
    store = open_store(sys.argv[1])
    with store.embedding_slot("c") as mine:
        assert mine
        store.write_embedding_progress("c", {"running": True, "done": 2, "total": 3, "started": time.time(),
                                             "rate": 4.0})
        Path(sys.argv[2]).write_text("embedding")
        time.sleep(600)  # the test kills us here, as a crash or a restart of the app would
""")


@pytest.fixture()
def store(store_location):
    store = open_store(store_location)
    store.create("c", {"chunk_size": 1200, "overlap": 200, "encoder": "torch"})
    documents = [{"doc_id": "d1", "source": "d1.pdf", "sha256": "1" * 64, "pages": 1, "chunks": 3}]
    chunks = [{"text": f"passage {i} about ultralight dark matter", "source": "d1.pdf", "doc_id": "d1"}
              for i in range(3)]
    with store.writing("c"):
        store.commit("c", documents=documents, chunks=chunks, embeddings=None, dense_mask=None, new_files={})
    yield store
    store.close()


def test_a_killed_embedder_is_reported_as_interrupted_on_both_backends(store, store_location, tmp_path):
    before = store.embedding_status("c")
    assert (before.done, before.total, before.running, before.interrupted) == (0, 3, False, False)
    flag = tmp_path / "embedding"
    child = subprocess.Popen([sys.executable, "-c", EMBEDDER, store_location, str(flag)], stderr=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.time() + 120
        while not flag.exists():
            assert child.poll() is None, child.stderr.read()
            assert time.time() < deadline, "the embedder never started"
            time.sleep(0.1)
        running = store.embedding_status("c")
        # computed, not yet written: the bar moves, searches have no vector yet
        assert (running.running, running.done, running.written, running.rate) == (True, 2, 0, 4.0)
        assert not running.interrupted and not running.complete
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    deadline = time.time() + 30  # PostgreSQL ends the dead client's session (and its slot) at once, or nearly
    while (status := store.embedding_status("c")).running and time.time() < deadline:
        time.sleep(0.2)
    assert (status.running, status.interrupted, status.done, status.written, status.rate) == (False, True, 0, 0, None)
    assert status.started is not None and not status.complete
    # the next embedder holding the slot does not bring the dead run's record back to life
    with store.embedding_slot("c") as mine:
        assert mine
        resumed = store.embedding_status("c")
        assert not resumed.running and resumed.interrupted and resumed.done == 0
