"""What the app says about a collection's embeddings (embedding_view), and a background run that says it is
running from its start (the status after an upload never claims "no embedding yet" while one works)."""

from __future__ import annotations

import threading

from rag_core.collections.ingest import embedding as embedding_module
from rag_core.collections.ingest.embedding import embedding_view
from rag_core.collections.store.base import EmbeddingStatus


def test_every_state_is_told_truthfully():
    ready = embedding_view(EmbeddingStatus(done=596, total=596))
    assert ready.kind == "ready" and "all 596 passages are ready" in ready.text and ready.fraction == 1.0
    running = embedding_view(EmbeddingStatus(done=100, total=596, running=True, rate=10.0))
    assert running.kind == "running" and "100 of 596" in running.text and "about 50 s left" in running.text
    assert abs(running.fraction - 100 / 596) < 1e-9
    starting = embedding_view(EmbeddingStatus(done=0, total=596), starting=True)
    assert starting.kind == "running" and "loading the embedding model" in starting.text
    assert "no embedding yet" not in starting.text
    waiting = embedding_view(EmbeddingStatus(done=0, total=596))
    assert waiting.kind == "waiting" and "596 of 596 passages have no embedding yet" in waiting.text
    failed = embedding_view(EmbeddingStatus(done=5, total=596, error="OSError: disk full"))
    assert failed.kind == "error" and "disk full" in failed.text


def test_a_run_reports_running_before_the_model_has_loaded(tmp_path, monkeypatch):
    from rag_core.collections.library import Library

    lib = Library(tmp_path)
    lib.add_pdfs("c", [("a.pdf", _tiny_pdf())], compute_embeddings=False)
    assert not lib.embedding_status("c").complete
    loading, release = threading.Event(), threading.Event()

    def slow_model(*args, **kwargs):  # the model loads for as long as the test wants
        loading.set()
        release.wait(60)
        raise RuntimeError("no model in this test")

    monkeypatch.setattr("rag_core.models.loading.load_bi_encoder", slow_model)
    assert lib.embed_in_background("c")
    assert loading.wait(60)
    status = lib.embedding_status("c")
    assert status.running, "the status says running while the model loads"
    assert lib.embedding_in_background("c")
    assert embedding_view(status, starting=True).kind == "running"
    release.set()
    embedding_module.wait_for_background_embedding(lib.store, "c", timeout=600)  # a safety net (issue 30)
    assert not lib.embedding_in_background("c")
    after = lib.embedding_status("c")
    assert not after.running and "no model in this test" in (after.error or "")
    assert embedding_view(after).kind == "error"


def _tiny_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(0, 6, "Quokka burrows were counted along every transect of the survey on the island. " * 8)
    return bytes(pdf.output())
