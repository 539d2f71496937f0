from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.models.loading import (
    ModelUnavailableError,
    bundled_embedding_model_path,
    hub_reachable,
    load_bi_encoder,
    load_cross_encoder,
    resolve_model,
)
from rag_core.settings import DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_EMBEDDING_MODEL


def test_default_bi_encoder_resolves_to_the_bundled_folder():
    source = resolve_model(DEFAULT_EMBEDDING_MODEL)
    assert source.origin == "bundled"
    assert Path(source.location) == bundled_embedding_model_path()
    assert (Path(source.location) / "model.safetensors").is_file()


def test_offline_never_waits_on_the_hub(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_reachable.cache_clear()
    assert hub_reachable() is False
    source = resolve_model(DEFAULT_CROSS_ENCODER_MODEL)
    assert not source.available and source.origin == "unavailable"
    assert "offline" in source.detail
    with pytest.raises(ModelUnavailableError, match="local cross-encoder folder"):
        load_cross_encoder(DEFAULT_CROSS_ENCODER_MODEL)
    hub_reachable.cache_clear()


def test_local_folders(tmp_path, tiny_cross_encoder):
    assert resolve_model(str(tiny_cross_encoder)).origin == "local_folder"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no config.json" in resolve_model(str(empty)).detail
    assert not resolve_model(str(tmp_path / "missing")).available


def test_bi_encoder_loads_once_per_process():
    first = load_bi_encoder()
    assert load_bi_encoder(DEFAULT_EMBEDDING_MODEL) is first
    vector = first.encode(["negative null energy"], normalize_embeddings=True)
    assert vector.shape == (1, 384)
