"""The learned query head: fitting end to end, the shipped artifact and its card, offline
loading, and plain query vectors (said) when a head is missing or damaged."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket

import numpy as np
import pytest

from rag_core.models.query_head import (
    CARD_FILE,
    HEAD_FILE,
    TRAINED_DIR,
    QueryHead,
    QueryHeadError,
    forget_query_heads,
    load_query_head,
    query_head_status,
    save_query_head,
)
from rag_core.settings import DEFAULT_EMBEDDING_MODEL, QUERY_HEAD_ENV

SHIPPED = "minilm-claims-query-head-v1"


@pytest.fixture(autouse=True)
def _fresh_heads(monkeypatch):
    monkeypatch.delenv(QUERY_HEAD_ENV, raising=False)
    forget_query_heads()
    yield
    forget_query_heads()


def _tiny_head(folder, dim=384, seed=1, blend=0.5):
    rng = np.random.default_rng(seed)
    w = (0.05 * rng.standard_normal((dim, dim))).astype(np.float32)
    b = (0.01 * rng.standard_normal(dim)).astype(np.float32)
    card = save_query_head(folder, w, b, {"name": "tiny", "base_model": DEFAULT_EMBEDDING_MODEL,
                                          "settings": {"blend": blend}})
    return w, b, card


def test_fit_on_a_tiny_slice_end_to_end(tmp_path):
    """Real claims and abstracts, real embeddings, a few steps: the loss falls, the head ranks its
    training positives no worse, and it round-trips through safetensors and its card."""
    from rag_core.models.embedding import encode_passages
    from rag_core.models.loading import load_bi_encoder
    from rag_core.models.training.claims import read_checkcovid
    from rag_core.models.training.query_head import FitSettings, TrainingSet, fit_query_head

    try:
        docs = [d for d in read_checkcovid(split="train") if d.label != "nei"][:40]
    except FileNotFoundError:
        pytest.skip("no claims folder here")
    abstracts = list(dict.fromkeys(" ".join(d.sentences) for d in docs))
    model = load_bi_encoder()
    pool = encode_passages(model, abstracts)
    queries = encode_passages(model, [d.claim for d in docs])
    positives = [[abstracts.index(" ".join(d.sentences))] for d in docs]
    settings = FitSettings(steps=40, lr=5e-3, batch=64, seed=0)
    w, b = fit_query_head([TrainingSet("checkcovid", pool, queries, positives)], settings)
    assert settings.log[-1]["loss"] < settings.log[0]["loss"]

    def mrr(q):
        ranks = [(np.argsort(-(pool @ v)) == p[0]).nonzero()[0][0] + 1 for v, p in zip(q, positives, strict=True)]
        return float(np.mean([1 / r for r in ranks]))

    head = QueryHead("tiny", w, b, 1.0, DEFAULT_EMBEDDING_MODEL, "")
    assert mrr(head.apply(queries)) >= mrr(queries)
    save_query_head(tmp_path / "tiny", w, b, {"name": "tiny", "settings": {"blend": 1.0}})
    loaded = load_query_head(tmp_path / "tiny")
    np.testing.assert_allclose(loaded.apply(queries), head.apply(queries), atol=1e-6)
    assert np.allclose(np.linalg.norm(loaded.apply(queries), axis=1), 1.0, atol=1e-5)


def test_the_shipped_head_matches_its_card():
    folder = TRAINED_DIR / SHIPPED
    card = json.loads((folder / CARD_FILE).read_text(encoding="utf-8"))
    data = (folder / HEAD_FILE).read_bytes()
    assert hashlib.sha256(data).hexdigest() == card["file"]["sha256"]
    assert len(data) == card["file"]["bytes"] < 10_000_000
    head = load_query_head(SHIPPED)
    assert head.dimension == 384 and head.fits(DEFAULT_EMBEDDING_MODEL) and not head.fits("other/model")
    assert 0 < head.blend <= 1 and head.blend == card["settings"]["blend"]
    assert "seed" in card["settings"] and card["figures"]["dev_head"] and card["figures"]["dev_plain"]
    assert "non-commercial" in card["licence_note"].lower()
    datasets = {d["dataset"] for d in card["data"]}
    assert {"scifact", "checkcovid", "healthver", "covidfact", "climatefever"} <= datasets
    for entry in card["data"]:
        assert len(entry["sha256"]) == 64 and entry["licence"]
    assert "test" not in " ".join(d["file"] for d in card["data"])  # never SciFact test nor ArguAna
    assert not any("arguana" in d["file"] for d in card["data"])


def test_the_card_checksums_are_the_shared_files(repo_root):
    card = json.loads((TRAINED_DIR / SHIPPED / CARD_FILE).read_text(encoding="utf-8"))
    base = repo_root.parent
    for entry in card["data"]:
        path = base / entry["file"]
        if not path.is_file():
            pytest.skip("the shared data is not beside this checkout")
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"], entry["file"]


def test_loading_is_offline_and_used_by_the_index(monkeypatch, worked_example_index):
    from rag_core.models.embedding import encode_query
    from rag_core.models.loading import load_bi_encoder

    query = "zero-noise extrapolation of quantum circuits"
    plain = encode_query(load_bi_encoder(), query)

    def no_network(*args, **kwargs):
        raise OSError("network used")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setenv(QUERY_HEAD_ENV, SHIPPED)
    head = load_query_head(SHIPPED)
    worked_example_index._query_vector = None
    vector = worked_example_index.query_vector(query)
    np.testing.assert_allclose(vector, head.apply(plain), atol=1e-5)
    assert not np.allclose(vector, plain, atol=1e-3)
    monkeypatch.setenv(QUERY_HEAD_ENV, "none")
    np.testing.assert_allclose(worked_example_index.query_vector(query), plain, atol=1e-6)


def test_hybrid_rows_say_the_query_encoding(monkeypatch, worked_example_index):
    from rag_core import search

    monkeypatch.setenv(QUERY_HEAD_ENV, "none")
    rows = search("error mitigation", worked_example_index, top=2)
    assert rows[0]["query_encoder"] == "all-MiniLM-L6-v2" and "query head" not in rows[0]["reranker_detail"]
    monkeypatch.setenv(QUERY_HEAD_ENV, SHIPPED)
    rows = search("error mitigation", worked_example_index, top=2)
    assert rows[0]["query_encoder"] == f"all-MiniLM-L6-v2 + query head {SHIPPED}"
    assert f"query head {SHIPPED}" in rows[0]["reranker_detail"]


@pytest.mark.parametrize("damage", ["missing", "flipped", "card"])
def test_a_missing_or_damaged_head_gives_a_clear_message_and_plain_vectors(tmp_path, monkeypatch, damage, caplog,
                                                                           worked_example_index):
    folder = tmp_path / "head"
    _tiny_head(folder)
    if damage == "missing":
        (folder / HEAD_FILE).unlink()
        expected = f"no {HEAD_FILE}"
    elif damage == "flipped":
        data = bytearray((folder / HEAD_FILE).read_bytes())
        data[-5] ^= 0xFF
        (folder / HEAD_FILE).write_bytes(bytes(data))
        expected = "damaged or changed"
    else:
        (folder / CARD_FILE).write_text("{not json", encoding="utf-8")
        expected = "cannot be read"
    with pytest.raises(QueryHeadError, match=expected):
        load_query_head(folder)
    status = query_head_status(str(folder))
    assert status.head is None and expected in status.detail and "plain query embeddings" in status.detail
    assert any(expected in r.getMessage() for r in caplog.records)
    monkeypatch.setenv(QUERY_HEAD_ENV, str(folder))
    from rag_core.models.embedding import encode_query
    from rag_core.models.loading import load_bi_encoder

    worked_example_index._query_vector = None
    np.testing.assert_allclose(worked_example_index.query_vector("quantum noise"),
                               encode_query(load_bi_encoder(), "quantum noise"), atol=1e-6)


def test_a_head_for_another_model_is_not_applied(tmp_path, monkeypatch):
    from rag_core.models.query_head import active_query_head

    folder = tmp_path / "other"
    rng = np.random.default_rng(0)
    save_query_head(folder, rng.standard_normal((8, 8)), np.zeros(8), {"name": "other", "base_model": "x/y"})
    monkeypatch.setenv(QUERY_HEAD_ENV, str(folder))
    assert active_query_head(DEFAULT_EMBEDDING_MODEL) is None
    assert active_query_head("x/y") is not None
    shutil.rmtree(folder)


def test_the_cli_names_the_head_and_refuses_it_outside_dense_and_hybrid(run_cli, tmp_path):
    done = run_cli("search", "papers", "query", "--mode", "tfidf", "--query-head", SHIPPED, data_dir=tmp_path)
    assert done.returncode == 2 and "--query-head applies to --mode dense and hybrid only" in done.stderr
    done = run_cli("models", "--json", env={QUERY_HEAD_ENV: SHIPPED})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)["query_head"]
    assert report["used"] == SHIPPED and SHIPPED in report["detail"]
